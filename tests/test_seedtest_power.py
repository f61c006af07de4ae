"""The power the report claims for its test over seeds (spanft.report.seedtest), against simulations of scipy's
Welch test: the power at a gain, the detectable gain, the 80% range of the seed sd, and the rule for arms of
unequal size (it holds its size, and a seed added to either arm never costs power)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from spanft.report.seedtest import (
    balanced,
    detectable_gain,
    sd_range,
    seed_test,
    welch_arrays,
    welch_power,
)
from spanft.report.verdict import Verdict

EXPERIMENTS = 20_000
TOLERANCE = 0.012  # over 4 Monte Carlo sds of a power near 0.8 with 20,000 experiments


def simulated(gain: float, sd_a: float, sd_b: float, k_a: int, k_b: int, seed: int = 0) -> float:
    """The share of normal experiments that scipy's Welch test (every seed, equal arms) calls significant."""
    rng = np.random.default_rng([seed, k_a, k_b])
    a = rng.normal(0.0, sd_a, (EXPERIMENTS, k_a))
    b = rng.normal(gain, sd_b, (EXPERIMENTS, k_b))
    return float(np.mean(stats.ttest_ind(b, a, axis=1, equal_var=False).pvalue < 0.05))


@pytest.mark.parametrize("k", [2, 3, 5, 10])
@pytest.mark.parametrize("sd_a, sd_b", [(1.0, 1.0), (1.0, 3.0)])
def test_the_detectable_gain_has_80_percent_power_in_a_simulation(k, sd_a, sd_b):
    gain = detectable_gain(sd_a ** 2, sd_b ** 2, k, k)
    assert simulated(gain, sd_a, sd_b, k, k) == pytest.approx(0.8, abs=TOLERANCE)


@pytest.mark.parametrize("gain, k", [(2.0, 2), (1.0, 3), (3.0, 3), (0.5, 10)])
def test_the_power_at_a_gain_is_the_simulated_power(gain, k):
    assert welch_power(gain, 1.0, 2.25, k, k) == pytest.approx(simulated(gain, 1.0, 1.5, k, k, seed=1), abs=TOLERANCE)


def test_with_two_seeds_the_detectable_gain_is_ten_seed_sds_not_the_known_variance_figure():
    # the noncentral t at the true se and df (2) said 5.65 sds; the real test needs about 10.4
    assert detectable_gain(1.0, 1.0, 2, 2) == pytest.approx(10.4, abs=0.1)


def test_the_sd_range_covers_the_true_sd_80_percent_of_the_time():
    rng = np.random.default_rng(5)
    for k in (2, 3, 5):
        a, b = rng.normal(0, 1, (EXPERIMENTS, k)), rng.normal(0, 1, (EXPERIMENTS, k))
        pooled = np.sqrt((a.var(axis=1, ddof=1) + b.var(axis=1, ddof=1)) / 2)
        low, high = sd_range(k, k)
        assert np.mean((low * pooled <= 1.0) & (1.0 <= high * pooled)) == pytest.approx(0.8, abs=TOLERANCE)


# ------------------------------------------------------------------------------------------- unequal arms


def test_unequal_arms_test_the_seeds_both_arms_ran():
    base = [0.70, 0.72, 0.75]
    sf = {5: 0.60, 1: 0.74, 2: 0.77, 4: 0.90, 3: 0.73}  # seeds 4 and 5 only in SF's arm
    result = seed_test(base, list(sf.values()), [1, 2, 3], list(sf), 277)
    scipy = stats.ttest_ind([0.74, 0.77, 0.73], base, equal_var=False)
    assert (result.p_value, result.low) == pytest.approx((scipy.pvalue, scipy.confidence_interval(0.95)[0]))
    assert result.seeds_tested == 3 and (result.runs_a, result.runs_b) == (3, 5)
    assert balanced([7, 3, 9], [1, 2], 2) == [1, 0]  # no seed shared: the lowest
    line = Verdict(1, "tiny", "SF − baseline", "RTE dev Acc", result, 3, 2.5, "test").line()
    assert "(Welch t over 3 baseline and 3 compared seeds, df " in line
    assert "; the 2 other compared seeds left out to keep the arms equal)" in line


@given(st.integers(2, 6), st.integers(2, 6), st.floats(0.25, 4.0), st.floats(0.5, 5.0))
@settings(max_examples=25, deadline=None)
def test_a_seed_added_to_either_arm_never_costs_power(k_a, k_b, ratio, gain):
    power = welch_power(gain, 1.0, ratio, k_a, k_b)
    assert welch_power(gain, 1.0, ratio, k_a + 1, k_b) >= power - 1e-12
    assert welch_power(gain, 1.0, ratio, k_a, k_b + 1) >= power - 1e-12


def test_unequal_arms_hold_their_size_where_welchs_df_did_not():
    # 2 baseline seeds spreading 4 times more than 10 SF seeds: Welch's df on every seed gives about 10%
    rng = np.random.default_rng(9)
    a, b = rng.normal(0, 4, (EXPERIMENTS, 2)), rng.normal(0, 1, (EXPERIMENTS, 10))
    assert np.mean(stats.ttest_ind(b, a, axis=1, equal_var=False).pvalue < 0.05) > 0.08
    assert np.mean(welch_arrays(a, b)[3] < 0.05) <= 0.05 + TOLERANCE / 2
    np.testing.assert_array_equal(welch_arrays(a, b)[3], welch_arrays(a, b[:, :2])[3])  # the first 2 SF seeds


def test_more_seeds_in_the_smaller_arm_raise_power():
    assert welch_power(3.0, 1.0, 1.0, 4, 5) > welch_power(3.0, 1.0, 1.0, 3, 5) == welch_power(3.0, 1.0, 1.0, 3, 3)
