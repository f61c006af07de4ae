"""The cues the synthetic tasks' labels rest on, derived from the synthetic language: polarity words and idioms,
declared synonyms (:class:`CueVocabulary`), and the sentence helpers every example generator shares (drawing a
sentence, finding its planted expressions and content words, replacing them).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence, TypeVar

import numpy as np

from spanft.data.synthetic.language import SyntheticLanguage
from spanft.errors import SpanftError

T = TypeVar("T")

PUNCT = frozenset(".,;:!?\"'()")
CONTENT_PREFIXES = ("NN", "VB", "JJ", "RB")
# Auxiliaries and negators carry a verb or adverb tag but are the grammar's own words: never swapped or replaced.
AUXILIARIES = frozenset({"was", "were", "is", "are", "has", "have", "be"})
NEGATORS = ("not", "never")
FIXED_WORDS = AUXILIARIES | frozenset(NEGATORS)
MWE_KINDS_POLAR = ("idiom", "collocation")


@dataclass(frozen=True)
class Sentence:
    words: list[str]
    pos: list[str]


class CueVocabulary:
    """Cue vocabularies derived deterministically from a language: polarity words and idioms, synonyms."""

    def __init__(self, language: SyntheticLanguage) -> None:
        self.language = language
        by_tag = language.words_by_tag
        in_mwes = {w.lower() for words, _ in language.mwes for w in words}
        # Polarity adjectives: lower-case, outside every MWE, past the 30 most frequent (which fill sentences).
        adjectives = [w for w in by_tag.get("JJ", []) if w.islower() and w not in in_mwes][30:70]
        if len(adjectives) < 4:
            adjectives = _open_class_words(by_tag)[:40]
        self.positive_words = frozenset(adjectives[0::2])
        self.negative_words = frozenset(adjectives[1::2])
        # Polarity idioms: the adverbial ones (they start with a preposition), so they can close a clause.
        prepositions = set(by_tag.get("IN", []))
        adverbial = [lower_words(words) for words, kind in language.mwes if kind == "idiom" and words[0] in prepositions]
        self.positive_mwes = adverbial[0::2][:12]
        self.negative_mwes = adverbial[1::2][:12]
        self.mwe_set = {lower_words(words) for words, _ in language.mwes}
        self.synonyms = _word_synonyms(by_tag)
        self.mwe_synonyms = _mwe_synonyms(language.mwes)
        self.words_by_tag = {tag: list(words) for tag, words in by_tag.items() if words}
        self.nouns = frozenset(by_tag.get("NN", [])) | frozenset(by_tag.get("NNS", []))


def lower_words(words: Sequence[str]) -> tuple[str, ...]:
    """The words lower-cased, as a tuple (how planted expressions are matched)."""
    return tuple(w.lower() for w in words)


def _open_class_words(by_tag: dict[str, list[str]]) -> list[str]:
    return [w for tag, words in sorted(by_tag.items()) if tag.startswith(CONTENT_PREFIXES) for w in words]


def _word_synonyms(by_tag: dict[str, list[str]]) -> dict[str, str]:
    """Words 2k and 2k+1 of each content tag's 200 most frequent words are declared synonyms."""
    synonyms: dict[str, str] = {}
    for tag, words in sorted(by_tag.items()):
        if not tag.startswith(CONTENT_PREFIXES):
            continue
        top = [w for w in words[:200] if w not in synonyms and w not in FIXED_WORDS]
        for first, second in zip(top[0::2], top[1::2]):
            synonyms.setdefault(first, second)
            synonyms.setdefault(second, first)
    return synonyms


def _mwe_synonyms(mwes: Sequence[tuple[tuple[str, ...], str]]) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Consecutive idioms/collocations of the same kind are declared paraphrases of each other."""
    synonyms: dict[tuple[str, ...], tuple[str, ...]] = {}
    for kind in MWE_KINDS_POLAR:
        group = [lower_words(words) for words, k in mwes if k == kind]
        for first, second in zip(group[0::2], group[1::2]):
            synonyms[first], synonyms[second] = second, first
    return synonyms


# ---------------------------------------------------------------- sentence helpers


def draw_sentence(lex: CueVocabulary, rng: np.random.Generator, min_words: int = 3) -> Sentence:
    """A sentence of the language with at least ``min_words`` words besides punctuation."""
    for _ in range(100):
        tokens = lex.language.sentence(rng)
        if sum(t.word not in PUNCT for t in tokens) >= min_words:
            return Sentence([t.word for t in tokens], [t.pos for t in tokens])
    raise SpanftError(f"the synthetic language gave no sentence with {min_words} words in 100 tries")


def without_final_punct(words: Sequence[str]) -> list[str]:
    """Words without the final punctuation."""
    return list(words[:-1]) if words and words[-1] in PUNCT else list(words)


def capitalize(words: list[str]) -> list[str]:
    """The words with the first one capitalised."""
    if words and words[0][:1].islower():
        words = [words[0][:1].upper() + words[0][1:], *words[1:]]
    return words


def content_positions(sentence: Sentence) -> list[int]:
    """Positions of the content words (nouns, verbs, adjectives, adverbs) other than auxiliaries and negators."""
    return [
        i for i, (word, tag) in enumerate(zip(sentence.words, sentence.pos))
        if tag.startswith(CONTENT_PREFIXES) and word not in PUNCT and word.lower() not in FIXED_WORDS
    ]


def find_mwes(lex: CueVocabulary, words: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of every planted MWE occurring in ``words`` (lower-cased match)."""
    lowered = lower_words(words)
    found = []
    for n in range(2, 6):
        for start in range(len(words) - n + 1):
            if lowered[start : start + n] in lex.mwe_set:
                found.append((start, start + n))
    return found


def sub_span(rng: np.random.Generator, words: Sequence[str], shortest: int = 3, longest: int = 8) -> list[str]:
    """A random contiguous run of ``shortest`` to ``longest`` words, final punctuation excluded."""
    body = without_final_punct(words)
    length = int(rng.integers(min(shortest, len(body)), min(longest, len(body)) + 1))
    start = int(rng.integers(0, len(body) - length + 1))
    return list(body[start : start + length])


def choice(rng: np.random.Generator, items: Sequence[T]) -> T:
    """One of ``items``, drawn uniformly."""
    return items[int(rng.integers(len(items)))]


def other_word(lex: CueVocabulary, rng: np.random.Generator, tag: str, avoid: set[str]) -> str | None:
    """A frequent word of ``tag`` outside ``avoid`` and the fixed words; None when 20 draws find none."""
    pool = lex.words_by_tag.get(tag, [])[:300]
    for _ in range(20):
        if not pool:
            return None
        word = choice(rng, pool)
        if word not in avoid and word not in FIXED_WORDS:
            return word
    return None


def replace_content(
    lex: CueVocabulary, rng: np.random.Generator, sentence: Sentence, count: int, synonym: bool
) -> tuple[list[str], int]:
    """Replace up to ``count`` content words by a synonym (or by a same-tag non-synonym); return words, replaced."""
    words = list(sentence.words)
    positions = content_positions(sentence)
    if synonym:
        positions = [i for i in positions if words[i] in lex.synonyms]
    replaced = 0
    for i in rng.permutation(positions)[:count] if positions else []:
        word = words[i]
        if synonym:
            new = lex.synonyms[word]
        else:
            new = other_word(lex, rng, sentence.pos[i], {word, lex.synonyms.get(word, word)})
            if new is None:
                continue
        words[i] = new[:1].upper() + new[1:] if i == 0 else new
        replaced += 1
    return words, replaced


@functools.lru_cache(maxsize=4)
def _cue_vocabulary_cached(language: SyntheticLanguage) -> CueVocabulary:
    return CueVocabulary(language)


def cue_vocabulary(language: SyntheticLanguage) -> CueVocabulary:
    """The cue vocabulary of ``language``, built once per language object (when it is hashable)."""
    try:
        return _cue_vocabulary_cached(language)
    except TypeError:  # an unhashable language object
        return CueVocabulary(language)
