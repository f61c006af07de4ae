"""The unequal-arm sections of ``bench_significance.py``: the rejection rate as seeds are added to one arm (the
report's rule, Welch's df and Hsu's df on every seed), and the worst false-positive rate of equal arms over the
ratio of the arms' seed variances, and ties at 99% accuracy."""

from __future__ import annotations

import math

import numpy as np
from bench_significance import LEVEL, MU, cells, expected_metric, simulate
from scipy import optimize, stats

from spanft.report.seedtest import _rejection, welch_arrays

DESIGNS = ((2, 2), (2, 3), (2, 5), (3, 3), (3, 4), (3, 5), (5, 5), (5, 10), (10, 10))


def hsu_and_welch(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Rejection rates of Welch's t on every seed, with Welch's df and with Hsu's min(k) - 1 (the rules before)."""
    k_a, k_b = a.shape[1], b.shape[1]
    v_a, v_b = a.var(axis=1, ddof=1) / k_a, b.var(axis=1, ddof=1) / k_b
    t = (b.mean(axis=1) - a.mean(axis=1)) / np.sqrt(v_a + v_b)
    df = (v_a + v_b) ** 2 / (v_a ** 2 / (k_a - 1) + v_b ** 2 / (k_b - 1))
    return {"welch_df": float(np.mean(2 * stats.t.sf(np.abs(t), df) < LEVEL)),
            "hsu": float(np.mean(2 * stats.t.sf(np.abs(t), min(k_a, k_b) - 1) < LEVEL))}


def unequal_arms(args) -> list[str]:
    """Power as seeds are added to one arm, the same experiments throughout (each design takes its arms' first
    seeds): the report's rule never loses power; Welch's df or Hsu's on every seed, for comparison."""
    rng = np.random.default_rng(args.seed + 3)
    lines = [f"## Unequal arms: the rejection rate as seeds are added ({args.power_check:,} experiments per "
             "setting, every design cut from the same 10 vs 10 seeds)\n",
             "| setting | rule | " + " | ".join(f"{k_a} vs {k_b}" for k_a, k_b in DESIGNS) + " |",
             "|---|---|" + "---|" * len(DESIGNS)]
    settings = [("accuracy, dev 9,815, sd 1 both, gain +3", dict(sd_a=1.0, sd_b=1.0, gain=3.0)),
                ("accuracy, dev 9,815, baseline sd 1, SF sd 4, gain +3", dict(sd_a=1.0, sd_b=4.0, gain=3.0)),
                ("accuracy, dev 9,815, baseline sd 1, SF sd 4, no gain", dict(sd_a=1.0, sd_b=4.0, gain=0.0)),
                ("accuracy, dev 9,815, baseline sd 4, SF sd 1, no gain", dict(sd_a=4.0, sd_b=1.0, gain=0.0))]
    drops = []
    for name, options in settings:
        a, b = simulate(rng, "accuracy", cells("accuracy"), 9815, args.power_check, 10, 10, **options)
        rates = {design: {"report": float(np.mean(welch_arrays(a[:, :design[0]], b[:, :design[1]])[3] < LEVEL)),
                          **hsu_and_welch(a[:, :design[0]], b[:, :design[1]])} for design in DESIGNS}
        for rule, label in (("report", "the report's (equal arms)"), ("welch_df", "Welch's df, every seed"),
                            ("hsu", "Hsu's df, every seed")):
            lines.append(f"| {name} | {label} | " + " | ".join(f"{100 * rates[d][rule]:.1f}" for d in DESIGNS) + " |")
        if options["gain"]:
            drops += [f"{name}: {small} -> {large}" for small in DESIGNS for large in DESIGNS
                      if _one_more(small, large) and rates[large]["report"] < rates[small]["report"]]
    lost = "; ".join(drops) or "none"
    lines += ["", f"Designs with more seeds in an arm than another where the report's rule had less power: {lost}.", ""]
    args.power_drops = drops
    return lines


def _one_more(small: tuple[int, int], large: tuple[int, int]) -> bool:
    """``large`` has at least as many seeds in each arm as ``small``, and more in one."""
    return large != small and large[0] >= small[0] and large[1] >= small[1]


def equal_arms_worst(args) -> list[str]:
    """The unequal-arm rule's size is equal arms' size: Welch's worst false-positive rate over the ratio of the two
    arms' seed variances (normal seeds, the module's quadrature over 199 variance shares), and a simulation of
    normal seeds at the worst share as a check."""
    rng = np.random.default_rng(args.seed + 5)
    shares = np.linspace(0.005, 0.995, 199)
    experiments = 25 * args.experiments
    lines = ["## Equal arms, normal seeds: the worst false-positive rate over the ratio of the arms' seed variances\n",
             f"Quadrature over 199 variance shares; the simulation ({experiments:,} experiments of normal seeds) "
             "checks it at the worst share.\n",
             "| seeds per arm | worst rate (quadrature) | at sd ratio | simulated there |", "|---|---|---|---|"]
    for k in args.power_seeds:
        sizes = [_rejection(0.0, share, k, k, LEVEL) for share in shares]
        share = float(shares[int(np.argmax(sizes))])
        a = rng.normal(0.0, math.sqrt(share), (experiments, k))
        b = rng.normal(0.0, math.sqrt(1 - share), (experiments, k))
        simulated = float(np.mean(welch_arrays(a, b)[3] < LEVEL))
        ratio = math.sqrt(max(share, 1 - share) / min(share, 1 - share))
        lines.append(f"| {k} | {100 * max(sizes):.2f}% | {ratio:.1f} | {100 * simulated:.2f}% |")
    return lines + [""]


def ties(args) -> list[str]:
    """At 99% accuracy on RTE's dev size with 2 seeds, ties are common: no p = 0, no zero-width interval."""
    rng = np.random.default_rng(args.seed + 4)
    dev = cells("accuracy")
    mu = MU + optimize.brentq(lambda x: expected_metric("accuracy", dev, MU + x) - 0.99, 0.0, 20.0)
    a, b = simulate(rng, "accuracy", dev, 277, args.experiments, 2, 2, 0.5, 0.5, 0.0, mu=mu)
    gain, se, _, p = welch_arrays(a, b)
    tied = (a.var(axis=1) == 0) | (b.var(axis=1) == 0)
    before = (se == 0) & (gain != 0)  # the rule before: p = 0 and a zero-width interval
    return [f"## Ties: 99% accuracy, dev 277, 2 vs 2 seeds, seed sd 0.5, no gain ({args.experiments:,} experiments)\n",
            "| an arm's seeds tie | both arms tie, means differ (p = 0 before) | p = 0 now | no inference now | "
            "false positives now |", "|---|---|---|---|---|",
            f"| {100 * np.mean(tied):.1f}% | {int(before.sum())} | {int(np.sum(p == 0))} | "
            f"{100 * np.mean(np.isnan(p)):.1f}% | {100 * np.mean(p < LEVEL):.2f}% |", ""]
