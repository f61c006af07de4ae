"""A small fixed-seed slice of benchmarks/bench_significance.py (the full grid is a benchmark, not a test): the
verdict's test (Welch over per-seed scores) keeps its size where the two-level bootstrap lost it, and finds a real
gain; the simulator's seed spread is what it is told."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_significance as bench  # noqa: E402

from spanft.readme import find_block  # noqa: E402

EXPERIMENTS = 2000
BOUND = 0.05 + 3 * math.sqrt(0.05 * 0.95 / EXPERIMENTS)  # 6.5%


@pytest.mark.parametrize("metric, k, n, sd", [("accuracy", 3, 9815, 2.5), ("mcc", 2, 3250, 1.0),
                                              ("pearson", 5, 1043, 4.0), ("f1", 10, 40000, 0.5)])
def test_no_gain_is_called_significant_at_most_at_its_nominal_rate(metric, k, n, sd):
    rng = np.random.default_rng([7, k, n])
    a, b = bench.simulate(rng, metric, bench.cells(metric), n, EXPERIMENTS, k, k, sd, sd, 0.0)
    assert bench.rejections(a, b)["welch"] <= BOUND


def test_a_real_gain_is_found():
    rng = np.random.default_rng(11)
    a, b = bench.simulate(rng, "accuracy", bench.cells("accuracy"), 9815, 500, 10, 10, 1.0, 1.0, 3.0)
    assert bench.rejections(a, b)["welch"] > 0.9


def test_unequal_arms_keep_their_size_where_the_pooled_test_does_not():
    # 5 baseline seeds spreading 1 point against 2 SF seeds spreading 4: the report's test (2 seeds of each arm)
    # holds, the pooled t over every seed does not
    rng = np.random.default_rng(13)
    a, b = bench.simulate(rng, "accuracy", bench.cells("accuracy"), 9815, EXPERIMENTS, 5, 2, 1.0, 4.0, 0.0)
    rates = bench.rejections(a, b)
    assert rates["welch"] <= BOUND and rates["student"] > 0.15


def test_the_simulated_seed_spread_and_gain_are_the_ones_asked_for():
    rng = np.random.default_rng(17)
    a, b = bench.simulate(rng, "accuracy", bench.cells("accuracy"), 40000, 400, 10, 10, 2.5, 2.5, 3.0)
    assert 100 * np.mean(np.std(a, axis=1, ddof=1)) == pytest.approx(2.5, rel=0.15)  # plus 0.2 points of coin flips
    assert 100 * (b.mean() - a.mean()) == pytest.approx(3.0, abs=0.3)


def test_the_readmes_significance_figures_are_the_benchmarks_output():
    # every line of the README's significance block (spanft readme) stands, verbatim, in benchmarks/RESULTS.md,
    # where bench_significance.py's output is recorded; the block holds the welch line and its worst cell
    root = Path(__file__).resolve().parents[1]
    block = find_block((root / "README.md").read_text(encoding="utf-8"), "significance")
    results = (root / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    assert any(line.startswith("| welch |") for line in lines), block
    for line in lines:
        assert line in results, line
