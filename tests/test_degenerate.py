"""Degenerate seeds named in the verdict line (spanft.report.degenerate): failed runs found from real predictions
against the constant predictor, seeds far outside their arm by the MAD rule recomputed by hand, and the verdict
that rests on one of them said so, with scipy's Welch p-value without that seed."""

from __future__ import annotations

import numpy as np
from scipy import stats

from spanft.english import p_round
from spanft.report.degenerate import far_outside, flagged, words
from spanft.report.seedtest import seed_test
from spanft.report.verdict import Verdict


def test_a_failed_run_is_named_and_the_verdict_resting_on_it_says_so():
    a, b = [0.70, 0.71, 0.72], [0.80, 0.81, 0.50]  # compared seed 3 failed (at the majority class, say)
    result = seed_test(a, b, [1, 2, 3], [1, 2, 3], 1000, failed_b=[3])
    line = Verdict(1, "tiny", "SF − baseline", "x", result, 3, 1.0, "test").line()
    assert result.p_value > 0.05  # with the failed run: no significant gain
    without = stats.ttest_ind(b[:2], a, equal_var=False).pvalue
    assert without < 0.05
    assert ("compared seed 3 (failed run: no better than a constant predictor; the verdict rests on it: without "
            f"it p = {p_round(without)} and the interval would exclude 0)") in line


def test_a_seed_far_outside_its_arm_is_named_even_when_the_verdict_does_not_rest_on_it():
    a = [0.70, 0.71, 0.705, 0.708]
    b = [0.80, 0.81, 0.805, 0.95]
    median = np.median(b)
    mad = 1.4826 * np.median(np.abs(np.subtract(b, median)))
    assert abs(0.95 - median) > 5 * mad and all(abs(v - median) <= 5 * mad for v in b[:3])
    assert far_outside(b, [1, 2, 3, 4]) == [4] and far_outside(a, [1, 2, 3, 4]) == []
    result = seed_test(a, b, [1, 2, 3, 4], [1, 2, 3, 4], 1000)
    assert flagged(result) == [("b", 4, "far outside its arm")]
    text = words(result)
    assert text == "; degenerate seeds: compared seed 4 (far outside its arm)"  # significant with or without it


def test_tied_seeds_on_a_small_dev_set_are_not_far():
    assert far_outside([0.70, 0.70, 0.704], [1, 2, 3]) == []  # the MAD floor: 0.5 points
    assert far_outside([0.70, 0.70, 0.60], [1, 2, 3]) == [3]


def test_no_degenerate_seed_no_words_and_one_seed_arms_are_left_alone():
    result = seed_test([0.70, 0.71, 0.72], [0.73, 0.74, 0.75], [1, 2, 3], [1, 2, 3], 1000)
    assert words(result) == "" and "degenerate" not in Verdict(1, "t", "SF − baseline", "x", result, 3, 1.0,
                                                               "test").line()
