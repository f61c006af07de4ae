"""The verdict rule (spanft.report.verdict) against a plain restatement of it, case by case, and the verdict line's
numbers against independent computations (scipy's Welch test; the power and the seeds needed against a
simulation of scipy's Welch test)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from spanft.report.bootstrap import summarize
from spanft.report.seedtest import seed_test
from spanft.report.verdict import (
    INCONCLUSIVE,
    LARGER,
    NO_INFERENCE,
    NO_SPREAD,
    NOT_COMPUTABLE,
    OPPOSITE,
    REPRODUCED,
    SMALLER,
    SYNTHETIC,
    Verdict,
    end,
    interval_level,
    judge,
    p_round,
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
    assert "above the paper's published loss: a smaller loss, or a gain" in judge(-0.8, -0.2, -1.0)[1]
    assert "below the paper's published loss: a larger loss" in judge(-5.0, -3.0, -1.0)[1]
    assert "loss" not in judge(0.2, 0.9, 1.1)[1] and "loss" not in judge(1.5, 3.0, 1.1)[1]
    assert "below the paper's gain" in judge(0.2, 0.9, 1.1)[1] and "above the paper's gain" in judge(1.5, 3.0, 1.1)[1]
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


def simulated_power(gain: float, sd_a: float, sd_b: float, k: int, experiments: int = 20_000, seed: int = 0):
    """The share of normal experiments (k seeds per arm, true gain ``gain``) that scipy's Welch test calls
    significant at 5%: the oracle for the power the report claims."""
    rng = np.random.default_rng([seed, k])
    a = rng.normal(0.0, sd_a, (experiments, k))
    b = rng.normal(gain, sd_b, (experiments, k))
    return float(np.mean(stats.ttest_ind(b, a, axis=1, equal_var=False).pvalue < 0.05))


def test_an_inconclusive_verdict_says_what_these_runs_could_detect_and_what_the_paper_needs():
    result = _welch()
    verdict = Verdict(1, "tiny", "SF − baseline", "RTE dev Acc", result, 3, 1.1, "test, BERT-base rows")
    assert verdict.word == INCONCLUSIVE
    line = verdict.line()
    assert line.startswith("**inconclusive** — tiny, SF − baseline over RTE dev Acc: +1.0 pp, 95% CI [")
    assert f"[{100 * result.low:+.1f}, {100 * result.high:+.1f}] over seeds (Welch t over 3 baseline and 3 " \
           f"compared seeds, df {result.df:.1f}), p = {result.p_value:.2g}" in line
    sd_a, sd_b = np.std(BASE, ddof=1), np.std(SF, ddof=1)
    d = result.detectable_gain
    # the detectable gain: scipy's Welch test, simulated at these runs' per-seed sds, finds it 80% of the time
    assert simulated_power(d, sd_a, sd_b, 3) == pytest.approx(0.8, abs=0.012)
    assert f"these runs detect a gain of ±{100 * d:.1f} pp with 80% power, a rough estimate from 3 seeds" in line
    low, high = result.detectable_range
    assert low < d < high and f"(80% range {100 * low:.1f}–{100 * high:.1f} from the uncertain seed sd" in line
    assert f"per-seed sd {100 * sd_a:.1f} baseline, {100 * sd_b:.1f} compared)" in line
    needed = verdict.seeds_needed
    fewest, most = result.seeds_range(0.011)
    assert fewest < needed < most
    assert f"the paper's +1.1 pp would need {needed} seeds per arm ({fewest}–{most}; from 3 seeds, such a figure" in line
    record = verdict.record()
    assert record["detectable_gain_pct"] == pytest.approx(100 * d) and record["seeds_needed"] == needed
    assert record["interval"] == "seeds (Welch t)" and record["resamples"] is None


@pytest.mark.parametrize("sd_a, sd_b", [(0.02, 0.02), (0.01, 0.04)])
def test_seeds_needed_is_the_fewest_with_80_percent_simulated_power(sd_a, sd_b):
    # unequal spreads: Welch's df falls towards k - 1, so a pooled df (2k - 2) would claim too few seeds
    result = _welch([0.70, 0.70 + sd_a, 0.70 + 2 * sd_a], [0.71, 0.71 + sd_b, 0.71 + 2 * sd_b])
    assert (result.sd_a, result.sd_b) == pytest.approx((sd_a, sd_b))
    for gain in (0.02, 0.035):
        n = result.seeds_needed(gain)
        assert simulated_power(gain, sd_a, sd_b, n) >= 0.8 - 0.012
        assert n == 2 or simulated_power(gain, sd_a, sd_b, n - 1) < 0.8 + 0.012
    assert result.seeds_needed(0.0) is None and result.seeds_needed(math.nan) is None


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


# ------------------------------------------------------------------------------------------- ties and printing


def test_tied_seeds_at_99_percent_give_no_inference_never_p_0():
    # 2 seeds per arm on RTE's 277 examples, every seed of an arm right on the same count: 274 and 275
    base, sf = [274 / 277] * 2, [275 / 277] * 2
    result = seed_test(base, sf, [1, 2], [1, 2], 277)
    assert result.no_spread and not result.method_inference
    assert math.isnan(result.p_value) and math.isnan(result.low) and math.isnan(result.high)
    verdict = Verdict(1, "tiny", "SF − baseline", "RTE dev Acc", result, 2, 2.5, "test")
    assert verdict.word == NO_SPREAD
    line = verdict.line()
    assert "p = 0" not in line and "CI" not in line and "+0.4 pp over seeds, no interval" in line
    assert verdict.record()["p_value"] is None and verdict.record()["detectable_gain_pct"] is None
    # one arm tied is enough: its sample variance of 0 is no estimate to test with
    one = seed_test(base, [274 / 277, 276 / 277], [1, 2], [1, 2], 277)
    assert one.no_spread and math.isnan(one.p_value)


@given(st.floats(1e-12, 1.0, allow_nan=False))
def test_a_p_value_never_rounds_onto_or_across_005(p):
    for digits in (2, 3):
        shown = float(p_round(p, digits))
        assert (shown > 0.05) == (p > 0.05) and (shown < 0.05) == (p < 0.05)
        assert shown == pytest.approx(p, rel=0.06, abs=10.0 ** -(digits + 1))


def test_the_rte_p_value_above_005_prints_above_it():
    assert p_round(0.050016) == "0.051" and p_round(0.050016, 3) == "0.0501" and p_round(0.04996) == "0.049"
    assert p_round(0.05) == "0.05" and p_round(0.031) == "0.031"


@given(st.floats(-50, 50, allow_nan=False))
def test_an_interval_end_prints_0_only_at_0_and_keeps_its_sign(value):
    text = end(value)
    assert (float(text) == 0) == (value == 0)
    assert float(text) == 0 or math.copysign(1, float(text)) == math.copysign(1, value)
    assert float(text) == pytest.approx(value, rel=0.5, abs=0.051)
