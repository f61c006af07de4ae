"""Synthetic stand-ins for every registry task, in each task's exact schema, built from the synthetic language.

Sentences come from :class:`spanft.data.language.SyntheticLanguage` (the same language as the synthetic corpus, so
the n-gram dictionary counted on that corpus matches the planted multi-word expressions here). Labels follow
lexical and structural cues a small model can learn; where natural the cue is a multi-word expression (the
point of span fine-tuning) next to a plain single-word cue (so a baseline learns too):

- sst2: polarity adjectives (single words) and polarity idioms/collocations (MWEs) inserted; the label is
  the majority polarity of the inserted cues.
- cola: acceptable = the generated sentence; unacceptable = one corruption: a planted MWE's words
  reversed, a subject-verb agreement error (was/were, is/are, has/have), a doubled function word, or a
  determiner swapped with the word after it.
- mrpc / qqp: paraphrase = synonym substitution (declared word pairs and MWE pairs of the language);
  non-paraphrase = a content word replaced by a non-synonym, or a different sentence sharing a few words.
- stsb: graded overlap: a share of the content words replaced; the score is 5 x the share kept.
- mnli / snli / rte / wnli: entailment = a contiguous sub-span of the premise; contradiction = that
  sub-span with a negator after its first verb; neutral = the sub-span plus new content from another
  sentence (two-class tasks: entailment vs the other two). MNLI's mismatched splits (and half of AX) take
  two-sentence premises, a genre the training split never shows.
- qnli: (question, sentence): the question is a sub-span of the sentence (entailment) or of another
  sentence that shares a word with it (not_entailment), ending in "?".
- conll2003: the language's own NER tags (IOB2) over planted names.

Unlabeled test splits get the same generator with the label withheld. Every split draws from its own
generator seeded by (seed, task, split), so sizes of one split never change another's examples.
"""

from __future__ import annotations

import functools
import logging
import zlib
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np
from tqdm import tqdm

from spanft.data.registry import TaskSpec
from spanft.errors import SpanftError

log = logging.getLogger("spanft")

PUNCT = frozenset(".,;:!?\"'()")
CONTENT_PREFIXES = ("NN", "VB", "JJ", "RB")
MWE_KINDS_POLAR = ("idiom", "collocation")


@functools.lru_cache(maxsize=4)
def synthetic_language(seed: int = 0):
    """The shared synthetic language (built once per seed)."""
    from spanft.data.language import SyntheticLanguage

    return SyntheticLanguage(seed=seed)


@dataclass(frozen=True)
class Sentence:
    words: list[str]
    pos: list[str]


class Lexicon:
    """Cue vocabularies derived deterministically from a language: polarity words/MWEs, synonyms, negators."""

    def __init__(self, language) -> None:
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
        adverbial = [_lower(words) for words, kind in language.mwes if kind == "idiom" and words[0] in prepositions]
        self.positive_mwes = adverbial[0::2][:12]
        self.negative_mwes = adverbial[1::2][:12]
        self.mwe_set = {_lower(words) for words, _ in language.mwes}
        self.synonyms = _word_synonyms(by_tag)
        self.mwe_synonyms = _mwe_synonyms(language.mwes)
        vocabulary = {w for words in by_tag.values() for w in words}
        self.negators = [w for w in ("not", "never") if w in vocabulary] or ["not"]
        self.words_by_tag = {tag: list(words) for tag, words in by_tag.items() if words}
        self.nouns = frozenset(by_tag.get("NN", [])) | frozenset(by_tag.get("NNS", []))


def _lower(words: Sequence[str]) -> tuple[str, ...]:
    return tuple(w.lower() for w in words)


def _open_class_words(by_tag: dict[str, list[str]]) -> list[str]:
    return [w for tag, words in sorted(by_tag.items()) if tag.startswith(CONTENT_PREFIXES) for w in words]


def _word_synonyms(by_tag: dict[str, list[str]]) -> dict[str, str]:
    """Words 2k and 2k+1 of each content tag's 200 most frequent words are declared synonyms."""
    synonyms: dict[str, str] = {}
    for tag, words in sorted(by_tag.items()):
        if not tag.startswith(CONTENT_PREFIXES):
            continue
        top = [w for w in words[:200] if w not in synonyms]
        for first, second in zip(top[0::2], top[1::2]):
            synonyms.setdefault(first, second)
            synonyms.setdefault(second, first)
    return synonyms


def _mwe_synonyms(mwes: Sequence[tuple[tuple[str, ...], str]]) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Consecutive idioms/collocations of the same kind are declared paraphrases of each other."""
    synonyms: dict[tuple[str, ...], tuple[str, ...]] = {}
    for kind in MWE_KINDS_POLAR:
        group = [_lower(words) for words, k in mwes if k == kind]
        for first, second in zip(group[0::2], group[1::2]):
            synonyms[first], synonyms[second] = second, first
    return synonyms


# ---------------------------------------------------------------- sentence helpers


def _sentence(lex: Lexicon, rng: np.random.Generator, min_words: int = 3) -> Sentence:
    for _ in range(100):
        tokens = lex.language.sentence(rng)
        if sum(t.word not in PUNCT for t in tokens) >= min_words:
            return Sentence([t.word for t in tokens], [t.pos for t in tokens])
    raise SpanftError(f"the synthetic language gave no sentence with {min_words} words in 100 tries")


def _body(words: Sequence[str]) -> list[str]:
    """Words without the final punctuation."""
    return list(words[:-1]) if words and words[-1] in PUNCT else list(words)


def _capitalize(words: list[str]) -> list[str]:
    if words and words[0][:1].islower():
        words = [words[0][:1].upper() + words[0][1:], *words[1:]]
    return words


def _content_positions(sentence: Sentence) -> list[int]:
    return [i for i, tag in enumerate(sentence.pos) if tag.startswith(CONTENT_PREFIXES) and sentence.words[i] not in PUNCT]


def _find_mwes(lex: Lexicon, words: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of every planted MWE occurring in ``words`` (lower-cased match)."""
    lowered = _lower(words)
    found = []
    for n in range(2, 6):
        for start in range(len(words) - n + 1):
            if lowered[start : start + n] in lex.mwe_set:
                found.append((start, start + n))
    return found


def _sub_span(rng: np.random.Generator, words: Sequence[str], shortest: int = 3, longest: int = 8) -> list[str]:
    body = _body(words)
    length = int(rng.integers(min(shortest, len(body)), min(longest, len(body)) + 1))
    start = int(rng.integers(0, len(body) - length + 1))
    return list(body[start : start + length])


def _choice(rng: np.random.Generator, items: Sequence):
    return items[int(rng.integers(len(items)))]


def _other_word(lex: Lexicon, rng: np.random.Generator, tag: str, avoid: set[str]) -> str | None:
    pool = lex.words_by_tag.get(tag, [])[:300]
    for _ in range(20):
        if not pool:
            return None
        word = _choice(rng, pool)
        if word not in avoid:
            return word
    return None


def _replace_content(
    lex: Lexicon, rng: np.random.Generator, sentence: Sentence, count: int, synonym: bool
) -> tuple[list[str], int]:
    """Replace up to ``count`` content words by a synonym (or by a same-tag non-synonym); return words, replaced."""
    words = list(sentence.words)
    positions = _content_positions(sentence)
    if synonym:
        positions = [i for i in positions if words[i] in lex.synonyms]
    replaced = 0
    for i in rng.permutation(positions)[:count] if positions else []:
        word = words[i]
        if synonym:
            words[i] = lex.synonyms[word]
        else:
            other = _other_word(lex, rng, sentence.pos[i], {word, lex.synonyms.get(word, word)})
            if other is None:
                continue
            words[i] = other
        replaced += 1
    return words, replaced


# ---------------------------------------------------------------- one generator per kind of task


def _sst2(lex: Lexicon, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
    """Insert polarity cues until the label's polarity has strictly more cue occurrences than the other."""
    sentence = _sentence(lex, rng)
    words = list(sentence.words)
    cues = [label] * int(rng.integers(1, 3)) + ([1 - label] if rng.random() < 0.25 else [])
    for polarity in cues:
        words = _insert_cue(lex, rng, words, polarity)
    while True:
        counts = polarity_counts(lex, words)
        if counts[label] > counts[1 - label]:
            return [words], label
        words = _insert_cue(lex, rng, words, label)


def polarity_counts(lex: Lexicon, words: Sequence[str]) -> tuple[int, int]:
    """(negative, positive) cue occurrences in ``words``: polarity adjectives plus polarity idioms."""
    lowered = _lower(words)
    counts = [sum(w in lex.negative_words for w in lowered), sum(w in lex.positive_words for w in lowered)]
    for polarity, idioms in ((0, lex.negative_mwes), (1, lex.positive_mwes)):
        for idiom in idioms:
            n = len(idiom)
            counts[polarity] += sum(lowered[i : i + n] == idiom for i in range(len(lowered) - n + 1))
    return counts[0], counts[1]


def _insert_cue(lex: Lexicon, rng: np.random.Generator, words: list[str], polarity: int) -> list[str]:
    """An adjective before a noun (60%), else an adverbial idiom before the final punctuation."""
    words = list(words)
    idioms = lex.positive_mwes if polarity else lex.negative_mwes
    inside = {i for start, end in _find_mwes(lex, words) for i in range(start + 1, end)}
    nouns = [i for i in range(1, len(words)) if i not in inside and words[i].islower() and words[i] in lex.nouns]
    if nouns and (rng.random() < 0.6 or not idioms):
        pool = sorted(lex.positive_words if polarity else lex.negative_words)
        at = _choice(rng, nouns)
        words.insert(at, _choice(rng, pool))
    elif idioms:
        at = len(_body(words))
        words[at:at] = list(_choice(rng, idioms))
    else:
        pool = sorted(lex.positive_words if polarity else lex.negative_words)
        words.insert(int(rng.integers(1, len(words) + 1)), _choice(rng, pool))
    return words


def _cola(lex: Lexicon, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
    sentence = _sentence(lex, rng, min_words=4)
    if label == 1:
        return [sentence.words], label
    return [_corrupt(lex, rng, sentence)], label


AGREEMENT = {"was": "were", "were": "was", "is": "are", "are": "is", "has": "have", "have": "has"}
FUNCTION_TAGS = ("DT", "IN", "MD", "CC", "PRP", "PRP$", "TO")


def _corrupt(lex: Lexicon, rng: np.random.Generator, sentence: Sentence) -> list[str]:
    """One corruption, starting from a random kind and falling through to the next applicable one."""
    words = list(sentence.words)
    body = len(_body(words))
    corruptions = [
        lambda: _reverse_mwe(lex, rng, words),
        lambda: _break_agreement(words),
        lambda: _double_function_word(rng, words, sentence.pos, body),
        lambda: _swap_determiner(rng, words, sentence.pos, body),
    ]
    first = int(rng.integers(len(corruptions)))
    for k in range(len(corruptions)):
        corrupted = corruptions[(first + k) % len(corruptions)]()
        if corrupted is not None:
            return corrupted
    at = int(rng.integers(max(body - 1, 1)))
    words[at], words[at + 1] = words[at + 1], words[at]
    return words


def _reverse_mwe(lex: Lexicon, rng: np.random.Generator, words: list[str]) -> list[str] | None:
    mwes = _find_mwes(lex, words)
    if not mwes:
        return None
    start, end = _choice(rng, mwes)
    return words[:start] + words[start:end][::-1] + words[end:]


def _break_agreement(words: list[str]) -> list[str] | None:
    """was <-> were, is <-> are, has <-> have (a subject-verb agreement error)."""
    for i, word in enumerate(words):
        if word in AGREEMENT:
            return words[:i] + [AGREEMENT[word]] + words[i + 1 :]
    return None


def _double_function_word(rng: np.random.Generator, words: list[str], pos: list[str], body: int) -> list[str] | None:
    candidates = [i for i in range(body) if pos[i] in FUNCTION_TAGS]
    if not candidates:
        return None
    at = _choice(rng, candidates)
    return words[: at + 1] + [words[at].lower()] + words[at + 1 :]


def _swap_determiner(rng: np.random.Generator, words: list[str], pos: list[str], body: int) -> list[str] | None:
    """"the dog" -> "dog the"."""
    candidates = [i for i in range(body - 1) if pos[i] == "DT" and words[i + 1] not in PUNCT]
    if not candidates:
        return None
    at = _choice(rng, candidates)
    return words[:at] + [words[at + 1], words[at]] + words[at + 2 :]


def _paraphrase(question: bool) -> Callable:
    def generate(lex: Lexicon, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
        sentence = _sentence(lex, rng, min_words=4)
        if label == 1:
            second = _synonym_paraphrase(lex, rng, sentence)
        elif rng.random() < 0.5:
            second, _ = _replace_content(lex, rng, sentence, int(rng.integers(1, 3)), synonym=False)
        else:
            other = _sentence(lex, rng, min_words=4)
            second = list(other.words)
            shared = _choice(rng, _body(sentence.words))
            second.insert(int(rng.integers(len(_body(second)) + 1)), shared)
        first = list(sentence.words)
        if question:
            first, second = _as_question(first), _as_question(second)
        return [first, second], label

    return generate


def _synonym_paraphrase(lex: Lexicon, rng: np.random.Generator, sentence: Sentence) -> list[str]:
    mwes = [(s, e) for s, e in _find_mwes(lex, sentence.words) if _lower(sentence.words[s:e]) in lex.mwe_synonyms]
    words, _ = _replace_content(lex, rng, sentence, int(rng.integers(1, 3)), synonym=True)
    if mwes and rng.random() < 0.5:
        start, end = _choice(rng, mwes)
        words[start:end] = list(lex.mwe_synonyms[_lower(sentence.words[start:end])])
    return words


def _as_question(words: list[str]) -> list[str]:
    return _body(words) + ["?"]


def _stsb(lex: Lexicon, rng: np.random.Generator, label: float) -> tuple[list[list[str]], float]:
    sentence = _sentence(lex, rng, min_words=4)
    content = len(_content_positions(sentence))
    target = int(rng.integers(0, content + 1))
    words, replaced = _replace_content(lex, rng, sentence, target, synonym=False)
    score = round(5.0 * (content - replaced) / max(content, 1), 3)
    return [list(sentence.words), words], score


NLI_KINDS = ("entailment", "neutral", "contradiction")


def _nli(label_names: Sequence[str], mismatched: bool = False) -> Callable:
    """Premise/hypothesis pairs; the hypothesis kind is drawn so that classes are balanced."""

    def generate(lex: Lexicon, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
        premise = _sentence(lex, rng)
        if mismatched:
            premise = _join(premise, _sentence(lex, rng))
        name = label_names[label]
        kind = name if name in NLI_KINDS else _choice(rng, NLI_KINDS[1:])  # not_entailment
        hypothesis = _hypothesis(lex, rng, premise, kind)
        return [list(premise.words), hypothesis], label

    return generate


def _join(first: Sentence, second: Sentence) -> Sentence:
    return Sentence(first.words + second.words, first.pos + second.pos)


def _hypothesis(lex: Lexicon, rng: np.random.Generator, premise: Sentence, kind: str) -> list[str]:
    span = _sub_span(rng, premise.words)
    if kind == "contradiction":
        tags = dict(zip(premise.words, premise.pos))
        verbs = [i for i, w in enumerate(span) if tags.get(w, "").startswith("VB")]
        at = verbs[0] + 1 if verbs else int(rng.integers(1, len(span) + 1))
        span.insert(at, _choice(rng, lex.negators))
    elif kind == "neutral":
        present = {w.lower() for w in premise.words}
        extra = [w for w in _sub_span(rng, _sentence(lex, rng).words, 2, 5) if w.lower() not in present]
        span += extra or [_other_word(lex, rng, "NN", present) or "something"]
    return _capitalize(span) + ["."]


def _qnli(lex: Lexicon, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
    sentence = _sentence(lex, rng, min_words=4)
    if label == 0:  # entailment: the sentence answers the question
        source = sentence
    else:
        source = _sentence(lex, rng, min_words=4)
        shared = _choice(rng, _body(sentence.words))
        source = Sentence(source.words[:1] + [shared] + source.words[1:], source.pos[:1] + ["NN"] + source.pos[1:])
    question = _capitalize(_sub_span(rng, source.words)) + ["?"]
    return [question, list(sentence.words)], label


def _conll(lex: Lexicon, rng: np.random.Generator, label_names: Sequence[str]) -> tuple[list[list[str]], list[int]]:
    tokens = lex.language.sentence(rng)
    try:
        tags = [label_names.index(t.ner) for t in tokens]
    except ValueError:
        bad = sorted({t.ner for t in tokens} - set(label_names))
        raise SpanftError(f"synthetic language: NER tags {bad} are not in {list(label_names)}") from None
    return [[t.word for t in tokens]], tags


# ---------------------------------------------------------------- the table: task -> generator per split


def _generator(task: TaskSpec, split: str) -> Callable:
    mismatched = split in ("validation_mismatched", "test_mismatched")
    generators = {
        "sst2": _sst2,
        "cola": _cola,
        "mrpc": _paraphrase(question=False),
        "qqp": _paraphrase(question=True),
        "stsb": _stsb,
        "qnli": _qnli,
    }
    if task.name in generators:
        return generators[task.name]
    if task.is_tagging:
        return lambda lex, rng, label: _conll(lex, rng, task.label_names)
    if task.task_type == "pair" and set(task.label_names) <= set(NLI_KINDS) | {"not_entailment"}:
        return _nli(task.label_names, mismatched)
    raise SpanftError(f"task {task.name}: no synthetic generator")


def _split_rng(seed: int, task: str, split: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(task.encode()), zlib.crc32(split.encode())])


def generate_split(task: TaskSpec, split: str, size: int, seed: int = 0, language=None):
    """``size`` examples of one split as :class:`spanft.data.columns.SplitColumns` (unlabeled for test splits)."""
    from spanft.data.columns import SplitColumns, unlabeled_value

    lex = _lexicon(language if language is not None else synthetic_language(0))
    rng = _split_rng(seed, task.name, split)
    labeled = task.splits[split].labeled
    generate = _generator(task, split)
    out = SplitColumns(task, split)
    for row in tqdm(range(size), desc=f"{task.name} {split}", leave=False, disable=size < 5000):
        label = None if task.is_regression or task.is_tagging else row % task.num_labels
        if split == "ax":  # the diagnostic set mixes both genres
            generate = _nli(task.label_names, mismatched=bool(rng.random() < 0.5))
        sentences, value = generate(lex, rng, label)
        out.add(row, sentences, value if labeled else unlabeled_value(task), f"synthetic {task.name} {split} row {row}")
    _shuffle_rows(out, rng)
    return out


def _shuffle_rows(out, rng: np.random.Generator) -> None:
    """Classes were drawn round-robin for balance; shuffle so the order carries no signal (idx follows the rows)."""
    order = rng.permutation(len(out))
    out.words_a = [out.words_a[i] for i in order]
    if out.words_b:
        out.words_b = [out.words_b[i] for i in order]
    out.labels = [out.labels[i] for i in order]


@functools.lru_cache(maxsize=4)
def _lexicon_cached(language) -> Lexicon:
    return Lexicon(language)


def _lexicon(language) -> Lexicon:
    try:
        return _lexicon_cached(language)
    except TypeError:  # an unhashable language object
        return Lexicon(language)


def iter_synthetic(task: TaskSpec, sizes) -> Iterator[tuple[str, object]]:
    """``(split, examples)`` for every split of ``task`` at the sizes of a :class:`spanft.data.columns.SyntheticSizes`."""
    language = synthetic_language(sizes.language_seed)
    for split in task.all_splits:
        size = sizes.train if split == task.train_split else sizes.eval if split in task.eval_splits else sizes.test
        yield split, generate_split(task, split, size, sizes.seed, language)
