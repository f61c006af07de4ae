"""The chunker's tagger stage: CoNLL-2003 POS (local files and hub layout), synthetic tags, NLTK's pretrained
tagger fetched into the workspace, held-out accuracy. Every CoNLL file here is written by the test (invented
words)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import datasets
import nltk
import pytest
from sklearn.metrics import accuracy_score

from spanft.data.conll_pos import conll_pos_sentences
from spanft.data.registry import get_task
from spanft.data.tagger_data import check_tagger_source, make_tagger
from spanft.errors import SpanftError
from spanft.text.chunker import (
    PRETRAINED_NAME,
    ChunkSegmenter,
    fetch_pretrained_tagger,
    load_tagger,
    penn_tag,
    read_tagger_about,
    train_tagger,
)

CONLL = get_task("conll2003")
NAMES, NOUNS, VERBS = ["Zarn", "Ulm", "Quell", "Trask"], ["blorp", "frib", "wug", "dax"], ["met", "saw", "fed"]


def conll_sentence(rng: random.Random) -> list[tuple[str, str, str]]:
    """(token, POS as CoNLL writes it, NER tag): 'NNP VBD DT NN ( NNP ) .' with an optional adjective."""
    rows = [(rng.choice(NAMES), "NNP", "B-PER"), (rng.choice(VERBS), "VBD", "O"), ("the", "DT", "O")]
    if rng.random() < 0.5:
        rows.append(("zany", "JJ", "O"))
    rows += [(rng.choice(NOUNS), "NN", "O"), ("(", "(", "O"), (rng.choice(NAMES), "NNP", "B-LOC"), (")", ")", "O"),
             (".", ".", "O")]
    return rows


def write_conll(path: Path, n: int, seed: int, columns: int = 4) -> list[list[tuple[str, str, str]]]:
    rng = random.Random(seed)
    sentences = [conll_sentence(rng) for _ in range(n)]
    lines = ["-DOCSTART- -X- -X- O", ""]
    for sentence in sentences:
        for token, pos, ner in sentence:
            lines.append(f"{token} {pos} I-NP {ner}" if columns == 4 else f"{token} {ner}")
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sentences


@pytest.fixture
def conll_dir(tmp_path) -> Path:
    root = tmp_path / "raw"
    write_conll(root / "conll2003" / "train.txt", 120, seed=1)
    write_conll(root / "conll2003" / "valid.txt", 20, seed=2)
    write_conll(root / "conll2003" / "test.txt", 30, seed=3)
    return root / "conll2003"  # CoNLL-2003's folder (params data.dir / chunker.conll_dir)


def test_penn_tag_spells_brackets_the_penn_way():
    assert [penn_tag(t) for t in ["(", ")", "NN", "''", "NN|SYM"]] == ["-LRB-", "-RRB-", "NN", "''", "NN|SYM"]


def test_local_pos_column_with_penn_brackets(conll_dir):
    sentences = conll_pos_sentences(CONLL, "test", "local", conll_dir)
    expected = write_conll(conll_dir / "again.txt", 30, seed=3)
    assert sentences == [[(tok, {"(": "-LRB-", ")": "-RRB-"}.get(pos, pos)) for tok, pos, _ in s] for s in expected]


def test_local_file_without_pos_column_is_a_one_line_error(tmp_path):
    for name, seed in (("train.txt", 1), ("valid.txt", 2)):
        write_conll(tmp_path / name, 3, seed, columns=2)
    with pytest.raises(SpanftError, match=r"train\.txt:3: no POS column") as err:
        conll_pos_sentences(CONLL, "train", "local", tmp_path)
    assert "\n" not in str(err.value)


def test_absent_test_split_gives_none(conll_dir):
    (conll_dir / "test.txt").unlink()
    assert conll_pos_sentences(CONLL, "test", "local", conll_dir) is None


def test_hub_pos_ids_map_through_the_feature_names(monkeypatch):
    # The hub's pos_tags names write brackets as '(' and ')': here in an order unlike any other list.
    names = ["NN", ")", "DT", "(", "NNP", "VBD", "."]
    features = datasets.Features({"id": datasets.Value("string"),
                                  "tokens": datasets.Sequence(datasets.Value("string")),
                                  "pos_tags": datasets.Sequence(datasets.ClassLabel(names=names)),
                                  "ner_tags": datasets.Sequence(datasets.ClassLabel(names=CONLL.label_names))})
    table = datasets.Dataset.from_dict({"id": ["0", "1"], "tokens": [["Ulm", "saw", "(", "a", "wug", ")"], []],
                                        "pos_tags": [[4, 5, 3, 2, 0, 1], []], "ner_tags": [[5, 0, 0, 0, 0, 0], []]},
                                       features=features)
    calls = []

    def load_dataset(path, name=None, split=None, revision=None, **kwargs):
        calls.append((path, name, split, revision))
        return table

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    sentences = conll_pos_sentences(CONLL, "train", "hf")
    assert sentences == [[("Ulm", "NNP"), ("saw", "VBD"), ("(", "-LRB-"), ("a", "DT"), ("wug", "NN"), (")", "-RRB-")]]
    assert calls == [("eriktks/conll2003", "default", "train", "refs/convert/parquet")]


def test_conll_tagger_records_its_held_out_accuracy(conll_dir, tmp_path):
    out = tmp_path / "tagger.json"
    about = make_tagger(out, "conll", "local", conll_dir)
    assert about == read_tagger_about(out)
    assert about["source"] == "conll" and about["sentences"] == 120
    assert set(about["accuracy"]) == {"validation", "test"}
    tagger = load_tagger(out)
    test = conll_pos_sentences(CONLL, "test", "local", conll_dir)
    gold = [tag for sentence in test for _, tag in sentence]
    predicted = [tag for sentence in test for _, tag in tagger.tag([w for w, _ in sentence])]
    assert about["accuracy"]["test"] == pytest.approx(accuracy_score(gold, predicted))
    assert "-LRB-" in predicted and "(" not in predicted
    segmenter = ChunkSegmenter.load(out)
    assert "CoNLL-2003 train POS" in segmenter.tagger_name and "test " in segmenter.tagger_name


def test_conll_tagger_without_test_split_reports_dev_only(conll_dir, tmp_path):
    (conll_dir / "test.txt").unlink()
    about = make_tagger(tmp_path / "tagger.json", "conll", "local", conll_dir)
    assert set(about["accuracy"]) == {"validation"}


def test_synthetic_tagger_with_synthetic_data(tmp_path):
    about = make_tagger(tmp_path / "tagger.json", "synthetic", "synthetic", corpus_seed=0, tagged_sentences=60)
    assert about["source"] == "synthetic" and about["sentences"] == 60
    assert set(about["accuracy"]) == {"heldout"} and 0.5 < about["accuracy"]["heldout"] <= 1.0


@pytest.mark.parametrize("tagger_source, data_source, message", [
    ("synthetic", "hf", "synthetic language only"),
    ("synthetic", "local", "synthetic language only"),
    ("conll", "synthetic", "needs real CoNLL-2003 files"),
    ("pretrained", "hf", "not one of synthetic, conll, nltk"),
])
def test_tagger_source_must_match_the_data(tagger_source, data_source, message):
    with pytest.raises(SpanftError, match=message):
        check_tagger_source(tagger_source, data_source)


# ------------------------------------------------------------------ NLTK's pretrained tagger, fetched by the stage


def test_fetch_offline_is_one_line(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise ValueError("Error loading averaged_perceptron_tagger_eng: <urlopen error [Errno -3] name resolution>\n...")

    monkeypatch.setattr(nltk, "download", offline)
    with pytest.raises(SpanftError, match="could not download NLTK's tagger") as err:
        fetch_pretrained_tagger(tmp_path / "nltk_data")
    assert "\n" not in str(err.value) and "chunker.source: conll" in str(err.value)


def test_fetch_downloads_into_the_workspace_and_converts(tmp_path, monkeypatch, conll_dir):
    # A stand-in for NLTK's download: it writes a tagger in NLTK's own three-file layout.
    source = train_tagger(conll_pos_sentences(CONLL, "train", "local", conll_dir), iterations=2)
    downloads = []

    def download(name, download_dir=None, **kwargs):
        downloads.append((name, download_dir))
        folder = Path(download_dir) / "taggers" / name
        folder.mkdir(parents=True)
        weights, tagdict, classes = source.encode_json_obj()
        for part, value in (("weights", weights), ("tagdict", tagdict), ("classes", classes)):
            (folder / f"averaged_perceptron_tagger_eng.{part}.json").write_text(json.dumps(value))
        return True

    monkeypatch.setattr(nltk, "download", download)
    about = make_tagger(tmp_path / "tagger.json", "nltk", "local", conll_dir, download_dir=tmp_path / "nltk_data")
    assert downloads == [(PRETRAINED_NAME, str(tmp_path / "nltk_data"))]
    assert about["source"] == "nltk" and set(about["accuracy"]) == {"validation", "test"}
    words = ["Zarn", "fed", "the", "wug", "(", "Ulm", ")", "."]
    assert load_tagger(tmp_path / "tagger.json").tag(words) == source.tag(words)
    make_tagger(tmp_path / "again.json", "nltk", "local", conll_dir, download_dir=tmp_path / "nltk_data")
    assert len(downloads) == 1  # already in the workspace: no second download


def test_the_tagger_file_is_byte_identical_for_identical_inputs(conll_dir, tmp_path):
    make_tagger(tmp_path / "a.json", "conll", "local", conll_dir)
    make_tagger(tmp_path / "b.json", "conll", "local", conll_dir)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
