"""Synthetic stand-ins: exact schema, determinism, label rules checked by independent oracles, learnability."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import pearsonr
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression, Ridge

from spanft.cli import main
from spanft.data.columns import SyntheticSizes
from spanft.data.prepare import load_task
from spanft.data.registry import TASKS, get_task
from spanft.data.synthetic.cues import NEGATORS, CueVocabulary
from spanft.data.synthetic.language import language_for_seed
from spanft.data.synthetic.tasks import generate_split

SMALL = SyntheticSizes(train=60, eval=30, test=20)


@pytest.fixture(scope="module")
def lex() -> CueVocabulary:
    return CueVocabulary(language_for_seed(0))


@pytest.mark.parametrize("name", list(TASKS))
def test_schema_splits_sizes_and_labels(name):
    task = get_task(name)
    data = load_task(task, "synthetic", sizes=SMALL)
    assert list(data) == task.all_splits
    for split, columns in data.items():
        expected = SMALL.train if split == task.train_split else SMALL.eval if split in task.eval_splits else SMALL.test
        assert len(columns) == expected and sorted(columns.idx) == list(range(expected))
        assert all(words for words in columns.words_a)
        assert bool(columns.words_b) == task.is_pair and all(w for w in columns.words_b)
        labeled = task.splits[split].labeled
        for words, label in zip(columns.words_a, columns.labels):
            if task.is_tagging:
                assert len(label) == len(words) and all(0 <= t < task.num_labels for t in label)
            elif task.is_regression:
                assert (0.0 <= label <= 5.0) if labeled else math.isnan(label)
            else:
                assert (0 <= label < task.num_labels) if labeled else label == -1


def test_unlabeled_test_splits_exist_for_every_glue_task():
    for task in TASKS.values():
        if task.hub_id == "nyu-mll/glue":
            assert task.test_splits and not any(task.splits[s].labeled for s in task.test_splits)


@pytest.mark.parametrize("name", ["cola", "mnli", "snli"])
def test_classes_are_balanced(name):
    task = get_task(name)
    counts = Counter(load_task(task, "synthetic", sizes=SMALL)["train"].labels)
    assert set(counts) == set(range(task.num_labels))
    assert max(counts.values()) - min(counts.values()) <= 1


def test_deterministic_by_seed_and_splits_independent_of_other_sizes():
    task = get_task("mrpc")
    first = load_task(task, "synthetic", sizes=SMALL)
    again = load_task(task, "synthetic", sizes=SMALL)
    bigger_train = load_task(task, "synthetic", sizes=SyntheticSizes(train=90, eval=30, test=20))
    other_seed = load_task(task, "synthetic", sizes=SyntheticSizes(train=60, eval=30, test=20, seed=1))
    assert first["train"].words_a == again["train"].words_a and first["train"].labels == again["train"].labels
    assert first["validation"].words_b == bigger_train["validation"].words_b
    assert first["train"].words_a != other_seed["train"].words_a


def test_prepare_task_synthetic_writes_parquet(tmp_path):
    out = tmp_path / "qqp"
    assert main(["prepare-task", "qqp", "--out", str(out), "--train-size", "10", "--eval-size", "5", "--test-size", "4"]) == 0
    table = pq.read_table(out / "test.parquet")
    assert table.column_names == ["idx", "words_a", "words_b", "label"] and table.num_rows == 4
    assert set(table.column("label").to_pylist()) == {-1}
    assert main(["prepare-task", "qqp", "--out", str(out), "--train-size", "0"]) == 2


# ------------------------------------------------------------------ label rules, checked by independent oracles


def _count_polarity(lex: CueVocabulary, words: list[str], idioms: bool = True) -> tuple[int, int]:
    """Oracle: words counted with Counter, idioms found by a regular expression over the space-joined text."""
    counts = Counter(w.lower() for w in words)
    text = " " + " ".join(w.lower() for w in words) + " "

    def occurrences(idiom):  # a lookahead counts adjacent repeats that share a space
        return len(re.findall("(?= " + re.escape(" ".join(idiom)) + " )", text)) if idioms else 0

    neg = sum(counts[w] for w in lex.negative_words) + sum(occurrences(i) for i in lex.negative_mwes)
    pos = sum(counts[w] for w in lex.positive_words) + sum(occurrences(i) for i in lex.positive_mwes)
    return neg, pos


def _contiguous_in(part: list[str], whole: list[str]) -> bool:
    part = [w.lower() for w in part]
    whole = [w.lower() for w in whole]
    return any(whole[i : i + len(part)] == part for i in range(len(whole) - len(part) + 1))


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000))
def test_sst2_label_is_the_majority_polarity_of_the_words_and_of_words_with_idioms(seed):
    lex = CueVocabulary(language_for_seed(0))
    data = generate_split(get_task("sst2"), "train", 30, seed, language_for_seed(0))
    for words, label in zip(data.words_a, data.labels):
        for idioms in (False, True):  # single words alone decide; the idioms never overturn them
            neg, pos = _count_polarity(lex, words, idioms)
            assert (pos > neg) == (label == 1) and pos != neg


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000))
def test_nli_hypotheses_follow_their_label(seed):
    task = get_task("mnli")
    data = generate_split(task, "train", 30, seed, language_for_seed(0))
    for premise, hypothesis, label in zip(data.words_a, data.words_b, data.labels):
        body = hypothesis[:-1]
        kind = task.label_names[label]
        if kind == "entailment":
            assert _contiguous_in(body, premise)
        elif kind == "contradiction":
            negators = [i for i, w in enumerate(body) if w.lower() in NEGATORS]
            assert any(_contiguous_in(body[:i] + body[i + 1 :], premise) for i in negators)
        else:
            assert any(w.lower() not in {p.lower() for p in premise} for w in body)


def test_qnli_entailment_when_the_sentence_holds_an_answer_of_the_kind_asked():
    task = get_task("qnli")
    data = generate_split(task, "train", 80, 3, language_for_seed(0))
    answers = {"when": r" in \d{4} ", "how many": r" (two|three|four|five|six|seven|eight|ten|twelve|twenty) times "}
    kinds = Counter()
    for question, sentence, label in zip(data.words_a, data.words_b, data.labels):
        asked = "when" if question[0] == "When" else "how many"
        assert question[-1] == "?" and (asked == "when" or question[:2] == ["How", "many"])
        text = " " + " ".join(sentence) + " "
        holds = {kind: re.search(pattern, text) is not None for kind, pattern in answers.items()}
        assert (task.label_names[label] == "entailment") == holds[asked]
        assert sum(holds.values()) <= 1  # at most one answer is planted; the sentence's own numbers are gone
        words = question[1:-1] if asked == "when" else question[2:-1]
        assert _contiguous_in(words, sentence)  # both classes ask about the sentence's own words
        kinds[(label, holds["when"] or holds["how many"])] += 1
    assert kinds[(1, True)] and kinds[(1, False)]  # not_entailment: the other kind of answer, or none


def _negated(first: list[str], second: list[str]) -> bool:
    return sum(w.lower() in NEGATORS for w in first) != sum(w.lower() in NEGATORS for w in second)


def _synonym_changes_only(lex: CueVocabulary, first: list[str], second: list[str]) -> bool | None:
    """Whether every word that differs is a declared synonym (None: lengths differ, or a planted expression)."""
    planted = any(tuple(w.lower() for w in text[i : i + n]) in lex.mwe_set
                  for text in (first, second) for n in range(2, 6) for i in range(len(text)))
    if len(first) != len(second) or planted:
        return None
    return all(lex.synonyms.get(a) == b for a, b in zip(first, second) if a != b)


def test_mrpc_paraphrases_differ_by_synonyms_and_non_paraphrases_change_the_meaning(lex):
    data = generate_split(get_task("mrpc"), "train", 240, 5, language_for_seed(0))
    checked = Counter()
    for first, second, label in zip(data.words_a, data.words_b, data.labels):
        same_meaning = _synonym_changes_only(lex, first, second)
        if label == 1:
            assert not _negated(first, second)
            assert same_meaning in (True, None)
        elif not _negated(first, second):
            assert same_meaning in (False, None)
        checked[label, same_meaning is not None] += 1
    assert checked[1, True] > 20 and checked[0, True] > 10


def test_stsb_score_falls_with_negation_and_non_synonym_replacements(lex):
    data = generate_split(get_task("stsb"), "train", 120, 2, language_for_seed(0))
    for first, second, score in zip(data.words_a, data.words_b, data.labels):
        negated = _negated(first, second)
        assert score <= 3.0 if negated else score >= 2.0
        same_meaning = _synonym_changes_only(lex, first, second)
        if same_meaning is not None:
            assert (score == 5.0) == same_meaning


def _doubled(words: list[str]) -> bool:
    lowered = [w.lower() for w in words]
    return any(a == b for a, b in zip(lowered, lowered[1:]))


def test_cola_unacceptable_sentences_double_a_word_else_lack_a_verb_or_break_agreement(lex):
    verbs = {w for tag, words in lex.words_by_tag.items() if tag.startswith("VB") or tag == "MD" for w in words}
    data = generate_split(get_task("cola"), "train", 300, 4, language_for_seed(0))
    kinds = Counter()
    for words, label in zip(data.words_a, data.labels):
        has_verb = any(w.lower() in verbs for w in words)
        if label == 1:
            assert has_verb
            kinds["acceptable doubled"] += _doubled(words)
        elif _doubled(words):
            kinds["doubled"] += 1
        else:
            assert not has_verb or {"was", "were", "is", "are", "has", "have"} & {w.lower() for w in words}
            kinds["other"] += 1
    assert kinds["doubled"] > 100 and kinds["other"] >= 1  # the doubled word is the common corruption
    assert kinds["acceptable doubled"] <= 3  # a sentence of the language rarely repeats a word by itself


def test_conll_tags_are_valid_iob2():
    task = get_task("conll2003")
    data = generate_split(task, "train", 200, 0, language_for_seed(0))
    entities = 0
    for tags in data.labels:
        names = [task.label_names[t] for t in tags]
        for previous, tag in zip(["O"] + names, names):
            if tag.startswith("I-"):
                assert previous[2:] == tag[2:], names
            entities += tag.startswith("B-")
    assert entities > 50


# ------------------------------------------------------------------ learnable: a linear model beats chance clearly


def _features(first: list[str], second: list[str] | None) -> str:
    a = [w.lower() for w in first]
    tokens = [f"a:{w}" for w in a] + [f"a2:{x}_{y}" for x, y in zip(a, a[1:])]
    if second is not None:
        seen = set(a)
        b = [w.lower() for w in second]
        tokens += [f"b:{w}" for w in b] + [f"new:{w}" for w in b if w not in seen]
        tokens += ["NEW"] * sum(w not in seen for w in b)
        tokens += [f"x:{a[0]}_{'#' if w.isdigit() else w}" for w in b]  # what the first sentence's opening asks for
    return " ".join(tokens)


@pytest.mark.parametrize("name, margin", [("cola", 0.12), ("sst2", 0.3), ("mrpc", 0.12), ("qnli", 0.2), ("mnli", 0.3), ("stsb", None)])
def test_labels_are_learnable_by_a_linear_model(name, margin):
    task = get_task(name)
    data = load_task(task, "synthetic", sizes=SyntheticSizes(train=1200, eval=300, test=1))
    train, dev = data["train"], data[task.eval_splits[0]]

    def texts(split):
        return [_features(a, split.words_b[i] if task.is_pair else None) for i, a in enumerate(split.words_a)]

    vectorizer = CountVectorizer(tokenizer=str.split, lowercase=False, token_pattern=None, min_df=2)
    x_train, x_dev = vectorizer.fit_transform(texts(train)), vectorizer.transform(texts(dev))
    if task.is_regression:
        predicted = Ridge().fit(x_train, train.labels).predict(x_dev)
        assert pearsonr(predicted, dev.labels)[0] > 0.5
    else:
        model = LogisticRegression(max_iter=1000).fit(x_train, train.labels)
        accuracy = float(np.mean(model.predict(x_dev) == np.array(dev.labels)))
        assert accuracy > 1 / task.num_labels + margin, accuracy
