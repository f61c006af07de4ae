"""One example generator per kind of task, and the table that picks a task's: a generator turns the synthetic
language's sentences into one labeled example. Sentences come from
:class:`spanft.data.synthetic.language.SyntheticLanguage` (the same language as the synthetic corpus, so
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
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from spanft.data.registry import TaskSpec
from spanft.data.synthetic.cues import (
    AUXILIARIES,
    NEGATORS,
    CueVocabulary,
    Sentence,
    capitalize,
    choice,
    content_positions,
    draw_sentence,
    find_mwes,
    lower_words,
    other_word,
    replace_content,
    sub_span,
    without_final_punct,
)
from spanft.errors import SpanftError

# ---------------------------------------------------------------- one generator per kind of task


def _sst2(lex: CueVocabulary, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
    """Polarity adjectives decide: strictly more of the label's polarity. An idiom of the label's polarity may
    join them, so the multi-word cues agree with the words but never decide alone."""
    words = list(draw_sentence(lex, rng).words)
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


def polarity_counts(lex: CueVocabulary, words: Sequence[str], idioms: bool = True) -> tuple[int, int]:
    """(negative, positive) cue occurrences in ``words``: polarity adjectives, plus polarity idioms if asked."""
    lowered = lower_words(words)
    counts = [sum(w in lex.negative_words for w in lowered), sum(w in lex.positive_words for w in lowered)]
    for polarity, expressions in ((0, lex.negative_mwes), (1, lex.positive_mwes)) if idioms else ():
        for idiom in expressions:
            n = len(idiom)
            counts[polarity] += sum(lowered[i : i + n] == idiom for i in range(len(lowered) - n + 1))
    return counts[0], counts[1]


def _insert_adjective(lex: CueVocabulary, rng: np.random.Generator, words: list[str], polarity: int) -> list[str]:
    """A polarity adjective before a noun outside any planted expression (anywhere when there is none)."""
    inside = {i for start, end in find_mwes(lex, words) for i in range(start + 1, end)}
    nouns = [i for i in range(1, len(words)) if i not in inside and words[i].islower() and words[i] in lex.nouns]
    at = choice(rng, nouns) if nouns else int(rng.integers(1, len(without_final_punct(words)) + 1))
    pool = sorted(lex.positive_words if polarity else lex.negative_words)
    return words[:at] + [choice(rng, pool)] + words[at:]


def _insert_idiom(lex: CueVocabulary, rng: np.random.Generator, words: list[str], polarity: int) -> list[str]:
    """An adverbial polarity idiom before the final punctuation."""
    idioms = lex.positive_mwes if polarity else lex.negative_mwes
    if not idioms:
        return words
    at = len(without_final_punct(words))
    return words[:at] + list(choice(rng, idioms)) + words[at:]


def _cola(lex: CueVocabulary, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
    """Acceptable: a sentence of the language. Unacceptable: the same kind of sentence with one corruption."""
    sentence = draw_sentence(lex, rng, min_words=4)
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
    candidates = [i for i in range(len(without_final_punct(words))) if pos[i] in FUNCTION_TAGS]
    if not candidates:
        return None
    i = choice(rng, candidates)
    return Sentence(words[: i + 1] + [words[i].lower()] + words[i + 1 :], pos[: i + 1] + pos[i:])


# Kinds a baseline can see, most preferred first: a function word doubled ("the the dog"; most sentences have
# one), else an agreement error ("the dog were"), else the verbs left out ("the dog the ball"). Reversed word
# windows and stranded determiners were tried: tiny baselines do not learn them from 1,500 sentences.
CORRUPTION_KINDS = (_double_function_word, _break_agreement, _drop_verbs)


def _paraphrase(question: bool) -> Callable:
    """Both sentences of a pair may differ by synonyms (declared word pairs, and declared multi-word paraphrases);
    a non-paraphrase also changes the meaning: negation added or removed (half), a content word replaced by a
    non-synonym (a quarter), or another sentence sharing a word with the first (a quarter)."""

    def generate(lex: CueVocabulary, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
        sentence = draw_sentence(lex, rng, min_words=4)
        first = list(sentence.words)
        second = _synonym_rewrite(lex, rng, sentence if label == 1 else _change_meaning(lex, rng, sentence))
        if question:
            first, second = _as_question(first), _as_question(second)
        return [first, second], label

    return generate


def _change_meaning(lex: CueVocabulary, rng: np.random.Generator, sentence: Sentence) -> Sentence:
    draw = rng.random()
    negated = _toggle_negation(lex, sentence) if draw < 0.5 else None
    if negated is not None:
        return negated
    if draw < 0.75:
        words, replaced = replace_content(lex, rng, sentence, int(rng.integers(1, 3)), synonym=False)
        if replaced:
            return Sentence(words, sentence.pos)
    other = draw_sentence(lex, rng, min_words=4)
    i = choice(rng, content_positions(sentence) or list(range(len(without_final_punct(sentence.words)))))
    word = sentence.words[i] if sentence.pos[i] == "NNP" else sentence.words[i].lower()
    at = int(rng.integers(1, len(without_final_punct(other.words)) + 1))
    return Sentence(other.words[:at] + [word] + other.words[at:], other.pos[:at] + [sentence.pos[i]] + other.pos[at:])


FINITE_VERBS = ("VBD", "VBZ", "VBP")


def _toggle_negation(lex: CueVocabulary, sentence: Sentence) -> Sentence | None:
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


def _synonym_rewrite(lex: CueVocabulary, rng: np.random.Generator, sentence: Sentence) -> list[str]:
    """Up to two content words replaced by their declared synonyms; a declared multi-word paraphrase, half the
    time one applies."""
    mwes = [(s, e) for s, e in find_mwes(lex, sentence.words) if lower_words(sentence.words[s:e]) in lex.mwe_synonyms]
    words, _ = replace_content(lex, rng, sentence, int(rng.integers(0, 3)), synonym=True)
    if mwes and rng.random() < 0.5:
        start, end = choice(rng, mwes)
        words[start:end] = list(lex.mwe_synonyms[lower_words(sentence.words[start:end])])
    return words


def _as_question(words: list[str]) -> list[str]:
    return without_final_punct(words) + ["?"]


def _stsb(lex: CueVocabulary, rng: np.random.Generator, label: float) -> tuple[list[list[str]], float]:
    """5, less 2 when one sentence negates the other, less 3 x the share of content words replaced by a
    non-synonym; synonyms (single and multi-word) change nothing."""
    sentence = draw_sentence(lex, rng, min_words=4)
    negated = _toggle_negation(lex, sentence) if rng.random() < 0.5 else None
    changed = negated or sentence
    content = len(content_positions(changed))
    words, replaced = replace_content(lex, rng, changed, int(rng.integers(0, content + 1)), synonym=False)
    second = _synonym_rewrite(lex, rng, Sentence(words, changed.pos))
    score = round(5.0 - 2.0 * (negated is not None) - 3.0 * replaced / max(content, 1), 3)
    return [list(sentence.words), second], score


NLI_KINDS = ("entailment", "neutral", "contradiction")


def nli_generator(label_names: Sequence[str], mismatched: bool = False) -> Callable:
    """Premise/hypothesis pairs; the hypothesis kind is drawn so that classes are balanced."""

    def generate(lex: CueVocabulary, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
        premise = draw_sentence(lex, rng)
        if mismatched:
            premise = _join(premise, draw_sentence(lex, rng))
        name = label_names[label]
        kind = name if name in NLI_KINDS else choice(rng, NLI_KINDS[1:])  # not_entailment
        hypothesis = _hypothesis(lex, rng, premise, kind)
        return [list(premise.words), hypothesis], label

    return generate


def _join(first: Sentence, second: Sentence) -> Sentence:
    return Sentence(first.words + second.words, first.pos + second.pos)


def _hypothesis(lex: CueVocabulary, rng: np.random.Generator, premise: Sentence, kind: str) -> list[str]:
    span = sub_span(rng, premise.words)
    if kind == "contradiction":
        tags = dict(zip(premise.words, premise.pos))
        verbs = [i for i, w in enumerate(span) if tags.get(w, "").startswith("VB")]
        at = verbs[0] + 1 if verbs else int(rng.integers(1, len(span) + 1))
        span.insert(at, choice(rng, NEGATORS))
    elif kind == "neutral":
        present = {w.lower() for w in premise.words}
        extra = [w for w in sub_span(rng, draw_sentence(lex, rng).words, 2, 5) if w.lower() not in present]
        span += extra or [other_word(lex, rng, "NN", present) or "something"]
    return capitalize(span) + ["."]


QUESTIONS = (("When",), ("How", "many"))  # asks for a year | asks for a count


def _qnli(lex: CueVocabulary, rng: np.random.Generator, label: int) -> tuple[list[list[str]], int]:
    """(question, sentence): entailment when the sentence holds an answer of the kind asked (when: a year, how
    many: a count); otherwise it holds the other kind of answer (half) or none. The question is a "when" or
    "how many" before a sub-span of the sentence."""
    sentence = _without_numbers(draw_sentence(lex, rng, min_words=4))
    asked = int(rng.integers(len(QUESTIONS)))
    span = sub_span(rng, sentence.words)
    question = [*QUESTIONS[asked], span[0] if sentence.words.index(span[0]) else span[0].lower(), *span[1:], "?"]
    answered = asked if label == 0 else (1 - asked if rng.random() < 0.5 else None)
    words = list(sentence.words)
    if answered is not None:
        at = len(without_final_punct(words))
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
    return [choice(rng, NUMBER_WORDS), "times"]


def _conll(lex: CueVocabulary, rng: np.random.Generator, label_names: Sequence[str]) -> tuple[list[list[str]], list[int]]:
    tokens = lex.language.sentence(rng)
    try:
        tags = [label_names.index(t.ner) for t in tokens]
    except ValueError:
        bad = sorted({t.ner for t in tokens} - set(label_names))
        raise SpanftError(f"synthetic language: NER tags {bad} are not in {list(label_names)}") from None
    return [[t.word for t in tokens]], tags


# ---------------------------------------------------------------- the table: task -> generator per split


def example_generator(task: TaskSpec, split: str) -> Callable:
    """The generator of ``task``'s examples in ``split`` (MNLI's mismatched splits: two-sentence premises)."""
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
        return nli_generator(task.label_names, mismatched)
    raise SpanftError(f"task {task.name}: no synthetic generator")
