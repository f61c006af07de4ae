"""Constant-predictor scores and flags (spanft.report.trivial) against hand computations."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from spanft.data.registry import get_task
from spanft.report.runs import read_run
from spanft.report.trivial import (
    check_run,
    check_runs,
    constant_prediction,
    trivial_score,
)


def test_trivial_scores_by_hand():
    mrpc = get_task("mrpc")
    gold = [1, 1, 1, 0, 0]  # 3 equivalent, 2 not
    # all-positive F1: TP 3, FP 2, FN 0 -> 6 / 8; all-negative F1 is 0
    assert trivial_score(mrpc, "f1", gold) == (pytest.approx(0.75), "predicting 'equivalent' for every example")
    # majority accuracy 3/5; the minority's 2/5 must not be taken
    assert trivial_score(mrpc, "accuracy", gold)[0] == pytest.approx(0.6)
    assert trivial_score(get_task("qqp"), "f1", [0, 0, 0, 1])[0] == pytest.approx(2 / 5)  # TP 1, FP 3
    assert trivial_score(get_task("cola"), "mcc", [1, 0, 1])[0] == 0.0
    assert trivial_score(get_task("mnli"), "accuracy", [2, 2, 1, 0, 2])[0] == pytest.approx(3 / 5)
    assert trivial_score(get_task("stsb"), "pearson", [1.0, 2.0])[0] == 0.0
    conll = get_task("conll2003")
    assert trivial_score(conll, "f1", [[1, 2, 0], [0, 5]])[0] == 0.0


def test_constant_predictions():
    assert constant_prediction(get_task("sst2"), [1, 1, 1]) == "class 'positive' for every example"
    assert constant_prediction(get_task("sst2"), [1, 0, 1]) == ""
    assert constant_prediction(get_task("stsb"), [2.5, 2.5]) == "the same output 2.5 for every example"
    assert constant_prediction(get_task("stsb"), [2.5, 2.6]) == ""
    assert constant_prediction(get_task("conll2003"), [[0, 0], [0]]) == "tag 'O' for every word"


def write_run(root: Path, task_name: str, rows: list[tuple[str, str]]) -> Path:
    path = root / "glue/tiny" / task_name / "baseline/seed1"
    (path / "predictions").mkdir(parents=True)
    split = get_task(task_name).selection_split
    lines = "".join(f"{i}\t{g}\t{p}\n" for i, (g, p) in enumerate(rows))
    (path / "predictions" / f"{split}.tsv").write_text("idx\tgold\tpred\n" + lines, encoding="utf-8")
    (path / "metrics.json").write_text(json.dumps({"task": task_name, "main_metric": "f1", "metrics": {}}))
    return path


def test_runs_at_trivial_or_constant_are_flagged(tmp_path):
    rows = [("equivalent", "equivalent")] * 3 + [("not_equivalent", "equivalent")] * 2
    run = read_run(write_run(tmp_path, "mrpc", rows), "glue", "tiny", "mrpc", "baseline", 1)
    check = check_run(run, "validation", "f1")
    assert check.score == pytest.approx(0.75) and check.trivial == pytest.approx(0.75)
    assert check.at_or_below_trivial and check.constant == "class 'equivalent' for every example"
    assert check.describe() == ("glue/tiny/mrpc/baseline/seed1 validation: f1 75.0 ≤ 75.0, the score of predicting "
                                "'equivalent' for every example; constant predictor: class 'equivalent' for every "
                                "example")
    good = [("equivalent", "equivalent")] * 3 + [("not_equivalent", "not_equivalent"), ("not_equivalent", "equivalent")]
    better = read_run(write_run(tmp_path / "b", "mrpc", good), "glue", "tiny", "mrpc", "baseline", 1)
    assert not check_run(better, "validation", "f1").flagged  # F1 6/7 > 0.75
    assert [c.flagged for c in check_runs([run, better])] == [True, False]


def test_constant_regression_has_an_undefined_score_and_is_flagged(tmp_path):
    run = read_run(write_run(tmp_path, "stsb", [("1.0", "2.5"), ("4.0", "2.5")]), "glue", "tiny", "stsb", "baseline", 1)
    check = check_run(run, "validation", "pearson")
    assert math.isnan(check.score) and check.flagged
    assert "the same output 2.5" in check.describe()
    assert check_run(run, "test", "pearson") is None  # no predictions of that split
