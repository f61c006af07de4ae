"""Leaderboard files are whole: every test row is predicted, an empty sentence included.

The GLUE server wants a prediction for every test index. QQP, MNLI and QNLI test files hold rows with an empty
question or hypothesis; they are dropped from training only. Generated QQP and MNLI folders (invented words)
with empty sentences in train, dev and test go through prepare, segment, fine-tune (baseline and SF, one
epoch of a tiny encoder) and the submission zip, whose files must have as many rows as the test files.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bad_input import tiny_model  # noqa: E402

from spanft.cli import main  # noqa: E402

WORDS = ["the", "cat"]  # the tiny encoder's vocabulary


def _question(i: int) -> str:
    return " ".join(WORDS[(i + k) % 2] for k in range(1 + i % 3)) + " ?"


def _qqp(folder: Path) -> dict[str, int]:
    folder.mkdir(parents=True)
    header = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate"
    rows = [f"{i}\t{2 * i}\t{2 * i + 1}\t{'' if i == 3 else _question(i)}\t{_question(i + 1)}\t{i % 2}"
            for i in range(12)]
    (folder / "train.tsv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    (folder / "dev.tsv").write_text("\n".join([header, *rows[:6]]) + "\n", encoding="utf-8")
    test = [f"{i}\t{'' if i in (0, 4) else _question(i)}\t{'' if i == 5 else _question(i + 2)}" for i in range(7)]
    (folder / "test.tsv").write_text("\n".join(["id\tquestion1\tquestion2", *test]) + "\n", encoding="utf-8")
    return {"QQP": len(test)}


def _mnli(folder: Path) -> dict[str, int]:
    folder.mkdir(parents=True)
    head = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
            "sentence1_parse", "sentence2_parse", "sentence1", "sentence2"]
    labels = ["entailment", "neutral", "contradiction"]

    def line(i: int, first: str, second: str, *gold: str) -> str:
        return "\t".join([str(i), str(i), f"{i}n", "fiction", "", "", "", "", first, second, *gold])

    train = [line(i, _question(i), "" if i == 2 else _question(i + 1), labels[i % 3], labels[i % 3])
             for i in range(12)]
    dev = [line(i, _question(i), _question(i + 1), labels[i % 3], labels[i % 3], labels[i % 3], labels[i % 3],
                labels[i % 3], labels[i % 3]) for i in range(6)]
    (folder / "train.tsv").write_text("\n".join(["\t".join([*head, "label1", "gold_label"]), *train]) + "\n",
                                      encoding="utf-8")
    dev_head = "\t".join([*head, "label1", "label2", "label3", "label4", "label5", "gold_label"])
    counts = {}
    for name, stem in (("matched", "MNLI-m"), ("mismatched", "MNLI-mm")):
        (folder / f"dev_{name}.tsv").write_text("\n".join([dev_head, *dev]) + "\n", encoding="utf-8")
        test = [line(i, "" if i == 1 else _question(i), "" if i == 4 else _question(i + 1)) for i in range(5)]
        (folder / f"test_{name}.tsv").write_text("\n".join(["\t".join(head), *test]) + "\n", encoding="utf-8")
        counts[stem] = len(test)
    return counts


def _cli(*argv: str) -> None:
    assert main(list(argv)) == 0, argv


@pytest.mark.parametrize("task, stem_of, make", [("qqp", {"test": "QQP"}, _qqp),
                                                 ("mnli", {"test_matched": "MNLI-m", "test_mismatched": "MNLI-mm"},
                                                  _mnli)])
def test_every_test_row_has_a_prediction_in_the_submission(tmp_path, task, stem_of, make):
    expected = make(tmp_path / "raw")
    tiny_model(tmp_path / "encoder")
    (tmp_path / "dict.tsv").write_text("the cat\t9\n", encoding="utf-8")
    _cli("prepare-task", task, "--source", "local", "--task-dir", str(tmp_path / "raw"), "--out", str(tmp_path / "p"))
    _cli("segment-task", str(tmp_path / "p"), "--method", "ngram", "--dict", str(tmp_path / "dict.tsv"),
         "--out", str(tmp_path / "s"))
    counts = {}
    for variant, data in (("baseline", "p"), ("sf", "s")):
        run = tmp_path / "runs" / variant
        _cli("finetune", "--task", task, "--backbone", str(tmp_path / "encoder"), "--data", str(tmp_path / data),
             "--out", str(run), "--variant", variant, "--epochs", "1", "--batch-size", "4", "--max-seq-len", "16")
        preds = [f"{stem}={run / 'predictions' / f'{split}.tsv'}" for split, stem in stem_of.items()]
        _cli("submission", "--pred", *preds, "--out", str(tmp_path / f"{variant}.zip"))
        with zipfile.ZipFile(tmp_path / f"{variant}.zip") as archive:
            counts[variant] = {Path(name).stem: len(archive.read(name).decode().splitlines()) - 1
                               for name in archive.namelist()}
    print(f"{task}: test rows {expected}, submission rows {counts}")
    assert counts == {"baseline": expected, "sf": expected}
