"""Segmentation front ends: span formatting, the segment CLI, segment-task, the segmenter of a method."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pandas as pd
import pytest

from spanft.cli import main
from spanft.errors import SpanftError
from spanft.text.greedy import GreedySegmenter
from spanft.text.random_spans import RandomSegmenter
from spanft.text.segmentation import (
    format_spans,
    make_segmenter,
    read_segmentation_info,
    segment_task_dir,
)

# ---- formatting and CLI -------------------------------------------------------------------------

def test_format_spans():
    assert format_spans(["a", "b", "c"], [2, 1]) == "a b | c"
    assert format_spans([], []) == ""


@pytest.fixture
def dict_file(tmp_path):
    path = tmp_path / "dict.txt"
    path.write_text("new york\t9\nnew york city\t5\nof the\t3\n", encoding="utf-8")
    return path


def test_cli_segment_file(tmp_path, dict_file, capsys):
    text = tmp_path / "in.txt"
    text.write_text("I love New York City.\n\nnone of the above\n", encoding="utf-8")
    assert main(["segment", "--dict", str(dict_file), str(text)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "I | love | New York City | .", "", "none | of the | above"]


def test_cli_segment_stdin_pretokenized(dict_file, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("new york,city of the\n".encode())))
    assert main(["segment", "--dict", str(dict_file), "--pretokenized"]) == 0
    assert capsys.readouterr().out == "new | york,city | of the\n"


def test_cli_segment_random_keeps_span_counts(tmp_path, dict_file, capsys):
    text = tmp_path / "in.txt"
    text.write_text("new york city is big of the\n", encoding="utf-8")
    assert main(["segment", "--dict", str(dict_file), "--method", "random", "--seed", "4", str(text)]) == 0
    line = capsys.readouterr().out.strip()
    assert len(line.split(" | ")) == 4 and line.replace(" | ", " ") == "new york city is big of the"


@pytest.mark.parametrize("setup, message", [
    (lambda p: None, "--dict is required"),
    (lambda p: (p / "d.txt").write_text("new york 9\n"), "d.txt:1: expected 'ngram<TAB>count'"),
    (lambda p: (p / "in.txt").write_bytes(b"ok\n\xff\n"), "in.txt:2: not valid UTF-8"),
])
def test_cli_segment_errors(tmp_path, dict_file, capsys, setup, message):
    setup(tmp_path)
    text = tmp_path / "in.txt"
    if not text.exists():
        text.write_text("new york\n")
    args = ["segment", str(text)]
    if message != "--dict is required":
        args += ["--dict", str(tmp_path / "d.txt") if (tmp_path / "d.txt").exists() else str(dict_file)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("spanft: error: ") and message in err and len(err.strip().splitlines()) == 1


def test_cli_segment_missing_stdin_bad_bytes(dict_file, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"fine\nbad \xc3\n")))
    assert main(["segment", "--dict", str(dict_file)]) == 2
    assert "<stdin>:2: not valid UTF-8" in capsys.readouterr().err


# ---- segment-task -------------------------------------------------------------------------------

def _write_pair_task(directory):
    directory.mkdir(parents=True)
    train = pd.DataFrame({
        "idx": np.array([0, 1, 2], dtype=np.int64),
        "words_a": [["New", "York", "City", "is", "big"], ["none", "of", "the"], []],
        "words_b": [["of", "the", "New", "York"], ["x"], ["New", "York"]],
        "label": np.array([1, 0, 2], dtype=np.int64),
    })
    test = pd.DataFrame({"idx": np.array([7], dtype=np.int64), "words_a": [["New", "York"]],
                         "words_b": [["of"]], "label": np.array([-1], dtype=np.int64)})
    train.to_parquet(directory / "train.parquet", index=False)
    test.to_parquet(directory / "test.parquet", index=False)
    return train, test


def test_segment_task_pair(tmp_path, dict_file):
    import pyarrow as pa
    import pyarrow.parquet as pq

    train, _ = _write_pair_task(tmp_path / "in")
    out = tmp_path / "out"
    assert main(["segment-task", str(tmp_path / "in"), "--out", str(out), "--dict", str(dict_file)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".spanft-output", "segmentation.json", "test.parquet", "train.parquet"]
    result = pd.read_parquet(out / "train.parquet")
    assert result["idx"].tolist() == [0, 1, 2] and result["label"].tolist() == [1, 0, 2]
    assert [list(w) for w in result["words_a"]] == [list(w) for w in train["words_a"]]  # case kept
    assert [list(s) for s in result["spans_a"]] == [[3, 1, 1], [1, 2], []]
    assert [list(s) for s in result["spans_b"]] == [[2, 2], [1], [2]]
    schema = pq.read_schema(out / "train.parquet")
    assert schema.field("spans_a").type == pa.list_(pa.int32())
    assert read_segmentation_info(out / "test.parquet")["method"] == "ngram"
    info = json.loads((out / "segmentation.json").read_text())
    assert info["splits"]["train"]["mean_spans_a"] == pytest.approx(5 / 3)
    assert info["splits"]["test"]["rows"] == 1


def test_segment_task_single_sentence_random(tmp_path, dict_file):
    src = tmp_path / "in"
    src.mkdir()
    pd.DataFrame({"idx": np.arange(2, dtype=np.int64), "words_a": [["New", "York", "City", "x"], ["a"]],
                  "label": np.array([0, 1])}).to_parquet(src / "validation.parquet", index=False)
    out = tmp_path / "out"
    segment_task_dir(src, out, RandomSegmenter(GreedySegmenter.from_dictionary(dict_file, max_n=5), seed=2))
    result = pd.read_parquet(out / "validation.parquet")
    assert "spans_b" not in result.columns
    spans = [list(s) for s in result["spans_a"]]
    assert [sum(s) for s in spans] == [4, 1] and [len(s) for s in spans] == [2, 1]
    assert read_segmentation_info(out / "validation.parquet")["seed"] == 2


def test_segment_task_errors_leave_no_output(tmp_path, dict_file, capsys):
    out = tmp_path / "out"
    assert main(["segment-task", str(tmp_path / "missing"), "--out", str(out), "--dict", str(dict_file)]) == 2
    assert "prepared task directory not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["segment-task", str(tmp_path / "empty"), "--out", str(out), "--dict", str(dict_file)]) == 2
    assert "no <split>.parquet files" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    pd.DataFrame({"idx": [0], "words_a": [["a"]]}).to_parquet(bad / "train.parquet")
    (bad / "validation.parquet").write_bytes(b"not parquet")
    assert main(["segment-task", str(bad), "--out", str(out), "--dict", str(dict_file)]) == 2
    assert "validation.parquet: cannot read parquet" in capsys.readouterr().err
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_make_segmenter_rejects_unknown_method():
    with pytest.raises(SpanftError, match="unknown segmentation method"):
        make_segmenter("bpe", max_n=5)
