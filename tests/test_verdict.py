"""The verdict rule (spanft.report.verdict) against a plain restatement of it, case by case, and the verdict line's
numbers against independent computations (scipy's Welch test, statsmodels' power)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.power import TTestIndPower

from spanft.report.bootstrap import summarize
from spanft.report.seedtest import seed_test
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
    interval_level,
    judge,
)


def oracle(low: float, high: float, paper: float) -> str:
    """The README's rule on signed gains, written for each sign of the paper's gain separately."""
    if paper > 0:
        if high < 0:
            return OPPOSITE
        if low > paper:
            return LARGER
        if high < paper:
            return SMALLER
        return INCONCLUSIVE if low <= 0 else REPRODUCED
    if paper < 0:
        if low > 0:
            return OPPOSITE
        if high < paper:
            return SMALLER  # a larger loss than published
        if low > paper:
            return LARGER  # a smaller loss than published, or a gain
        return INCONCLUSIVE if high >= 0 else REPRODUCED
    if low > 0:
        return LARGER
    if high < 0:
        return SMALLER
    return INCONCLUSIVE  # holds 0: bounds the gain, does not show it is 0


@pytest.mark.parametrize("low, high, paper, word", [
    (0.5, 2.0, 1.1, REPRODUCED),
    (1.1, 2.0, 1.1, REPRODUCED),  # the paper's gain on the interval's edge is inside it
    (0.2, 0.9, 1.1, SMALLER),
    (1.5, 3.0, 1.1, LARGER),
    (-0.1, 2.0, 1.1, INCONCLUSIVE),  # holds 0 and the paper's gain
    (0.0, 2.0, 1.1, INCONCLUSIVE),  # touches 0: no detectable gain, the paper's gain possible
    (-0.5, 0.8, 1.1, SMALLER),  # holds 0 but lies below the paper's gain
    (-3.0, -1.0, 1.1, OPPOSITE),  # excludes 0 on the other side
    (-3.0, 0.0, 1.1, SMALLER),  # touches 0 from below: not "opposite"
    (-2.0, -0.5, -1.0, REPRODUCED),  # a published loss, reproduced
    (0.5, 2.0, -1.0, OPPOSITE),
    (-2.0, 0.5, -1.0, INCONCLUSIVE),
    (-5.0, -3.0, -1.0, SMALLER),  # a larger loss than the published one: signed, below it
    (-0.8, -0.2, -1.0, LARGER),  # a smaller loss than published: signed, above it
    (-0.5, 0.5, -1.0, LARGER),  # holds 0, lies above a published loss
    (-0.5, 0.5, 0.0, INCONCLUSIVE),  # a published 0 is not "reproduced" by an interval that holds 0
    (0.1, 0.5, 0.0, LARGER),
    (-0.5, -0.1, 0.0, SMALLER),
    (math.nan, math.nan, 1.1, NOT_COMPUTABLE),
    (0.5, 2.0, math.nan, NOT_COMPUTABLE),
])
def test_cases_by_hand(low, high, paper, word):
    assert judge(low, high, paper)[0] == word


@given(st.floats(-20, 20), st.floats(0, 20), st.floats(-10, 10) | st.just(0.0))
def test_rule_matches_its_restatement(low, width, paper):
    assert judge(low, low + width, paper)[0] == oracle(low, low + width, paper)


def test_reasons_follow_the_sign():
    assert "above the paper's gain" in judge(-0.8, -0.2, -1.0)[1]
    assert "below the paper's gain" in judge(-5.0, -3.0, -1.0)[1]
    assert "holds 0" in judge(-0.5, 0.5, -1.0)[1]
    assert "does not show it is 0" in judge(-0.5, 0.5, 0.0)[1]


# ------------------------------------------------------------------------------------------- results

# per-seed scores (metric units), 3 seeds each, mean != median in both arms
BASE = [0.700, 0.712, 0.760]  # mean 0.724, median 0.712
SF = [0.705, 0.745, 0.752]  # mean 0.734, median 0.745


def _bootstrap(runs: int):
    """A gain of 0.02 with the interval [0.005, 0.035]: 1599 sorted resamples, j = 40 (the 40th and 1560th)."""
    distribution = np.concatenate([np.full(40, 0.005), np.linspace(0.005, 0.035, 1519), np.full(40, 0.035)])
    result = summarize(0.02, distribution, 400)
    return replace(result, runs_a=runs, runs_b=runs, resampled_a=runs >= 2, resampled_b=runs >= 2)


def _welch(a=BASE, b=SF):
    return seed_test(a, b, list(range(1, len(a) + 1)), list(range(1, len(b) + 1)), 277)


def test_the_interval_is_scipys_welch_interval():
    result = _welch()
    scipy = stats.ttest_ind(SF, BASE, equal_var=False)
    low, high = scipy.confidence_interval(0.95)
    assert (result.gain, result.low, result.high, result.p_value) == pytest.approx(
        (np.mean(SF) - np.mean(BASE), low, high, scipy.pvalue), rel=1e-9)
    assert result.df == pytest.approx(scipy.df, rel=1e-9)
    assert result.low < result.gain < result.high
    assert result.gain == pytest.approx(0.010)  # the means' difference; the medians' would be 0.033


def test_an_inconclusive_verdict_says_what_these_runs_could_detect_and_what_the_paper_needs():
    result = _welch()
    verdict = Verdict(1, "tiny", "SF − baseline", "RTE dev Acc", result, 3, 1.1, "test, BERT-base rows")
    assert verdict.word == INCONCLUSIVE
    line = verdict.line()
    assert line.startswith("**inconclusive** — tiny, SF − baseline over RTE dev Acc: +1.0 pp, 95% CI [")
    assert f"[{100 * result.low:+.1f}, {100 * result.high:+.1f}] over seeds (Welch t over 3 baseline and 3 " \
           f"compared seeds, df {result.df:.1f}), p = {result.p_value:.2g}" in line
    # the detectable gain: the noncentral t by hand (scipy), at these runs' se and df
    se, df = result.se, result.df
    crit = stats.t.ppf(0.975, df)
    d = result.detectable_gain
    assert stats.nct.sf(crit, df, d / se) + stats.nct.cdf(-crit, df, d / se) == pytest.approx(0.8, abs=1e-6)
    assert f"these runs detect a gain of ±{100 * d:.1f} pp with 80% power" in line
    sd_a, sd_b = np.std(BASE, ddof=1), np.std(SF, ddof=1)
    assert f"(per-seed sd {100 * sd_a:.1f} baseline, {100 * sd_b:.1f} compared)" in line
    needed = verdict.seeds_needed
    assert f"the paper's +1.1 pp would need {needed} seeds per arm" in line
    record = verdict.record()
    assert record["detectable_gain_pct"] == pytest.approx(100 * d) and record["seeds_needed"] == needed
    assert record["interval"] == "seeds (Welch t)" and record["resamples"] is None


def test_seeds_needed_equals_statsmodels_power_with_equal_spreads():
    # equal per-seed sd in both arms: Welch's df with k per arm is 2k - 2, the pooled test statsmodels solves
    a, b = [0.70, 0.72, 0.74], [0.71, 0.73, 0.75]  # sd 0.02 in both
    result = _welch(a, b)
    analysis = TTestIndPower()
    for gain in (0.01, 0.02, 0.035):
        n = result.seeds_needed(gain)
        effect = gain / 0.02
        assert analysis.power(effect, n, 0.05, ratio=1.0) >= 0.8
        assert analysis.power(effect, n - 1, 0.05, ratio=1.0) < 0.8 or n == 2
    assert result.seeds_needed(0.0) is None and result.seeds_needed(math.nan) is None
    # the detectable gain of 3 vs 3 seeds with sd 0.02: statsmodels' effect size times the sd
    d = analysis.solve_power(effect_size=None, nobs1=3, alpha=0.05, power=0.8, ratio=1.0)
    assert result.detectable_gain == pytest.approx(d * 0.02, rel=1e-4)


@pytest.mark.parametrize("paper, word", [(1.0, INCONCLUSIVE), (0.0, INCONCLUSIVE), (-10.0, LARGER)])
def test_power_words_follow_every_sign_of_the_paper(paper, word):
    verdict = Verdict(1, "tiny", "SF − baseline", "x", _welch(), 3, paper, "test")
    assert verdict.word == word
    line = verdict.line()
    assert "these runs detect a gain of ±" in line  # the interval holds 0 whatever the paper's gain
    if paper == 0:
        assert "the paper's gain is 0, which no number of seeds tells from a small gain" in line
    else:
        assert f"the paper's {paper:+.1f} pp would need" in line


def test_a_significant_verdict_prints_no_power_words():
    verdict = Verdict(1, "tiny", "SF − baseline", "x", _welch([0.70, 0.71, 0.72], [0.80, 0.82, 0.81]), 3, 10.0,
                      "test")
    assert verdict.word == REPRODUCED and "detect" not in verdict.line()


def test_one_seed_per_arm_gives_no_inference_and_labels_the_interval():
    verdict = Verdict(5, "tiny", "SF − baseline", "snli dev Acc", _bootstrap(1), 1, 1.3, "dev, BERT rows")
    assert verdict.word == NO_INFERENCE
    line = verdict.line()
    assert "example-level 95% CI [+0.5, +3.5] (examples only)" in line
    assert "p ≤ 2/(R+1) = 0.0013, 1599 resamples" in line  # no resample at or below 0: the floor 2/1600
    assert "speaks of these trained runs, not of the method" in line
    assert REPRODUCED not in line and verdict.record()["interval"] == "examples only"
    assert "detect" not in line and verdict.record()["detectable_gain_pct"] is None


def test_a_two_level_bootstrap_draws_no_conclusion_either():
    # the report never judges the method on a bootstrap: its size breaks as the dev set grows (README)
    verdict = Verdict(1, "tiny", "SF − baseline", "x", _bootstrap(3), 3, 1.3, "test")
    assert verdict.word == NO_INFERENCE and verdict.record()["interval"] == "seeds and examples"


def test_interval_labels_name_the_resampled_arm():
    one_sided = replace(_bootstrap(1), runs_a=1, runs_b=3, resampled_a=False, resampled_b=True)
    assert interval_level(one_sided) == "examples and the compared arm's 3 runs (the baseline's 1 held fixed)"
    other = replace(_bootstrap(1), runs_a=3, runs_b=1, resampled_a=True, resampled_b=False)
    assert interval_level(other) == "examples and the baseline's 3 runs (the compared arm's 1 held fixed)"
    assert not one_sided.runs_resampled and not other.runs_resampled
    assert interval_level(_bootstrap(1)) == "examples only" and interval_level(_welch()) == "seeds (Welch t)"


@pytest.mark.parametrize("result", [_bootstrap(1), _welch()])
@pytest.mark.parametrize("paper", [0.3, 1.3, -1.0, 0.0])
def test_synthetic_data_never_judges_the_paper(result, paper):
    verdict = Verdict(1, "tiny", "SF − baseline", "CoLA dev MCC", result, 3, paper, "test", synthetic=True)
    line = verdict.line()
    assert verdict.word == SYNTHETIC and line.startswith(f"**{SYNTHETIC}**")
    assert "checks the machinery, not the method" in line
    for word in (REPRODUCED, LARGER, SMALLER, OPPOSITE, INCONCLUSIVE, "detect"):
        assert word not in line


def test_p_value_reads_as_a_number_off_the_floor():
    distribution = np.concatenate([[-0.01] * 30, np.linspace(0.001, 0.04, 1569)])
    result = replace(summarize(0.02, distribution, 400), runs_a=1, runs_b=1)
    line = Verdict(1, "tiny", "SF − baseline", "x", result, 1, 1.0, "test").line()
    assert "p = 0.039," in line and "≤" not in line  # 2 (30 + 1) / 1600 = 0.03875
