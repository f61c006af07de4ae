"""The task registry and the hub reader (``load_dataset`` monkeypatched: no network in tests)."""

from __future__ import annotations

import logging
import math

import datasets
import pytest

import spanft.data.provenance as provenance
from spanft.cli import main
from spanft.data.conll_pos import conll_pos_sentences
from spanft.data.prepare import iter_task, load_task, prepare_task
from spanft.data.registry import TASKS, get_task, submission_splits
from spanft.errors import SpanftError
from spanft.report.glue_tables import glue_columns

# The label orders of the GLUE / SNLI / CoNLL-2003 releases (hub ClassLabel names), written out by hand.
EXPECTED_LABELS = {
    "cola": ["unacceptable", "acceptable"],
    "sst2": ["negative", "positive"],
    "mrpc": ["not_equivalent", "equivalent"],
    "stsb": None,
    "qqp": ["not_duplicate", "duplicate"],
    "mnli": ["entailment", "neutral", "contradiction"],
    "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
    "wnli": ["not_entailment", "entailment"],
    "snli": ["entailment", "neutral", "contradiction"],
    "conll2003": ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"],
}


def test_registry_holds_the_eleven_tasks_with_their_label_orders():
    assert {name: task.label_names for name, task in TASKS.items()} == EXPECTED_LABELS


@pytest.mark.parametrize(
    "name, task_type, num_labels, is_pair, main_metric",
    [
        ("cola", "single", 2, False, "mcc"),
        ("sst2", "single", 2, False, "accuracy"),
        ("mrpc", "pair", 2, True, "f1"),
        ("stsb", "regression", 1, True, "pearson"),
        ("qqp", "pair", 2, True, "f1"),
        ("mnli", "pair", 3, True, "accuracy"),
        ("qnli", "pair", 2, True, "accuracy"),
        ("rte", "pair", 2, True, "accuracy"),
        ("wnli", "pair", 2, True, "accuracy"),
        ("snli", "pair", 3, True, "accuracy"),
        ("conll2003", "tagging", 9, False, "f1"),
    ],
)
def test_task_properties(name, task_type, num_labels, is_pair, main_metric):
    task = get_task(name)
    assert (task.task_type, task.num_labels, task.is_pair, task.main_metric) == (task_type, num_labels, is_pair, main_metric)
    assert task.is_regression == (name == "stsb") and task.is_tagging == (name == "conll2003")
    assert set(task.all_splits) == set(task.splits)


def test_splits():
    mnli = get_task("mnli")
    assert mnli.eval_splits == ["validation_matched", "validation_mismatched"]
    assert mnli.test_splits == ["test_matched", "test_mismatched", "ax"]
    assert mnli.splits["ax"].hub_config == "ax" and mnli.splits["ax"].local_names == ("diagnostic.tsv",)
    assert get_task("snli").eval_splits == ["validation", "test"] and get_task("snli").test_splits == []
    assert get_task("cola").eval_splits == ["validation"] and get_task("cola").test_splits == ["test"]
    assert get_task("conll2003").selection_split == "validation"


def test_unknown_task_lists_the_valid_names():
    with pytest.raises(SpanftError, match=r"unknown task 'mnli-m' \(did you mean mnli\?\); valid tasks: cola, sst2, mrpc, "
                                          "stsb, qqp, mnli"):
        get_task("mnli-m")
    with pytest.raises(SpanftError, match="unknown task 'xyzzy'; valid tasks: cola,"):
        get_task("xyzzy")  # nothing close: no guess


@pytest.mark.parametrize("typo, meant", [("cloa", "cola"), ("sst-2", "sst2"), ("conll03", "conll2003"), ("QNLI", "qnli")])
def test_a_misspelt_task_is_answered_with_did_you_mean(typo, meant):
    with pytest.raises(SpanftError, match=rf"unknown task '{typo}' \(did you mean {meant}\?\)"):
        get_task(typo)


def test_submission_stems_cover_the_leaderboard():
    stems = submission_splits()
    assert set(stems) == {"CoLA", "SST-2", "MRPC", "STS-B", "MNLI-m", "MNLI-mm", "QNLI", "QQP", "RTE", "WNLI", "AX"}
    assert stems["AX"][0].name == "mnli" and stems["AX"][1].name == "ax"
    assert stems["MNLI-mm"][1].name == "test_mismatched"


# ------------------------------------------------------------------ the hub reader on in-memory datasets


def classlabel(names):
    return datasets.ClassLabel(names=names)


def fake_hub(tables: dict):
    """A load_dataset stand-in: (repo, config, split) -> Dataset; records the calls."""
    calls = []

    def load_dataset(path, name=None, split=None, revision=None, **kwargs):
        calls.append((path, name, split, revision))
        return tables[(path, name, split)]

    return load_dataset, calls


def glue_pair(premise, hypothesis, labels, names, idx=None, columns=("premise", "hypothesis")):
    features = datasets.Features({columns[0]: datasets.Value("string"), columns[1]: datasets.Value("string"),
                                  "label": classlabel(names), "idx": datasets.Value("int32")})
    return datasets.Dataset.from_dict({columns[0]: premise, columns[1]: hypothesis, "label": labels,
                                       "idx": idx if idx is not None else list(range(len(labels)))}, features=features)


def test_hub_mnli_with_ax_and_unlabeled_tests(monkeypatch):
    names = EXPECTED_LABELS["mnli"]
    repo = "nyu-mll/glue"
    tables = {
        (repo, "mnli", "train"): glue_pair(["A zop hid.", "A zop hid."], ["A zop was hidden.", "No zop hid."], [0, 2], names),
        (repo, "mnli", "validation_matched"): glue_pair(["Bo ran."], ["Bo moved."], [0], names),
        (repo, "mnli", "validation_mismatched"): glue_pair(["Bo ran."], ["Bo sat."], [2], names),
        (repo, "mnli", "test_matched"): glue_pair(["Ki ate."], ["Ki is full."], [-1], names, idx=[17]),
        (repo, "mnli", "test_mismatched"): glue_pair(["Ki ate."], ["Ki ate rice."], [-1], names, idx=[3]),
        (repo, "ax", "test"): glue_pair(["No cat."], ["A cat."], [-1], names, idx=[0]),
    }
    load, calls = fake_hub(tables)
    monkeypatch.setattr(datasets, "load_dataset", load)
    data = load_task("mnli", "hf")
    assert data["train"].words_b == [["A", "zop", "was", "hidden", "."], ["No", "zop", "hid", "."]]
    assert data["train"].labels == [0, 2]
    assert data["test_matched"].idx == [17] and data["test_matched"].labels == [-1]
    assert data["ax"].words_a == [["No", "cat", "."]]
    assert (repo, "ax", "test", None) in calls


def test_hub_snli_drops_minus_one_and_logs(monkeypatch, caplog):
    names = EXPECTED_LABELS["snli"]
    features = datasets.Features({"premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
                                  "label": classlabel(names)})
    split = datasets.Dataset.from_dict({"premise": ["P one.", "P two.", "P three."], "hypothesis": ["H.", "H.", "H."],
                                        "label": [1, -1, 2]}, features=features)
    load, _ = fake_hub({("stanfordnlp/snli", None, s): split for s in ("train", "validation", "test")})
    monkeypatch.setattr(datasets, "load_dataset", load)
    with caplog.at_level(logging.INFO, logger="spanft"):
        data = load_task("snli", "hf")
    assert data["train"].idx == [0, 2] and data["train"].labels == [1, 2]
    assert "dropped 1 example(s) with label -1" in caplog.text


def test_hub_conll_maps_tags_by_name_and_uses_the_parquet_revision(monkeypatch):
    task = get_task("conll2003")
    shuffled = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]
    features = datasets.Features({"id": datasets.Value("string"), "tokens": datasets.Sequence(datasets.Value("string")),
                                  "ner_tags": datasets.Sequence(classlabel(shuffled))})
    split = datasets.Dataset.from_dict({"id": ["0"], "tokens": [["Ulm", "met", "Zarn"]], "ner_tags": [[1, 0, 3]]},
                                       features=features)
    load, calls = fake_hub({("eriktks/conll2003", "default", s): split for s in ("train", "validation", "test")})
    monkeypatch.setattr(datasets, "load_dataset", load)
    data = load_task(task, "hf")
    assert [task.label_names[t] for t in data["test"].labels[0]] == ["B-LOC", "O", "B-PER"]
    assert data["train"].words_a == [["Ulm", "met", "Zarn"]]
    assert calls == [("eriktks/conll2003", "default", s, "refs/convert/parquet") for s in ("train", "validation", "test")]


def test_conll_empty_sentences_are_boundaries_for_ner_and_pos_alike(monkeypatch, tmp_path, caplog):
    # One rule for a sentence without tokens: what -DOCSTART- and blank-line runs are in the files, skipped by
    # the NER and the POS reader, from the hub and from files alike (the hub NER reader used to stop on it).
    task = get_task("conll2003")
    loc, o, per = (task.label_names.index(tag) for tag in ("B-LOC", "O", "B-PER"))
    features = datasets.Features({"id": datasets.Value("string"), "tokens": datasets.Sequence(datasets.Value("string")),
                                  "pos_tags": datasets.Sequence(classlabel(["NNP", "VBD", "."])),
                                  "ner_tags": datasets.Sequence(classlabel(task.label_names))})
    split = datasets.Dataset.from_dict({"id": ["0", "1", "2"], "tokens": [["Ulm", "ran", "."], [], ["Zarn", "."]],
                                        "pos_tags": [[0, 1, 2], [], [0, 2]],
                                        "ner_tags": [[loc, o, o], [], [per, o]]},
                                       features=features)
    load, _ = fake_hub({("eriktks/conll2003", "default", s): split for s in ("train", "validation", "test")})
    monkeypatch.setattr(datasets, "load_dataset", load)
    with caplog.at_level(logging.INFO, logger="spanft"):
        ner = load_task(task, "hf")["train"]
        pos = conll_pos_sentences(task, "train", "hf")
    assert ner.words_a == [["Ulm", "ran", "."], ["Zarn", "."]] and ner.idx == [0, 2]
    assert [[w for w, _ in sentence] for sentence in pos] == ner.words_a
    assert caplog.text.count("train: skipped 1 empty sentence(s)") == 2  # NER and POS
    folder = tmp_path / "conll2003"  # the files: a -DOCSTART- line, then runs of blank lines
    folder.mkdir()
    lines = ["-DOCSTART- -X- -X- O", "", "", "Ulm NNP B-NP B-LOC", "ran VBD B-VP O", ". . O O", "", "",
             "-DOCSTART- -X- -X- O", "", "Zarn NNP B-NP B-PER", ". . O O", "", ""]
    for name in ("train.txt", "valid.txt", "test.txt"):
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    local = load_task(task, "local", folder)["train"]
    assert local.words_a == ner.words_a and local.labels == ner.labels
    assert [[w for w, _ in sentence] for sentence in conll_pos_sentences(task, "train", "local", folder)] == ner.words_a


def test_hub_stsb_scores_and_nan_test(monkeypatch):
    features = datasets.Features({"sentence1": datasets.Value("string"), "sentence2": datasets.Value("string"),
                                  "label": datasets.Value("float32"), "idx": datasets.Value("int32")})

    def split(scores):
        return datasets.Dataset.from_dict({"sentence1": ["Ab cd."] * len(scores), "sentence2": ["Ab ce."] * len(scores),
                                           "label": scores, "idx": list(range(len(scores)))}, features=features)

    repo = "nyu-mll/glue"
    load, _ = fake_hub({(repo, "stsb", "train"): split([3.5, 0.0]), (repo, "stsb", "validation"): split([5.0]),
                        (repo, "stsb", "test"): split([-1.0])})
    monkeypatch.setattr(datasets, "load_dataset", load)
    data = load_task("stsb", "hf")
    assert data["train"].labels == [3.5, 0.0]
    assert math.isnan(data["test"].labels[0])


def test_hub_label_names_that_do_not_match_the_registry(monkeypatch):
    repo = "nyu-mll/glue"
    wrong = glue_pair(["A."], ["B."], [0], ["yes", "no"], columns=("sentence1", "sentence2"))
    load, _ = fake_hub({(repo, "rte", s): wrong for s in ("train", "validation", "test")})
    monkeypatch.setattr(datasets, "load_dataset", load)
    with pytest.raises(SpanftError, match=r"hub labels \['yes', 'no'\] are not in the registry"):
        load_task("rte", "hf")


def test_hub_without_network_says_how_to_use_local(monkeypatch, capsys):
    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'nyu-mll/glue' on the Hub (LocalEntryNotFoundError)\nmore detail")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(SpanftError, match="--source local --data-dir DIR"):
        load_task("cola", "hf")
    assert main(["describe", "cola", "--source", "hf"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Couldn't reach" in err and "source local" in err


def test_unknown_source():
    with pytest.raises(SpanftError, match="unknown source 'web'"):
        load_task("cola", "web")


# ------------------------------------------------------------------ the hub's real schemas (local copies of the layout)


def test_mnli_matched_and_mismatched_are_told_apart(monkeypatch):
    # Each hub split holds its own sentences: swapping matched and mismatched anywhere (registry hub names,
    # the dev split that selects epochs, the table columns, the submission files) changes what lands where.
    names, repo = EXPECTED_LABELS["mnli"], "nyu-mll/glue"
    tables = {(repo, "mnli", split): glue_pair([f"{split.replace('_', '')} premise ."], ["some hypothesis ."],
                                               [label], names, idx=[i])
              for i, (split, label) in enumerate([("train", 0), ("validation_matched", 1), ("validation_mismatched", 2),
                                                  ("test_matched", -1), ("test_mismatched", -1)])}
    tables[(repo, "ax", "test")] = glue_pair(["ax premise ."], ["ax hypothesis ."], [-1], names, idx=[9])
    load, _ = fake_hub(tables)
    monkeypatch.setattr(datasets, "load_dataset", load)
    data = load_task("mnli", "hf")
    for split in ("validation_matched", "validation_mismatched", "test_matched", "test_mismatched"):
        assert data[split].words_a == [[split.replace("_", ""), "premise", "."]], split
    assert data["validation_matched"].labels == [1] and data["validation_mismatched"].labels == [2]
    mnli = get_task("mnli")
    assert mnli.selection_split == "validation_matched"
    columns = {column.label: column.split for column in glue_columns(["mnli"])}
    assert columns == {"MNLI-m (Acc)": "validation_matched", "MNLI-mm (Acc)": "validation_mismatched"}
    stems = submission_splits()
    assert stems["MNLI-m"][1].name == "test_matched" and stems["MNLI-mm"][1].name == "test_mismatched"
    assert (mnli.splits["test_matched"].local_names, mnli.splits["test_mismatched"].local_names) == \
        (("test_matched.tsv",), ("test_mismatched.tsv",))
    assert mnli.folder == "glue_data/MNLI"


def test_hub_empty_sentences_are_dropped_from_training_only(monkeypatch, caplog):
    names, repo = EXPECTED_LABELS["qqp"], "nyu-mll/glue"
    train = glue_pair(["How do wugs fly?", "", "Why?"], ["Do wugs fly?", "Is it so?", ""], [1, 0, 0], names,
                      idx=[5, 6, 7], columns=("question1", "question2"))
    other = glue_pair(["Ok?"], ["Ok ?"], [1], names, columns=("question1", "question2"))
    test = glue_pair(["", "Fine?"], ["Hm?", "Fine ?"], [-1, -1], names, idx=[0, 1], columns=("question1", "question2"))
    load, _ = fake_hub({(repo, "qqp", "train"): train, (repo, "qqp", "validation"): other, (repo, "qqp", "test"): test})
    monkeypatch.setattr(datasets, "load_dataset", load)
    with caplog.at_level(logging.INFO, logger="spanft"):
        data = load_task("qqp", "hf")
    assert data["train"].idx == [5] and data["test"].idx == [0, 1]  # every test row is predicted
    assert data["test"].words_a == [[], ["Fine", "?"]]
    assert "nyu-mll/glue/qqp train: dropped 2 training example(s) with an empty sentence" in caplog.text
    assert "nyu-mll/glue/qqp test: kept 1 example(s) with an empty sentence" in caplog.text


def test_a_config_the_hub_repository_lacks_is_not_called_a_network_problem(monkeypatch):
    def no_config(path, name=None, split=None, revision=None, **kwargs):
        raise ValueError(f"BuilderConfig '{name}' not found. Available: ['default']")

    monkeypatch.setattr(datasets, "load_dataset", no_config)
    with pytest.raises(SpanftError) as err:
        load_task("conll2003", "hf")
    message = str(err.value)
    assert "has no config 'default'" in message and "layout differs from the task registry" in message
    assert "network" not in message and "\n" not in message


def test_hub_revision_param_overrides_the_registry(monkeypatch):
    split = glue_pair(["A ."], ["B ."], [0], EXPECTED_LABELS["rte"], columns=("sentence1", "sentence2"))
    load, calls = fake_hub({("nyu-mll/glue", "rte", s): split for s in ("train", "validation", "test")})
    monkeypatch.setattr(datasets, "load_dataset", load)
    dict(iter_task("rte", "hf", revision="0123abc"))
    assert {call[3] for call in calls} == {"0123abc"}


def test_prepared_hub_data_records_the_resolved_commit(monkeypatch, tmp_path):
    split = glue_pair(["A ."], ["B ."], [0], EXPECTED_LABELS["rte"], columns=("sentence1", "sentence2"))
    asked, read = [], []
    commits = {None: "a" * 40, "v1.0": "f" * 40}  # main and a tag resolve to different commits

    def hub_commit(repo_id, revision=None, repo_type="dataset"):
        asked.append((repo_id, revision, repo_type))
        return commits[revision]

    monkeypatch.setattr(provenance, "hub_commit", hub_commit)
    tables = {("nyu-mll/glue", "rte", s): split for s in ("train", "validation")}

    def without_test(path, name=None, split=None, revision=None, **kwargs):
        read.append(revision)
        if (path, name, split) not in tables:
            raise ValueError(f'Unknown split "{split}". Should be one of [\'train\', \'validation\'].')
        return tables[(path, name, split)]

    monkeypatch.setattr(datasets, "load_dataset", without_test)
    record = prepare_task("rte", tmp_path / "rte", "hf", revision="v1.0")  # params data.revisions.rte: v1.0
    assert record == {"source": "hf", "id_or_path": "nyu-mll/glue", "revision": "f" * 40, "requested_revision": "v1.0",
                      "config": "rte", "splits": ["train", "validation"], "absent_splits": ["test"]}
    assert asked == [("nyu-mll/glue", "v1.0", "dataset")] and set(read) == {"v1.0"}
    assert sorted(p.name for p in (tmp_path / "rte").iterdir()) == [".spanft-output", "provenance.json",
                                                                   "train.parquet", "validation.parquet"]
