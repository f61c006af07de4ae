"""The verdict rule (spanft.report.verdict) against a plain restatement of it, case by case."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanft.report.bootstrap import summarize
from spanft.report.verdict import (
    INCONCLUSIVE,
    LARGER,
    NO_INFERENCE,
    NOT_COMPUTABLE,
    OPPOSITE,
    REPRODUCED,
    SMALLER,
    SYNTHETIC,
    Verdict,
    judge,
)


def oracle(low: float, high: float, paper: float) -> str:
    """The README's rule, written for each sign of the paper's gain separately."""
    if paper > 0:
        if high < 0:
            return OPPOSITE
        if high < paper:
            return SMALLER
        if low <= 0:
            return INCONCLUSIVE  # holds 0 and the paper's gain
        return LARGER if low > paper else REPRODUCED
    if paper < 0:
        if low > 0:
            return OPPOSITE
        if low > paper:
            return SMALLER
        if high >= 0:
            return INCONCLUSIVE
        return LARGER if high < paper else REPRODUCED
    return REPRODUCED if low <= 0 <= high else LARGER if low > 0 else SMALLER


@pytest.mark.parametrize("low, high, paper, word", [
    (0.5, 2.0, 1.1, REPRODUCED),
    (1.1, 2.0, 1.1, REPRODUCED),  # the paper's gain on the interval's edge is inside it
    (0.2, 0.9, 1.1, SMALLER),
    (1.5, 3.0, 1.1, LARGER),
    (-0.1, 2.0, 1.1, INCONCLUSIVE),  # holds 0 and the paper's gain
    (0.0, 2.0, 1.1, INCONCLUSIVE),  # touches 0: no detectable gain, the paper's gain possible
    (-0.5, 0.8, 1.1, SMALLER),  # holds 0 but rules the paper's gain out
    (-3.0, -1.0, 1.1, OPPOSITE),  # excludes 0 on the other side
    (-3.0, 0.0, 1.1, SMALLER),  # touches 0 from below: not "opposite"
    (-2.0, -0.5, -1.0, REPRODUCED),  # a published loss, reproduced
    (0.5, 2.0, -1.0, OPPOSITE),
    (-2.0, 0.5, -1.0, INCONCLUSIVE),
    (-0.5, 0.5, 0.0, REPRODUCED),
    (0.1, 0.5, 0.0, LARGER),
    (math.nan, math.nan, 1.1, NOT_COMPUTABLE),
    (0.5, 2.0, math.nan, NOT_COMPUTABLE),
])
def test_cases_by_hand(low, high, paper, word):
    assert judge(low, high, paper)[0] == word


@given(st.floats(-20, 20), st.floats(0, 20), st.floats(-10, 10))
def test_rule_matches_its_restatement(low, width, paper):
    assert judge(low, low + width, paper)[0] == oracle(low, low + width, paper)


def _result(runs: int):
    """A gain of 0.02 with the interval [0.005, 0.035]: 1599 sorted resamples, j = 40 (the 40th and 1560th)."""
    distribution = np.concatenate([np.full(40, 0.005), np.linspace(0.005, 0.035, 1519), np.full(40, 0.035)])
    result = summarize(0.02, distribution, 400)
    return replace(result, runs_a=runs, runs_b=runs, runs_resampled=runs >= 2)


def test_verdict_line_states_gain_interval_and_paper_in_percentage_points():
    result = _result(3)
    verdict = Verdict(1, "tiny (for bert-base-uncased)", "SF − baseline", "CoLA dev MCC", result, 3, 1.3,
                      "test, BERT-base rows")
    assert verdict.word == REPRODUCED  # [0.5, 3.5] pp contains 1.3 and excludes 0
    line = verdict.line()
    assert line.startswith("**reproduced** — tiny (for bert-base-uncased), SF − baseline over CoLA dev MCC: +2.0 pp")
    assert "95% CI [+0.5, +3.5] over seeds and dev examples (two-level bootstrap, 3 baseline and 3 compared seeds)" \
        in line
    assert "p ≤ 2/(R+1) = 0.0013, 1599 resamples" in line  # no resample at or below 0: the floor 2/1600
    assert "paper (test, BERT-base rows): +1.3 pp" in line
    assert "pooled" not in line
    record = verdict.record()
    assert record["gain_pct"] == pytest.approx(2.0) and record["verdict"] == REPRODUCED
    assert record["p_at_floor"] is True and record["interval"] == "seeds and examples"
    # a verdict judged on the metric scale instead of percentage points would call this "larger"
    assert judge(result.low, result.high, 1.3)[0] != REPRODUCED


def test_one_seed_per_arm_gives_no_inference_and_labels_the_interval():
    verdict = Verdict(5, "tiny", "SF − baseline", "snli dev Acc", _result(1), 1, 1.3, "dev, BERT rows")
    assert verdict.word == NO_INFERENCE
    line = verdict.line()
    assert "example-level 95% CI [+0.5, +3.5] (dev examples only, runs held fixed)" in line
    assert "speaks of these trained runs, not of the method" in line
    assert REPRODUCED not in line and verdict.record()["interval"] == "examples only"


@pytest.mark.parametrize("runs", [1, 3])
@pytest.mark.parametrize("paper", [0.3, 1.3, -1.0])
def test_synthetic_data_never_judges_the_paper(runs, paper):
    verdict = Verdict(1, "tiny", "SF − baseline", "CoLA dev MCC", _result(runs), runs, paper, "test",
                      synthetic=True)
    line = verdict.line()
    assert verdict.word == SYNTHETIC and line.startswith(f"**{SYNTHETIC}**")
    assert "checks the machinery, not the method" in line
    for word in (REPRODUCED, LARGER, SMALLER, OPPOSITE, INCONCLUSIVE):
        assert word not in line


def test_p_value_reads_as_a_number_off_the_floor():
    distribution = np.concatenate([[-0.01] * 30, np.linspace(0.001, 0.04, 1569)])
    result = replace(summarize(0.02, distribution, 400), runs_a=2, runs_b=2, runs_resampled=True)
    line = Verdict(1, "tiny", "SF − baseline", "x", result, 2, 1.0, "test").line()
    assert "p = 0.039," in line and "≤" not in line  # 2 (30 + 1) / 1600 = 0.03875
