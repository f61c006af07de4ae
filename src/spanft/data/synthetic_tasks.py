"""Synthetic stand-ins for every registry task, in each task's exact schema, built from the synthetic language.

Sentences come from :class:`spanft.data.language.SyntheticLanguage` (the same language as the synthetic corpus, so
the n-gram dictionary counted on that corpus matches the planted multi-word expressions here). Labels follow
lexical and structural cues a small model can learn; where natural the cue is a multi-word expression (the
point of span fine-tuning) next to a plain single-word cue (so a baseline learns too):

- sst2: polarity adjectives inserted; the label's adjectives outnumber the other polarity's. A polarity
  idiom (an MWE) of the label's polarity may join them: it agrees with the words, never decides alone.
- cola: acceptable = the generated sentence; unacceptable = one corruption: a doubled function word
  ("the the"), else a subject-verb agreement error (was/were, is/are, has/have), else the verbs left out.
- mrpc / qqp: paraphrase = synonym substitution (declared word pairs and MWE pairs of the language);
  non-paraphrase = the same, after a change of meaning: negation added or removed (half), a content word
  replaced by a non-synonym (a quarter), or a different sentence sharing a word (a quarter).
- stsb: 5, less 2 when one sentence negates the other, less 3 x the share of content words replaced by a
  non-synonym; synonym substitutions change nothing.
- mnli / snli / rte / wnli: entailment = a contiguous sub-span of the premise; contradiction = that
  sub-span with a negator after its first verb; neutral = the sub-span plus new content from another
  sentence (two-class tasks: entailment vs the other two). MNLI's mismatched splits (and half of AX) take
  two-sentence premises, a genre the training split never shows.
- qnli: ("When" | "How many" + a sub-span of the sentence + "?", sentence): entailment when the sentence holds
  an answer of the kind asked ("in 1973" | "three times"); otherwise the other kind of answer, or none.
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
# Auxiliaries and negators carry a verb or adverb tag but are the grammar's own words: never swapped or replaced.
AUXILIARIES = frozenset({"was", "were", "is", "are", "has", "have", "be"})
NEGATORS = ("not", "never")
FIXED_WORDS = AUXILIARIES | frozenset(NEGATORS)
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
    """Cue vocabularies derived deterministically from a language: polarity words and idioms, synonyms."""

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
        top = [w for w in words[:200] if w not in synonyms and w not in FIXED_WORDS]
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
    return [
        i for i, (word, tag) in enumerate(zip(sentence.words, sentence.pos))
        if tag.startswith(CONTENT_PREFIXES) and word not in PUNCT and word.lower() not in FIXED_WORDS
    ]


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
        if word not in avoid and word not in FIXED_WORDS:
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
            new = lex.synonyms[word]
        else:
            new = _other_word(lex, rng, sentence.pos[i], {word, lex.synonyms.get(word, word)})
            if new is None:
                continue
        words[i] = new[:1].upper() + new[1:] if i == 0 else new
        replaced += 1
    return words, replaced


# ---------------------------------------------------------------- one generator per kind of task


def _sst2(lex: Lexicon, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
    """Polarity adjectives decide: strictly more of the label's polarity. An idiom of the label's polarity may
    join them, so the multi-word cues agree with the words but never decide alone."""
    words = list(_sentence(lex, rng).words)
    cues = [label] * int(rng.integers(1, 3)) + ([1 - label] if rng.random() < 0.3 else [])
    for polarity in rng.permutation(cues):
        words = _insert_adjective(lex, rng, words, int(polarity))
    if rng.random() < 0.4:
        words = _insert_idiom(lex, rng, words, label)
    # The sentence itself may hold polarity words or idioms: add the label's adjectives until both counts agree.
    while not all(_majority(polarity_counts(lex, words, idioms), label) for idioms in (False, True)):
        words = _insert_adjective(lex, rng, words, label)
    return [words], label


def _majority(counts: tuple[int, int], label: int) -> bool:
    return counts[label] > counts[1 - label]


def polarity_counts(lex: Lexicon, words: Sequence[str], idioms: bool = True) -> tuple[int, int]:
    """(negative, positive) cue occurrences in ``words``: polarity adjectives, plus polarity idioms if asked."""
    lowered = _lower(words)
    counts = [sum(w in lex.negative_words for w in lowered), sum(w in lex.positive_words for w in lowered)]
    for polarity, expressions in ((0, lex.negative_mwes), (1, lex.positive_mwes)) if idioms else ():
        for idiom in expressions:
            n = len(idiom)
            counts[polarity] += sum(lowered[i : i + n] == idiom for i in range(len(lowered) - n + 1))
    return counts[0], counts[1]


def _insert_adjective(lex: Lexicon, rng: np.random.Generator, words: list[str], polarity: int) -> list[str]:
    """A polarity adjective before a noun outside any planted expression (anywhere when there is none)."""
    inside = {i for start, end in _find_mwes(lex, words) for i in range(start + 1, end)}
    nouns = [i for i in range(1, len(words)) if i not in inside and words[i].islower() and words[i] in lex.nouns]
    at = _choice(rng, nouns) if nouns else int(rng.integers(1, len(_body(words)) + 1))
    pool = sorted(lex.positive_words if polarity else lex.negative_words)
    return words[:at] + [_choice(rng, pool)] + words[at:]


def _insert_idiom(lex: Lexicon, rng: np.random.Generator, words: list[str], polarity: int) -> list[str]:
    """An adverbial polarity idiom before the final punctuation."""
    idioms = lex.positive_mwes if polarity else lex.negative_mwes
    if not idioms:
        return words
    at = len(_body(words))
    return words[:at] + list(_choice(rng, idioms)) + words[at:]


def _cola(lex: Lexicon, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
    """Acceptable: a sentence of the language. Unacceptable: the same kind of sentence with one corruption."""
    sentence = _sentence(lex, rng, min_words=4)
    if label == 0:
        sentence = _corrupt(rng, sentence)
    return [sentence.words], label


AGREEMENT = {"was": "were", "were": "was", "is": "are", "are": "is", "has": "have", "have": "has"}
FUNCTION_TAGS = ("DT", "IN", "MD", "CC", "PRP", "PRP$", "TO")


def _corrupt(rng: np.random.Generator, sentence: Sentence) -> Sentence:
    """The first corruption that applies, in CORRUPTION_KINDS order."""
    for kind in CORRUPTION_KINDS:
        corrupted = kind(rng, sentence.words, sentence.pos)
        if corrupted is not None:
            return corrupted
    raise SpanftError(f"no corruption applies to {' '.join(sentence.words)!r}")


def _drop_verbs(rng: np.random.Generator, words: list[str], pos: list[str]) -> Sentence | None:
    """Every verb of the sentence left out (its auxiliaries and modals with it): "the dog the ball"."""
    keep = [i for i, tag in enumerate(pos) if not (tag.startswith("VB") or tag == "MD")]
    if len(keep) == len(words):
        return None
    return Sentence([words[i] for i in keep], [pos[i] for i in keep])


def _break_agreement(rng: np.random.Generator, words: list[str], pos: list[str]) -> Sentence | None:
    """was <-> were, is <-> are, has <-> have (a subject-verb agreement error)."""
    for i, word in enumerate(words):
        if word in AGREEMENT:
            return Sentence(words[:i] + [AGREEMENT[word]] + words[i + 1 :], pos)
    return None


def _double_function_word(rng: np.random.Generator, words: list[str], pos: list[str]) -> Sentence | None:
    candidates = [i for i in range(len(_body(words))) if pos[i] in FUNCTION_TAGS]
    if not candidates:
        return None
    i = _choice(rng, candidates)
    return Sentence(words[: i + 1] + [words[i].lower()] + words[i + 1 :], pos[: i + 1] + pos[i:])


# Kinds a baseline can see, most preferred first: a function word doubled ("the the dog"; most sentences have
# one), else an agreement error ("the dog were"), else the verbs left out ("the dog the ball"). Reversed word
# windows and stranded determiners were tried: tiny baselines do not learn them from 1,500 sentences.
CORRUPTION_KINDS = (_double_function_word, _break_agreement, _drop_verbs)


def _paraphrase(question: bool) -> Callable:
    """Both sentences of a pair may differ by synonyms (declared word pairs, and declared multi-word paraphrases);
    a non-paraphrase also changes the meaning: negation added or removed (half), a content word replaced by a
    non-synonym (a quarter), or another sentence sharing a word with the first (a quarter)."""

    def generate(lex: Lexicon, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
        sentence = _sentence(lex, rng, min_words=4)
        first = list(sentence.words)
        second = _synonym_rewrite(lex, rng, sentence if label == 1 else _change_meaning(lex, rng, sentence))
        if question:
            first, second = _as_question(first), _as_question(second)
        return [first, second], label

    return generate


def _change_meaning(lex: Lexicon, rng: np.random.Generator, sentence: Sentence) -> Sentence:
    draw = rng.random()
    negated = _toggle_negation(lex, sentence) if draw < 0.5 else None
    if negated is not None:
        return negated
    if draw < 0.75:
        words, replaced = _replace_content(lex, rng, sentence, int(rng.integers(1, 3)), synonym=False)
        if replaced:
            return Sentence(words, sentence.pos)
    other = _sentence(lex, rng, min_words=4)
    i = _choice(rng, _content_positions(sentence) or list(range(len(_body(sentence.words)))))
    word = sentence.words[i] if sentence.pos[i] == "NNP" else sentence.words[i].lower()
    at = int(rng.integers(1, len(_body(other.words)) + 1))
    return Sentence(other.words[:at] + [word] + other.words[at:], other.pos[:at] + [sentence.pos[i]] + other.pos[at:])


FINITE_VERBS = ("VBD", "VBZ", "VBP")


def _toggle_negation(lex: Lexicon, sentence: Sentence) -> Sentence | None:
    """The sentence negated ("was" -> "was not", "walked" -> "never walked"), or its negator removed."""
    words, pos = sentence.words, sentence.pos
    for i, word in enumerate(words):
        if word.lower() in NEGATORS:
            return Sentence(words[:i] + words[i + 1 :], pos[:i] + pos[i + 1 :])
    for i, (word, tag) in enumerate(zip(words, pos)):
        if tag == "MD" or word.lower() in AUXILIARIES:
            return Sentence(words[: i + 1] + ["not"] + words[i + 1 :], pos[: i + 1] + ["RB"] + pos[i + 1 :])
        if tag in FINITE_VERBS and i > 0:
            return Sentence(words[:i] + ["never"] + words[i:], pos[:i] + ["RB"] + pos[i:])
    return None


def _synonym_rewrite(lex: Lexicon, rng: np.random.Generator, sentence: Sentence) -> list[str]:
    """Up to two content words replaced by their declared synonyms; a declared multi-word paraphrase, half the
    time one applies."""
    mwes = [(s, e) for s, e in _find_mwes(lex, sentence.words) if _lower(sentence.words[s:e]) in lex.mwe_synonyms]
    words, _ = _replace_content(lex, rng, sentence, int(rng.integers(0, 3)), synonym=True)
    if mwes and rng.random() < 0.5:
        start, end = _choice(rng, mwes)
        words[start:end] = list(lex.mwe_synonyms[_lower(sentence.words[start:end])])
    return words


def _as_question(words: list[str]) -> list[str]:
    return _body(words) + ["?"]


def _stsb(lex: Lexicon, rng: np.random.Generator, label: float) -> tuple[list[list[str]], float]:
    """5, less 2 when one sentence negates the other, less 3 x the share of content words replaced by a
    non-synonym; synonyms (single and multi-word) change nothing."""
    sentence = _sentence(lex, rng, min_words=4)
    negated = _toggle_negation(lex, sentence) if rng.random() < 0.5 else None
    changed = negated or sentence
    content = len(_content_positions(changed))
    words, replaced = _replace_content(lex, rng, changed, int(rng.integers(0, content + 1)), synonym=False)
    second = _synonym_rewrite(lex, rng, Sentence(words, changed.pos))
    score = round(5.0 - 2.0 * (negated is not None) - 3.0 * replaced / max(content, 1), 3)
    return [list(sentence.words), second], score


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
        span.insert(at, _choice(rng, NEGATORS))
    elif kind == "neutral":
        present = {w.lower() for w in premise.words}
        extra = [w for w in _sub_span(rng, _sentence(lex, rng).words, 2, 5) if w.lower() not in present]
        span += extra or [_other_word(lex, rng, "NN", present) or "something"]
    return _capitalize(span) + ["."]


QUESTIONS = (("When",), ("How", "many"))  # asks for a year | asks for a count


def _qnli(lex: Lexicon, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
    """(question, sentence): entailment when the sentence holds an answer of the kind asked (when: a year, how
    many: a count); otherwise it holds the other kind of answer (half) or none. The question is a "when" or
    "how many" before a sub-span of the sentence."""
    sentence = _without_numbers(_sentence(lex, rng, min_words=4))
    asked = int(rng.integers(len(QUESTIONS)))
    span = _sub_span(rng, sentence.words)
    question = [*QUESTIONS[asked], span[0] if sentence.words.index(span[0]) else span[0].lower(), *span[1:], "?"]
    answered = asked if label == 0 else (1 - asked if rng.random() < 0.5 else None)
    words = list(sentence.words)
    if answered is not None:
        at = len(_body(words))
        words[at:at] = _answer(rng, answered)
    return [question, words], label


def _without_numbers(sentence: Sentence) -> Sentence:
    """Every number word or figure ("three", "1973") replaced by "some": only the planted answer is a number."""
    words = ["some" if tag == "CD" else word for word, tag in zip(sentence.words, sentence.pos)]
    return Sentence(words, ["DT" if tag == "CD" else tag for tag in sentence.pos])


NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "ten", "twelve", "twenty")


def _answer(rng: np.random.Generator, kind: int) -> list[str]:
    if kind == 0:
        return ["in", str(int(rng.integers(1850, 2021)))]
    return [_choice(rng, NUMBER_WORDS), "times"]


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
