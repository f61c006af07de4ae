"""The measured table behind the power words (src/spanft/report/reach.csv) against an independent simulation of a
few cells: pilots of normal seeds, the report's printed figures at each pilot's sds, and scipy's Welch test
simulated at the true sds for the power those figures really have; the words against the table; the printed
range and per-seed sds against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spanft.report import reach
from spanft.report.bootstrap import summarize
from spanft.report.seedtest import detectable_gain, seed_test
from spanft.report.significance_tables import _detectable_cell
from spanft.report.verdict import Verdict
from spanft.report.verdict import test_name as row_test_name

PILOTS = 240
EXPERIMENTS = 400


def _simulated_cell(k: int, ratio: float, seed: int) -> tuple[float, float]:
    """(mean real power of the printed detectable gain, share of pilots whose printed range holds the truth)."""
    rng = np.random.default_rng([seed, k, int(ratio)])
    truth = detectable_gain(1.0, ratio ** 2, k, k)
    powers, holds = [], []
    for _ in range(PILOTS):
        pilot = seed_test(rng.normal(0, 1, k), rng.normal(0, ratio, k), range(k), range(k), 100)
        printed = pilot.detectable_gain
        low, high = pilot.detectable_range
        holds.append(low <= truth <= high)
        a = rng.normal(0.0, 1.0, (EXPERIMENTS, k))
        b = rng.normal(printed, ratio, (EXPERIMENTS, k))
        powers.append(np.mean(stats.ttest_ind(b, a, axis=1, equal_var=False).pvalue < 0.05))
    return float(np.mean(powers)), float(np.mean(holds))


@pytest.mark.parametrize("k, ratio", [(2, 4.0), (3, 1.0), (5, 2.0)])
def test_the_table_holds_what_an_independent_simulation_measures(k, ratio):
    row = next(r for r in reach.rows() if int(r["seeds"]) == k and r["ratio"] == ratio)
    power, holds = _simulated_cell(k, ratio, seed=7)
    # Monte Carlo: this simulation's sd about 0.02 (power) and 0.03 (range); the table's (400+ pilots) 0.02
    assert power == pytest.approx(row["power"], abs=0.07)
    assert holds == pytest.approx(row["range_holds"], abs=0.09)
    assert power < 0.8 - 0.02  # what the words must say: the printed figure falls short of 80% power


def test_the_words_quote_the_worst_ratio_floored():
    for k in (2, 3, 10):
        cells = [r for r in reach.rows() if int(r["seeds"]) == k]
        worst = min(r["power"] for r in cells)
        text = reach.detectable_words(k)
        assert f"found in about {math.floor(10 * worst + 1e-9)} of 10 experiments" in text
        assert f"with {k} seeds per arm" in text
    assert "with 10 seeds per arm (the table's nearest; these runs: 12)" in reach.detectable_words(12)


def test_the_printed_range_is_the_chi_square_interval_of_the_sd():
    """The range against an independent computation: scipy's chi-square interval of the pooled variance."""
    result = seed_test([0.70, 0.712, 0.76, 0.73], [0.705, 0.745, 0.752, 0.70], range(4), range(4), 277)
    df = 2 * (4 - 1)
    lower_q, upper_q = stats.chi2.interval(0.80, df)
    d = result.detectable_gain
    expected = (d * math.sqrt(df / upper_q), d * math.sqrt(df / lower_q))
    assert result.detectable_range == pytest.approx(expected, rel=1e-9)
    assert _detectable_cell(result) == f"±{100 * d:.1f} ({100 * expected[0]:.1f}–{100 * expected[1]:.1f})"


@pytest.mark.parametrize("seeds_b", [[5, 4, 3, 2, 1], [9, 7, 6, 5, 4]])
def test_per_seed_sds_are_over_the_tested_seeds_and_table2_names_the_test(seeds_b):
    scores_a = [0.70, 0.76, 0.73]
    scores_b = [0.90, 0.60, 0.74, 0.73, 0.75]  # the seeds left out spread far more
    result = seed_test(scores_a, scores_b, [1, 2, 3], seeds_b, 277)
    by_seed = dict(zip(seeds_b, scores_b))
    used = sorted(seeds_b)[:3] if not set(seeds_b) & {1, 2, 3} else [1, 2, 3]  # shared seeds, else the lowest
    sd_b = np.std([by_seed[s] for s in used], ddof=1)
    assert result.sd_b == pytest.approx(sd_b) and result.sd_a == pytest.approx(np.std(scores_a, ddof=1))
    line = Verdict(1, "t", "SF − baseline", "x", result, 3, 1.0, "test").line()
    assert f"per-seed sd {100 * np.std(scores_a, ddof=1):.1f} baseline, {100 * sd_b:.1f} compared" in line
    assert "the 2 other compared seeds left out to keep the arms equal" in line
    assert row_test_name(result) == "Welch t over seeds (3 per arm)"


def test_a_bootstrap_row_is_never_named_welch():
    distribution = np.linspace(-0.01, 0.03, 1999)
    result = summarize(0.01, distribution, 400)
    assert "Welch" not in row_test_name(result) and "bootstrap" in row_test_name(result)
