"""The verdict rule (spanft.report.verdict) against a plain restatement of it, case by case."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanft.report.bootstrap import summarize
from spanft.report.verdict import (
    LARGER,
    NOT_COMPUTABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    SMALLER,
    Verdict,
    judge,
)


def oracle(low: float, high: float, paper: float) -> str:
    """The README's rule, written for each sign of the paper's gain separately."""
    if paper > 0:
        if low <= 0:
            return NOT_REPRODUCED
        return LARGER if low > paper else SMALLER if high < paper else REPRODUCED
    if paper < 0:
        if high >= 0:
            return NOT_REPRODUCED
        return LARGER if high < paper else SMALLER if low > paper else REPRODUCED
    return REPRODUCED if low <= 0 <= high else NOT_REPRODUCED


@pytest.mark.parametrize("low, high, paper, word", [
    (0.5, 2.0, 1.1, REPRODUCED),
    (1.1, 2.0, 1.1, REPRODUCED),  # the paper's gain on the interval's edge is inside it
    (0.2, 0.9, 1.1, SMALLER),
    (1.5, 3.0, 1.1, LARGER),
    (-0.1, 2.0, 1.1, NOT_REPRODUCED),  # includes 0
    (0.0, 2.0, 1.1, NOT_REPRODUCED),  # touches 0: no detectable gain
    (-3.0, -1.0, 1.1, NOT_REPRODUCED),  # the other side
    (-2.0, -0.5, -1.0, REPRODUCED),  # a published loss, reproduced
    (-0.5, 0.5, 0.0, REPRODUCED),
    (0.1, 0.5, 0.0, NOT_REPRODUCED),
    (math.nan, math.nan, 1.1, NOT_COMPUTABLE),
    (0.5, 2.0, math.nan, NOT_COMPUTABLE),
])
def test_cases_by_hand(low, high, paper, word):
    assert judge(low, high, paper)[0] == word


@given(st.floats(-20, 20), st.floats(0, 20), st.floats(-10, 10))
def test_rule_matches_its_restatement(low, width, paper):
    assert judge(low, low + width, paper)[0] == oracle(low, low + width, paper)


def test_verdict_line_states_gain_interval_and_paper_in_percentage_points():
    result = summarize(0.02, np.linspace(0.005, 0.035, 101), 400)
    verdict = Verdict(1, "tiny (for bert-base-uncased)", "SF − baseline", "CoLA dev MCC", result, 3, 1.3,
                      "test, BERT-base rows")
    assert verdict.word == REPRODUCED  # [0.6, 3.4] pp contains 1.3 and excludes 0
    line = verdict.line()
    assert line.startswith("**reproduced** — tiny (for bert-base-uncased), SF − baseline over CoLA dev MCC: +2.0 pp")
    assert "95% CI [+0.6, +3.4]" in line and "3 seeds pooled, 101 resamples" in line
    assert "paper (test, BERT-base rows): +1.3 pp" in line
    record = verdict.record()
    assert record["gain_pct"] == pytest.approx(2.0) and record["verdict"] == REPRODUCED
    # a verdict judged on the metric scale instead of percentage points would call this "larger"
    assert judge(result.low, result.high, 1.3)[0] != REPRODUCED
