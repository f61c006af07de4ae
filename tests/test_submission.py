"""GLUE submission writer: file names, headers, leaderboard label strings, STS-B clipping, errors."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from spanft.cli import main
from spanft.errors import SpanftError
from spanft.report.submission import write_glue_submission

# stem -> (predicted label names / scores in the trainer's TSV, what the leaderboard file must say), by hand
CASES = {
    "CoLA": (["acceptable", "unacceptable"], ["1", "0"]),
    "SST-2": (["positive", "negative"], ["1", "0"]),
    "MRPC": (["equivalent", "not_equivalent"], ["1", "0"]),
    "QQP": (["duplicate", "not_duplicate"], ["1", "0"]),
    "STS-B": (["5.7", "-0.2", "2.34567"], ["5.000", "0.000", "2.346"]),
    "MNLI-m": (["entailment", "neutral", "contradiction"], ["entailment", "neutral", "contradiction"]),
    "MNLI-mm": (["contradiction"], ["contradiction"]),
    "AX": (["neutral", "entailment"], ["neutral", "entailment"]),
    "QNLI": (["not_entailment", "entailment"], ["not_entailment", "entailment"]),
    "RTE": (["entailment", "not_entailment"], ["entailment", "not_entailment"]),
    "WNLI": (["entailment", "not_entailment"], ["1", "0"]),
}


def write_predictions(path: Path, preds: list[str], first_index: int = 10) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{first_index + i}\t\t{p}\n" for i, p in enumerate(preds))
    path.write_text("idx\tgold\tpred\n" + rows, encoding="utf-8")
    return path


def read_zip(path: Path) -> dict[str, str]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name).decode("utf-8") for name in archive.namelist()}


def test_all_eleven_files_with_leaderboard_strings(tmp_path):
    preds = {stem: write_predictions(tmp_path / f"{stem}.pred.tsv", names) for stem, (names, _) in CASES.items()}
    stems = write_glue_submission(preds, tmp_path / "glue.zip")
    files = read_zip(tmp_path / "glue.zip")
    assert sorted(files) == sorted(f"{stem}.tsv" for stem in CASES) and sorted(stems) == sorted(CASES)
    for stem, (_, expected) in CASES.items():
        lines = files[f"{stem}.tsv"].splitlines()
        assert lines[0] == "index\tprediction"
        assert lines[1:] == [f"{10 + i}\t{label}" for i, label in enumerate(expected)], stem


def test_cli_refuses_a_missing_prediction_file(tmp_path, capsys):
    """A mistyped path would zip nothing of it and exit 0: it is an error naming the argument, and no zip."""
    cola = write_predictions(tmp_path / "cola.tsv", ["acceptable"])
    code = main(["submission", "--pred", f"CoLA={cola}", f"RTE={tmp_path / 'absent.tsv'}", "--out", str(tmp_path / "s.zip")])
    assert code == 2
    assert f"predictions file {tmp_path / 'absent.tsv'} not found" in capsys.readouterr().err
    assert not (tmp_path / "s.zip").exists()


@pytest.mark.parametrize(
    "content, message",
    [
        ("idx\tgold\tpred\n0\t\tmaybe\n", r"cola\.tsv:2: prediction 'maybe' is not one of \['unacceptable', 'acceptable'\]"),
        ("index\tprediction\n0\t1\n", r"cola\.tsv:1: header must be"),
        ("idx\tgold\tpred\n0\tacceptable\n", r"cola\.tsv:2: expected 3 tab-separated fields, found 2"),
        ("idx\tgold\tpred\n0\t\tacceptable\n0\t\tacceptable\n", r"cola\.tsv:3: idx 0 appears twice"),
        ("idx\tgold\tpred\n", r"cola\.tsv: no predictions"),
    ],
)
def test_bad_prediction_files(tmp_path, content, message):
    (tmp_path / "cola.tsv").write_text(content, encoding="utf-8")
    with pytest.raises(SpanftError, match=message):
        write_glue_submission({"CoLA": tmp_path / "cola.tsv"}, tmp_path / "out.zip")
    assert not (tmp_path / "out.zip").exists()  # atomic: nothing half-written


def test_unknown_stem(tmp_path, capsys):
    cola = write_predictions(tmp_path / "cola.tsv", ["acceptable"])
    with pytest.raises(SpanftError, match="unknown GLUE submission file"):
        write_glue_submission({"COLA": cola}, tmp_path / "out.zip")
    assert main(["submission", "--pred", f"MNLI={cola}", "--out", str(tmp_path / "o.zip")]) == 2
    assert "valid: CoLA, SST-2" in capsys.readouterr().err
    assert main(["submission", "--pred", "CoLA", "--out", str(tmp_path / "o.zip")]) == 2
