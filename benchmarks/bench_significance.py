"""Calibration of the verdict's test of SF against the baseline: false-positive rate and power over the range the
paper profile covers (seeds per arm 2, 3, 5, 10; dev sets of 277 to 40,000 examples; seed-to-seed spread 0.5 to
4 points; accuracy, F1, MCC, Pearson).

The generative story (the simulator's model of fine-tuning, not the test's):

- **A dev set** of n examples is drawn afresh for every simulated experiment. Each example has a gold label and a
  difficulty b on the logit scale, b ~ N(0, 1.5) (taken at 24 equal-probability levels, so the dev set is a
  multinomial count of examples per (label, level) cell; the correctness draws below are then exact per example).
  Classification: binary labels, positive with probability 0.5 (accuracy), 0.68 (F1, MRPC's share) or 0.69
  (MCC, CoLA's share). Regression (Pearson): a gold score y on 11 levels 0, 0.5, ..., 5 (uniform, STS-B's range),
  and 8 difficulty levels.
- **A run** of arm a (baseline or SF) with seed s has an ability theta = mu + delta_a + sigma z_s, z_s ~ N(0, 1)
  (``--tails t3``: Student t with 3 df, scaled to sd 1 — occasional bad seeds; ``--shared rho``: the baseline and SF
  runs of one seed share a part rho of z_s, as when they share a data order and initialisation). sigma is set so
  that the seed-to-seed sd of the metric with an unlimited dev set is the cell's "sd" (points); delta_SF shifts
  the metric by the cell's true gain (0 for the false-positive rate).
- **Per example**: a classification run gets example i right with probability logistic(theta - b_i),
  independently over examples given theta; a wrong answer is the other label. Regression: the run predicts
  x_i = y_i + 0.5 exp(b_i - theta) e_i, e_i ~ N(0, 1) independent per run and example (a harder example and a
  weaker run are noisier). Every run is scored on the whole dev set: accuracy, F1 of the positive class, MCC,
  Pearson.

So a run's score carries its seed's ability and its own per-example coin flips on a dev set shared by every run
of the experiment — the two sources the issue names — and nothing in the story is a t distribution or a bootstrap.

Each cell simulates ``--experiments`` experiments with no true gain (default 10,000: the Monte Carlo sd of a 5%
rate is then 0.22 points, so an exact 5% test cannot cross 6% by chance) and ``--power-experiments`` with a
true gain of 1 and of 3 points (default 2,000). The tests compared, all at nominal 5% two-sided:

- ``welch`` — :func:`spanft.report.seedtest.welch_arrays`, the report's code (Welch's t over per-seed scores;
  with arms of unequal size, min(k) seeds of each);
- ``student`` — the pooled-variance t-test (scipy ``ttest_ind(equal_var=True)``);
- ``paired`` — the paired t-test over seeds (scipy ``ttest_rel``), seed s of the baseline with seed s of SF.

Besides the grid, three stress slices under no gain: unequal seeds per arm with SF's seeds spreading twice as
much; heavy-tailed seeds (t3); a shared seed component (rho = 0.5). Then (``--power-only`` runs these alone):

- **the power line**: for 2, 3, 5 and 10 seeds per arm, the detectable gain the report prints at the true
  per-seed variances (measured over pilot experiments), and the share of experiments with that true gain that
  the test calls significant (it must be 80% ± 3 points); beside it the figure printed before issue 44 (the
  noncentral t at the true se and df) and its power, each experiment's own printed gain (10th–90th
  percentile) and how often its printed 80% range holds the figure at the true variances;
- **unequal arms**: the rejection rate of the report's rule, of Welch's df on every seed and of Hsu's df on every
  seed, over designs from 2 vs 2 to 10 vs 10 cut from the same experiments, with and without a gain; the run
  fails if adding a seed to either arm ever lowers the report's power;
- **ties**: 99% accuracy on 277 examples, 2 vs 2 seeds: how often an arm's seeds tie, how often the rule
  before printed p = 0, and that none does now.

    OMP_NUM_THREADS=1 python benchmarks/bench_significance.py            # the full grid (a few minutes, one core)
    OMP_NUM_THREADS=1 python benchmarks/bench_significance.py --quick    # a small slice
    OMP_NUM_THREADS=1 python benchmarks/bench_significance.py --power-only   # the last three sections (seconds)
    OMP_NUM_THREADS=1 python benchmarks/bench_significance.py --reduced --stories   # degenerate seeds, reduced
    OMP_NUM_THREADS=1 python benchmarks/bench_significance.py --reach-table src/spanft/report/reach.csv

The full run ends with two more sections: degenerate seeds (skewed, collapsing, spreads 8x apart: Welch's size
and power beside the remedies, ``significance_stories.py``) and what the printed detectable gain, its range
and the seeds needed reach at the measured sds (``significance_reach.py``; ``--reach-table`` writes the table
the report's words are read from).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize, stats

from spanft.report.seedtest import detectable_gain, sd_range, welch_arrays

SEEDS = (2, 3, 5, 10)
DEV_SIZES = (277, 1043, 3250, 9815, 40000)
SPREADS = (0.5, 1.0, 2.5, 4.0)
METRICS = ("accuracy", "f1", "mcc", "pearson")
GAINS = (1.0, 3.0)
LEVEL = 0.05
LIMIT = 0.06
POWER_TARGET = 0.80
DIFFICULTY_SD = 1.5
MU = 1.5  # the runs' mean ability (logit scale): accuracy about 0.76, F1 0.83, MCC 0.51, Pearson 0.84
POSITIVE = {"accuracy": 0.5, "f1": 0.68, "mcc": 0.69}


@dataclass(frozen=True)
class DevCells:
    """The dev set's cells: each cell's probability, label (or gold score) and difficulty."""

    probability: np.ndarray
    label: np.ndarray
    difficulty: np.ndarray


def cells(metric: str) -> DevCells:
    levels = 8 if metric == "pearson" else 24
    difficulty = DIFFICULTY_SD * stats.norm.ppf((np.arange(levels) + 0.5) / levels)
    if metric == "pearson":
        labels = np.linspace(0, 5, 11)
        share = np.full(labels.size, 1 / labels.size)
    else:
        labels = np.array([0.0, 1.0])
        share = np.array([1 - POSITIVE[metric], POSITIVE[metric]])
    label, level = np.meshgrid(labels, difficulty, indexing="ij")
    probability = np.outer(share, np.full(levels, 1 / levels))
    return DevCells(probability.ravel(), label.ravel(), level.ravel())


def _classification_metric(metric: str, tp, fn, tn, fp):
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric == "accuracy":
            return (tp + tn) / (tp + fn + tn + fp)
        if metric == "f1":
            return np.where(tp > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
        spread = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
        return np.where(spread > 0, (tp * tn - fp * fn) / np.sqrt(spread), 0.0)


def _noise_scale(theta, difficulty):
    return 0.5 * np.exp(difficulty - theta)


def expected_metric(metric: str, dev: DevCells, theta: float) -> float:
    """The metric of a run of ability ``theta`` on an unlimited dev set (for calibrating sd and gain)."""
    if metric == "pearson":
        mean_y = np.sum(dev.probability * dev.label)
        var_y = np.sum(dev.probability * (dev.label - mean_y) ** 2)
        noise = np.sum(dev.probability * _noise_scale(theta, dev.difficulty) ** 2)
        return float(np.sqrt(var_y / (var_y + noise)))
    p = 1 / (1 + np.exp(-(theta - dev.difficulty)))
    positive = dev.label == 1
    tp = np.sum((dev.probability * p)[positive])
    fn = np.sum(dev.probability[positive]) - tp
    tn = np.sum((dev.probability * p)[~positive])
    fp = np.sum(dev.probability[~positive]) - tn
    return float(_classification_metric(metric, tp, fn, tn, fp))


def slope(metric: str, dev: DevCells, mu: float = MU) -> float:
    h = 1e-4
    return (expected_metric(metric, dev, mu + h) - expected_metric(metric, dev, mu - h)) / (2 * h)


def t3(rng, size):
    return rng.standard_t(3, size) / math.sqrt(3.0)  # t with 3 df has variance 3


def simulate(rng: np.random.Generator, metric: str, dev: DevCells, n: int, experiments: int, k_a: int, k_b: int,
             sd_a: float, sd_b: float, gain: float, tails: str = "normal", shared: float = 0.0, mu: float = MU):
    """Per-seed scores (experiments, k_a) and (experiments, k_b) of the story above; sd and gain in points (on
    the slope at ``mu``: :func:`ability_gain` turns an exact metric gain into this ``gain``)."""
    scale = slope(metric, dev, mu)
    counts = rng.multinomial(n, dev.probability, size=experiments).astype(np.float64)  # (E, C)
    draw = (lambda size: t3(rng, size)) if tails == "t3" else (lambda size: rng.standard_normal(size))
    k = max(k_a, k_b)
    common = draw((experiments, k))
    thetas = []
    for arm, (runs, sd, shift) in enumerate(((k_a, sd_a, 0.0), (k_b, sd_b, gain))):
        own = draw((experiments, runs))
        z = math.sqrt(shared) * common[:, :runs] + math.sqrt(1 - shared) * own
        thetas.append(mu + shift / 100 / scale + sd / 100 / scale * z)
    return tuple(_scores(rng, metric, dev, counts, theta) for theta in thetas)


def _scores(rng, metric: str, dev: DevCells, counts: np.ndarray, theta: np.ndarray) -> np.ndarray:
    m = counts[:, None, :]  # (E, 1, C)
    if metric == "pearson":
        y = dev.label[None, None, :]
        c = _noise_scale(theta[..., None], dev.difficulty[None, None, :])  # (E, k, C)
        size = np.broadcast_to(m, c.shape)
        s = rng.standard_normal(c.shape) * np.sqrt(size)  # sum of the cell's N(0, 1) noises
        q = np.where(size > 0, s ** 2 / np.maximum(size, 1), 0.0) + 2 * rng.gamma(np.maximum(size - 1, 0) / 2)
        n = size.sum(axis=-1)
        sum_y = (size * y).sum(axis=-1)
        sum_yy = (size * y * y).sum(axis=-1)
        sum_x = sum_y + (c * s).sum(axis=-1)
        sum_xy = sum_yy + (y * c * s).sum(axis=-1)
        sum_xx = sum_yy + (2 * y * c * s + c * c * q).sum(axis=-1)
        return (n * sum_xy - sum_x * sum_y) / np.sqrt((n * sum_xx - sum_x ** 2) * (n * sum_yy - sum_y ** 2))
    p = 1 / (1 + np.exp(-(theta[..., None] - dev.difficulty[None, None, :])))
    correct = rng.binomial(np.broadcast_to(m, p.shape).astype(np.int64), p).astype(np.float64)
    positive = dev.label == 1
    tp = correct[..., positive].sum(axis=-1)
    tn = correct[..., ~positive].sum(axis=-1)
    fn = m[..., positive].sum(axis=-1) - tp
    fp = m[..., ~positive].sum(axis=-1) - tn
    return _classification_metric(metric, tp, fn, tn, fp)


def rejections(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """The share of experiments each test calls significant at 5%."""
    out = {"welch": float(np.mean(welch_arrays(a, b)[3] < LEVEL))}
    out["student"] = float(np.mean(stats.ttest_ind(b, a, axis=-1, equal_var=True).pvalue < LEVEL))
    if a.shape == b.shape:
        out["paired"] = float(np.mean(stats.ttest_rel(b, a, axis=-1).pvalue < LEVEL))
    return out


def cell(rng, metric, n, k, sd, experiments, power_experiments):
    dev = cells(metric)
    a, b = simulate(rng, metric, dev, n, experiments, k, k, sd, sd, 0.0)
    row = {"size": rejections(a, b), "measured_sd": 100 * float(np.mean(np.std(np.concatenate([a, b], axis=1),
                                                                               axis=1, ddof=1)))}
    for gain in GAINS:
        a, b = simulate(rng, metric, dev, n, power_experiments, k, k, sd, sd, gain)
        row[gain] = rejections(a, b)
    return row


def grid(args) -> list[dict]:
    rng = np.random.default_rng(args.seed)
    rows = []
    combos = list(itertools.product(args.metrics, args.seeds, args.spreads, args.dev_sizes))
    for metric, k, sd, n in combos:
        result = cell(rng, metric, n, k, sd, args.experiments, args.power_experiments)
        rows.append({"metric": metric, "k": k, "sd": sd, "n": n, **result})
    return rows


def print_grid(rows: list[dict], args) -> None:
    print(f"## Grid: false-positive rate of Welch's t over per-seed scores (nominal 5%, {args.experiments:,} "
          f"experiments per cell), power at a true gain of 1 and 3 points ({args.power_experiments:,} each)\n")
    print("Each cell: false positives % / power at +1 point % / power at +3 points %. "
          "sd: the seed-to-seed spread of the metric with an unlimited dev set (points); the measured per-seed sd "
          "(dev-set coin flips included) is in brackets for the smallest dev set.\n")
    for metric in args.metrics:
        print(f"### {metric}\n")
        print("| seeds per arm | seed sd | " + " | ".join(f"dev {n:,}" for n in args.dev_sizes) + " |")
        print("|---|---|" + "---|" * len(args.dev_sizes))
        for k in args.seeds:
            for sd in args.spreads:
                cells_ = [r for r in rows if r["metric"] == metric and r["k"] == k and r["sd"] == sd]
                text = [f"{100 * r['size']['welch']:.1f} / {100 * r[GAINS[0]]['welch']:.0f} / "
                        f"{100 * r[GAINS[1]]['welch']:.0f}" for r in cells_]
                print(f"| {k} | {sd:g} ({cells_[0]['measured_sd']:.1f}) | " + " | ".join(text) + " |")
        print()
    print("## The tests side by side: worst false-positive cell, and mean power over the grid\n")
    print("| test | worst false-positive rate (cell) | cells over 6% | mean power, +1 point | mean power, +3 points |")
    print("|---|---|---|---|---|")
    for test in ("welch", "student", "paired"):
        worst = max(rows, key=lambda r: r["size"][test])
        over = sum(r["size"][test] > LIMIT for r in rows)
        print(f"| {test} | {100 * worst['size'][test]:.2f}% ({worst['metric']}, {worst['k']} seeds, sd "
              f"{worst['sd']:g}, dev {worst['n']:,}) | {over} of {len(rows)} | "
              f"{100 * np.mean([r[GAINS[0]][test] for r in rows]):.1f}% | "
              f"{100 * np.mean([r[GAINS[1]][test] for r in rows]):.1f}% |")
    print()
    print("Worst Welch false-positive rate per number of seeds: " + "; ".join(
        f"{k} seeds {100 * max(r['size']['welch'] for r in rows if r['k'] == k):.2f}%" for k in args.seeds))
    print()


def stress(args) -> list[str]:
    """No true gain, under departures from the grid's story."""
    rng = np.random.default_rng(args.seed + 1)
    lines = ["## Stress slices (no true gain; false-positive rate %, " + f"{args.experiments:,} experiments each; "
             "welch: the report's test)\n",
             "| slice | metric | dev | welch | student | paired |", "|---|---|---|---|---|---|"]
    slices = [
        ("2 baseline vs 5 SF seeds, SF's seeds spread 4 points, baseline's 1", dict(k_a=2, k_b=5, sd_a=1.0, sd_b=4.0)),
        ("3 baseline vs 10 SF seeds, SF's seeds spread 4 points, baseline's 1", dict(k_a=3, k_b=10, sd_a=1.0, sd_b=4.0)),
        ("5 baseline vs 2 SF seeds, SF's seeds spread 4 points, baseline's 1", dict(k_a=5, k_b=2, sd_a=1.0, sd_b=4.0)),
        ("3 seeds, heavy-tailed seeds (t3), sd 2.5", dict(k_a=3, k_b=3, sd_a=2.5, sd_b=2.5, tails="t3")),
        ("5 seeds, heavy-tailed seeds (t3), sd 4", dict(k_a=5, k_b=5, sd_a=4.0, sd_b=4.0, tails="t3")),
        ("3 seeds, shared seed component rho 0.5, sd 2.5", dict(k_a=3, k_b=3, sd_a=2.5, sd_b=2.5, shared=0.5)),
    ]
    for (name, options), metric, n in itertools.product(slices, ("accuracy", "mcc"), (277, 9815)):
        dev = cells(metric)
        a, b = simulate(rng, metric, dev, n, args.experiments, gain=0.0, **options)
        rates = rejections(a, b)
        lines.append(f"| {name} | {metric} | {n:,} | {100 * rates['welch']:.1f} | {100 * rates['student']:.1f} | "
                     f"{100 * rates['paired']:.1f} |" if "paired" in rates else
                     f"| {name} | {metric} | {n:,} | {100 * rates['welch']:.1f} | {100 * rates['student']:.1f} | — |")
    shared = [("3 seeds, rho 0.5, sd 2.5, true gain 3", dict(k_a=3, k_b=3, sd_a=2.5, sd_b=2.5, shared=0.5))]
    lines += ["", "Power with a shared seed component (rho 0.5; what pairing would buy if the arms shared it):", "",
              "| slice | metric | dev | welch | student | paired |", "|---|---|---|---|---|---|"]
    for (name, options), metric, n in itertools.product(shared, ("accuracy",), (277, 9815)):
        a, b = simulate(rng, metric, cells(metric), n, args.power_experiments, gain=3.0, **options)
        rates = rejections(a, b)
        lines.append(f"| {name} | {metric} | {n:,} | {100 * rates['welch']:.1f} | {100 * rates['student']:.1f} | "
                     f"{100 * rates['paired']:.1f} |")
    return lines


# ------------------------------------------------------------------------------------------- the power line

POWER_SETTING = ("accuracy", 40000, 0.5)  # metric, dev size, seed sd: a printed gain that stays in the linear range
PILOT = 2000  # experiments (10 vs 10 seeds) that measure the true per-seed variances


def ability_gain(metric: str, dev: DevCells, points: float) -> float:
    """The ``gain`` argument of :func:`simulate` whose expected metric gain is exactly ``points``."""
    base = expected_metric(metric, dev, MU)
    shift = optimize.brentq(lambda x: expected_metric(metric, dev, MU + x) - base - points / 100, 0.0, 10.0)
    return 100 * shift * slope(metric, dev)


def true_variances(rng, metric: str, dev: DevCells, n: int, sd: float, points: float) -> tuple[float, float]:
    """Each arm's per-seed variance within an experiment (the mean of unbiased sample variances, PILOT
    experiments of 10 vs 10 seeds), with SF ``points`` ahead."""
    a, b = simulate(rng, metric, dev, n, PILOT, 10, 10, sd, sd, ability_gain(metric, dev, points))
    return float(np.mean(a.var(axis=1, ddof=1))), float(np.mean(b.var(axis=1, ddof=1)))


def noncentral_gain(var_a: float, var_b: float, k: int) -> float:
    """The detectable gain printed before (issue 44): the noncentral t at the true se and Welch df, as if both
    were known."""
    se = math.sqrt((var_a + var_b) / k)
    df = (var_a + var_b) ** 2 * (k - 1) / (var_a ** 2 + var_b ** 2)
    critical = stats.t.ppf(0.975, df)
    def power(d: float) -> float:  # the far tail is NaN in scipy where it underflows: 0
        return float(stats.nct.sf(critical, df, d) + np.nan_to_num(stats.nct.cdf(-critical, df, d)))

    return se * optimize.brentq(lambda d: power(d) - 0.8, 0.0, 30.0)


def printed_gains(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The detectable gain each experiment prints (from its own sample variances): the gain is the se times a
    factor of the variance share, interpolated over 41 shares."""
    k = a.shape[1]
    var_a, var_b = a.var(axis=1, ddof=1), b.var(axis=1, ddof=1)
    shares = np.linspace(0.0, 1.0, 41)
    factor = [detectable_gain(k * share, k * (1 - share), k, k) for share in shares]  # se = 1
    return np.sqrt((var_a + var_b) / k) * np.interp(var_a / (var_a + var_b), shares, factor)


def power_line(args) -> list[str]:
    """At the detectable gain the report prints (the true variances measured), the test's power is 80%."""
    rng = np.random.default_rng(args.seed + 2)
    metric, n, sd = POWER_SETTING
    dev = cells(metric)
    lines = [f"## The power line: the test's power at the detectable gain the report prints ({metric}, dev {n:,}, "
             f"seed sd {sd:g} points; {args.power_check:,} experiments per row)\n",
             "Printed: the detectable gain at the true per-seed variances (measured over "
             f"{PILOT:,} pilot experiments, SF's at the printed gain). Before: the noncentral t at the true se and "
             "df, the figure printed before issue 44. Each experiment's own printed gain (from its sample "
             "variances) varies: its 10th–90th percentile, and how often its printed 80% range holds the "
             "printed gain at the true variances.\n",
             "| seeds per arm | printed gain (points) | power at it | within 80 ± 3 | before: gain | power at it | "
             "printed per experiment, 10th–90th pct | 80% range holds it |",
             "|---|---|---|---|---|---|---|---|"]
    var_a, var_b = true_variances(rng, metric, dev, n, sd, 0.0)
    worst = 0.0
    for k in args.power_seeds:
        gain = 100 * detectable_gain(var_a, var_b, k, k)
        var_a1, var_b1 = true_variances(rng, metric, dev, n, sd, gain)
        gain = 100 * detectable_gain(var_a1, var_b1, k, k)
        a, b = simulate(rng, metric, dev, n, args.power_check, k, k, sd, sd, ability_gain(metric, dev, gain))
        found = float(np.mean(welch_arrays(a, b)[3] < LEVEL))
        printed = 100 * printed_gains(a, b)
        low, high = sd_range(k, k)
        covered = float(np.mean((low * printed <= gain) & (gain <= high * printed)))
        before = 100 * noncentral_gain(var_a1, var_b1, k)
        a0, b0 = simulate(rng, metric, dev, n, args.power_check, k, k, sd, sd, ability_gain(metric, dev, before))
        found_before = float(np.mean(welch_arrays(a0, b0)[3] < LEVEL))
        worst = max(worst, abs(found - POWER_TARGET))
        lines.append(f"| {k} | {gain:.2f} | {100 * found:.1f}% | {'yes' if abs(found - POWER_TARGET) <= 0.03 else 'NO'}"
                     f" | {before:.2f} | {100 * found_before:.1f}% | {np.percentile(printed, 10):.2f}–"
                     f"{np.percentile(printed, 90):.2f} | {100 * covered:.0f}% |")
    mc = 100 * math.sqrt(POWER_TARGET * (1 - POWER_TARGET) / args.power_check)
    lines += ["", f"Largest distance from 80% power: {100 * worst:.1f} points (Monte Carlo sd {mc:.1f} points).", ""]
    args.power_worst = worst
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small slice: 3 seeds, dev 277 and 9,815, 2,000 runs")
    parser.add_argument("--experiments", type=int, default=10_000)
    parser.add_argument("--power-experiments", type=int, default=2_000)
    parser.add_argument("--power-check", type=int, default=4_000,
                        help="experiments per row of the power-line, unequal-arm and tie sections")
    parser.add_argument("--seed", type=int, default=20240531)
    parser.add_argument("--stress-only", action="store_true", help="only the stress slices")
    parser.add_argument("--power-only", action="store_true",
                        help="only the power line, the unequal arms and the ties")
    parser.add_argument("--reduced", action="store_true",
                        help="every section at a reduced size (--quick, and fewer pilots for the last two): a check "
                             "that it runs, not a measurement to quote")
    parser.add_argument("--stories", action="store_true", help="only the degenerate seeds (significance_stories.py)")
    parser.add_argument("--reach", action="store_true",
                        help="only what the printed power figures reach (significance_reach.py)")
    parser.add_argument("--reach-table", type=Path, help="write the reach table there (the report reads "
                                                         "src/spanft/report/reach.csv)")
    args = parser.parse_args(argv)
    args.quick = args.quick or args.reduced
    args.metrics, args.seeds, args.spreads, args.dev_sizes = METRICS, SEEDS, SPREADS, DEV_SIZES
    args.power_seeds = SEEDS
    if args.quick:
        args.seeds, args.dev_sizes, args.spreads = (3,), (277, 9815), (1.0, 4.0)
        args.experiments, args.power_experiments, args.power_check = 2_000, 500, 1_000
    start = time.perf_counter()
    if args.stories or args.reach or args.reach_table:
        return _degenerate_sections(args)
    if args.stress_only:
        print("\n".join(stress(args)))
        return 0
    if args.power_only:
        return _power_sections(args, start)
    rows = grid(args)
    print_grid(rows, args)
    if not args.quick:
        print("\n".join(stress(args)))
    worst = max(r["size"]["welch"] for r in rows)
    print(f"\nWorst Welch false-positive rate over the grid: {100 * worst:.2f}% "
          f"({'within' if worst <= LIMIT else 'OVER'} the 6% limit)\n")
    args.stories = args.reach = True
    return max(_power_sections(args, start), 0 if worst <= LIMIT else 1, _degenerate_sections(args))


def _degenerate_sections(args) -> int:
    """Degenerate seeds (skewed, collapsing, unequal spreads) and what the printed power figures reach."""
    import significance_reach
    import significance_stories

    if args.stories:
        experiments, power = (4_000, 1_000) if args.reduced else (args.experiments, args.power_experiments)
        rows = significance_stories.table(np.random.default_rng(args.seed + 6), experiments, power)
        print("\n".join(significance_stories.lines(rows, experiments, power)))
    if args.reach or args.reach_table:
        pilots, seed_pilots = (400, 10) if args.reduced else (4_000, 100)
        rows = significance_reach.table(pilots, seed_pilots)  # its own seed: --reach-table rewrites reach.csv alike
        print("\n".join(significance_reach.lines(rows)))
        if args.reach_table:
            significance_reach.write(rows, args.reach_table)
    return 0


def _power_sections(args, start: float) -> int:
    from significance_arms import equal_arms_worst, ties, unequal_arms  # they import this module

    print("\n".join(power_line(args) + unequal_arms(args) + equal_arms_worst(args) + ties(args)))
    ok = args.power_worst <= 0.03 and not args.power_drops
    within = "yes" if args.power_worst <= 0.03 else "NO"
    kept = "yes" if not args.power_drops else "NO"
    print(f"Power at the printed gain within 80 ± 3 points for every seed count: {within}; unequal arms never lost "
          f"power: {kept}; {time.perf_counter() - start:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
