"""Chunker segmentation: grammar on hand-tagged input, a tiny trained tagger, errors, CLI."""

from __future__ import annotations

import json
import random

import nltk
import numpy as np
import pandas as pd
import pytest

from spanft.cli import main
from spanft.errors import SpanftError
from spanft.text.chunker import (
    ChunkSegmenter,
    chunk_lengths,
    load_pretrained_tagger,
    load_tagger,
    read_tagged_sentences,
    save_tagger,
    train_tagger,
)
from spanft.text.segmentation import read_segmentation_info

# Invented words: a tiny tagged language written for these tests.
DETS, ADJS, NOUNS = ["the", "a", "every"], ["blorn", "quiv", "sadd"], ["zib", "mupp", "tarn", "fesk"]
VERBS, ADVS, PREPS = ["glorped", "snicked", "wavved"], ["slowly", "oddly"], ["to", "near"]


def tiny_tagged_corpus(n: int = 60, seed: int = 0) -> list[list[tuple[str, str]]]:
    """Sentences 'DT JJ? NN [RB] VBD IN DT NN .' over the invented vocabulary."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(n):
        s = [(rng.choice(DETS), "DT")]
        if rng.random() < 0.5:
            s.append((rng.choice(ADJS), "JJ"))
        s.append((rng.choice(NOUNS), "NN"))
        if rng.random() < 0.3:
            s.append((rng.choice(ADVS), "RB"))
        s += [(rng.choice(VERBS), "VBD"), (rng.choice(PREPS), "IN"), (rng.choice(DETS), "DT"),
              (rng.choice(NOUNS), "NN"), (".", ".")]
        sentences.append(s)
    return sentences


def write_tagged(path, sentences):
    path.write_text("".join("".join(f"{w}\t{t}\n" for w, t in s) + "\n" for s in sentences), encoding="utf-8")


class FixedTagger:
    """A tagger that returns given tags: lets the grammar be tested alone."""

    def __init__(self, tags):
        self.tags = tags

    def tag(self, words):
        return list(zip(words, self.tags))


@pytest.mark.parametrize("tags, expected", [
    (["DT", "JJ", "NN", "MD", "RB", "VB", "TO", "DT", "NN", "."], [3, 3, 1, 2, 1]),
    (["PRP", "VBD", "RP", "DT", "NNP", "POS", "NN", "."], [1, 2, 4, 1]),
    (["IN", ",", "CC"], [1, 1, 1]),
    (["NNP", "NNP", "NNP", "VBZ", "CD", "NNS"], [3, 1, 2]),
])
def test_grammar_chunks_on_fixed_tags(tags, expected):
    words = [f"w{i}" for i in range(len(tags))]
    segmenter = ChunkSegmenter(FixedTagger(tags), "fixed")
    assert segmenter.segment(words) == expected


def test_chunk_lengths_counts_leaves():
    tree = nltk.Tree("S", [nltk.Tree("NP", [("a", "DT"), ("b", "NN")]), ("c", "IN")])
    assert chunk_lengths(tree) == [2, 1]


def test_trained_tagger_round_trip_and_chunks(tmp_path):
    sentences = tiny_tagged_corpus()
    tagger = train_tagger(sentences, iterations=5, seed=0)
    path = tmp_path / "tagger.json"
    save_tagger(tagger, path)
    loaded = load_tagger(path)
    words = ["the", "quiv", "mupp", "oddly", "snicked", "near", "a", "fesk", "."]
    assert [t for _, t in loaded.tag(words)] == ["DT", "JJ", "NN", "RB", "VBD", "IN", "DT", "NN", "."]
    assert loaded.tag(words) == tagger.tag(words)
    segmenter = ChunkSegmenter.load(path)
    assert segmenter.segment(words) == [3, 2, 1, 2, 1]
    assert segmenter.segment_batch([[], words[:3]]) == [[], [3]]
    assert segmenter.describe()["tagger"].startswith("file:tagger.json:sha256=")


def test_training_is_deterministic(tmp_path):
    sentences = tiny_tagged_corpus(n=40, seed=1)
    save_tagger(train_tagger(sentences, seed=3), tmp_path / "a.json")
    save_tagger(train_tagger(sentences, seed=3), tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_missing_pretrained_tagger_is_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    with pytest.raises(SpanftError, match=r"python -m nltk.downloader averaged_perceptron_tagger_eng") as err:
        load_pretrained_tagger()
    assert "\n" not in str(err.value)


def test_cli_chunker_without_tagger_data(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    (tmp_path / "in.txt").write_text("the zib glorped\n")
    assert main(["segment", "--method", "chunker", str(tmp_path / "in.txt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spanft: error: ") and "nltk.downloader" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("content, message", [
    ("the\tDT\nzib NN\n", "tagged.txt:2: expected 'word<TAB>tag'"),
    ("\n\n", "no tagged sentences"),
])
def test_bad_tagged_file(tmp_path, content, message):
    path = tmp_path / "tagged.txt"
    path.write_text(content)
    with pytest.raises(SpanftError, match=message):
        read_tagged_sentences(path)


@pytest.mark.parametrize("content", ["{not json", json.dumps({"format": "other"})])
def test_bad_tagger_file(tmp_path, content):
    path = tmp_path / "tagger.json"
    path.write_text(content)
    with pytest.raises(SpanftError, match="tagger.json.*not a tagger file"):
        load_tagger(path)


def test_cli_train_tagger_segment_and_segment_task(tmp_path, capsys):
    tagged = tmp_path / "tagged.txt"
    write_tagged(tagged, tiny_tagged_corpus())
    tagger = tmp_path / "tagger.json"
    assert main(["train-tagger", str(tagged), "--out", str(tagger)]) == 0
    (tmp_path / "in.txt").write_text("the blorn zib slowly wavved to every tarn.\n")
    assert main(["segment", "--method", "chunker", "--tagger", str(tagger), str(tmp_path / "in.txt")]) == 0
    assert capsys.readouterr().out == "the blorn zib | slowly wavved | to | every tarn | .\n"

    task = tmp_path / "task"
    task.mkdir()
    pd.DataFrame({"idx": np.arange(2, dtype=np.int64),
                  "words_a": [["The", "zib", "glorped", "."], ["a", "mupp"]],
                  "label": np.array([0, 1], dtype=np.int64)}).to_parquet(task / "train.parquet", index=False)
    out = tmp_path / "seg"
    assert main(["segment-task", str(task), "--out", str(out), "--method", "chunker", "--tagger", str(tagger)]) == 0
    result = pd.read_parquet(out / "train.parquet")
    assert [list(s) for s in result["spans_a"]] == [[2, 1, 1], [2]]
    info = read_segmentation_info(out / "train.parquet")
    assert info["method"] == "chunker" and info["tagger"].startswith("file:tagger.json")
    assert json.loads((out / "segmentation.json").read_text())["segmenter"]["tagger"] == info["tagger"]


def test_tagger_trained_on_synthetic_corpus(tmp_path):
    corpus = pytest.importorskip("spanft.data.corpus")
    path = tmp_path / "tagged.txt"
    corpus.write_tagged_sentences(path, 200, 0)
    sentences = read_tagged_sentences(path)
    tagger = train_tagger(sentences[:150], iterations=3)
    held_out = sentences[150:]
    gold = [t for s in held_out for _, t in s]
    guess = [t for s in held_out for _, t in tagger.tag([w for w, _ in s])]
    assert np.mean(np.array(gold) == np.array(guess)) > 0.8
