"""Degenerate seeds: the verdict test's false-positive rate and power when seed scores are skewed, when some
seeds collapse (the failed runs known from fine-tuning BERT on small sets), and when one arm spreads 8x the
other — Welch's t as the report ran it before, beside the remedies (``bench_significance.py --stories``).

Seed scores here are drawn directly (points; the dev-set story of bench_significance.py adds nothing the
question needs): per arm, k seeds with mean 80 and the arm's spread, the spreads 0.5 and 4 points (ratio 8) or
both 2 points.

- **normal**: normal seeds.
- **lognormal**: a long left tail (bad seeds): ``80 - sd * (exp(Z) - e^0.5) / sqrt((e - 1) e)``, Z ~ N(0, 1),
  so mean 80 and sd ``sd`` (skewness 6.2).
- **collapse 10%**: each seed independently collapses with probability 0.1 to the score of a constant predictor
  (50 points: the majority class of a balanced task), else normal.

The tests, all at nominal 5% two-sided:

- ``welch``: Welch's t over every seed (:func:`spanft.report.seedtest.welch_arrays`), the report before;
- ``failed out``: Welch's t over the seeds left after removing failed runs, a failed run being one no better than a
  constant predictor (the rule of Mosbach, Andriushchenko and Klakow 2021, "On the stability of fine-tuning BERT":
  a run at or below the majority-class score failed; Dodge et al. 2020 report such runs apart too) — the report
  now (:mod:`spanft.report.degenerate`); an arm left with under 2 seeds gives no test (counted as not rejected,
  and its share printed);
- ``yuen 20%``: Yuen's trimmed-mean Welch test, 20% trimmed (scipy ``ttest_ind(trim=0.2)``; with under 5 seeds
  it trims nothing and is Welch's), the textbook robust alternative (Wilcox, "Introduction to robust estimation
  and hypothesis testing").

Power: the share called significant at a true gain of 3 points (the noisy arm's sd is 4).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from spanft.report.seedtest import LEVEL, welch_arrays

MEAN = 80.0
TRIVIAL = 50.0  # a constant predictor's score: where a collapsed seed lands
COLLAPSE = 0.10
SPREADS = {"ratio 8": (0.5, 4.0), "equal": (2.0, 2.0)}
STORIES = ("normal", "lognormal", "collapse 10%")
SEEDS = (2, 3, 5, 10)
GAIN = 3.0


def draw(rng: np.random.Generator, story: str, experiments: int, k: int, sd: float, shift: float) -> np.ndarray:
    """(experiments, k) seed scores of one arm, in points."""
    if story == "lognormal":
        z = np.exp(rng.standard_normal((experiments, k)))
        scores = MEAN - sd * (z - math.exp(0.5)) / math.sqrt((math.e - 1) * math.e)
    else:
        scores = MEAN + sd * rng.standard_normal((experiments, k))
    if story == "collapse 10%":
        scores = np.where(rng.random((experiments, k)) < COLLAPSE, TRIVIAL, scores)
    return scores + shift


def _failed_out(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per experiment: rejected by Welch's t over the seeds above the constant predictor's score, and whether an
    arm kept under 2 seeds (no test)."""
    rejected = np.zeros(a.shape[0], dtype=bool)
    untested = np.zeros(a.shape[0], dtype=bool)
    keep_a, keep_b = a > TRIVIAL + 1e-9, b > TRIVIAL + 1e-9
    for pattern in {(tuple(x), tuple(y)) for x, y in zip(keep_a, keep_b)}:
        rows = np.all(keep_a == pattern[0], axis=1) & np.all(keep_b == pattern[1], axis=1)
        left_a, left_b = a[rows][:, list(pattern[0])], b[rows][:, list(pattern[1])]
        if left_a.shape[1] < 2 or left_b.shape[1] < 2:
            untested[rows] = True
            continue
        k = min(left_a.shape[1], left_b.shape[1])  # the report's rule: min(k) seeds of each arm
        rejected[rows] = welch_arrays(left_a[:, :k], left_b[:, :k])[3] < LEVEL
    return rejected, untested


def _every_seed_out(a: np.ndarray, b: np.ndarray, rejected: np.ndarray) -> np.ndarray:
    """Rejected, and still rejected with any one seed of either arm left out (3 or more seeds per arm; with 2,
    Welch's alone): a verdict that rests on no single seed."""
    k = a.shape[1]
    if k < 3:
        return rejected
    kept = rejected.copy()
    for j in range(k):
        rest = [i for i in range(k) if i != j]
        kept &= stats.ttest_ind(b, a[:, rest], axis=1, equal_var=False).pvalue < LEVEL  # Welch, k vs k - 1
        kept &= stats.ttest_ind(b[:, rest], a, axis=1, equal_var=False).pvalue < LEVEL
    return kept


def rates(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    failed, untested = _failed_out(a, b)
    yuen = stats.ttest_ind(b, a, axis=1, equal_var=False, trim=0.2).pvalue
    welch = welch_arrays(a, b)[3] < LEVEL
    return {"welch": float(np.mean(welch)), "failed out": float(np.mean(failed)),
            "no test": float(np.mean(untested)), "yuen 20%": float(np.nanmean(yuen < LEVEL)),
            "no one seed": float(np.mean(_every_seed_out(a, b, welch)))}


def table(rng: np.random.Generator, experiments: int, power_experiments: int) -> list[dict]:
    rows = []
    for story in STORIES:
        for spread, (sd_a, sd_b) in SPREADS.items():
            for k in SEEDS:
                size = rates(draw(rng, story, experiments, k, sd_a, 0.0), draw(rng, story, experiments, k, sd_b, 0.0))
                power = rates(draw(rng, story, power_experiments, k, sd_a, 0.0),
                              draw(rng, story, power_experiments, k, sd_b, GAIN))
                rows.append({"story": story, "spread": spread, "k": k, "size": size, "power": power})
    return rows


def lines(rows: list[dict], experiments: int, power_experiments: int) -> list[str]:
    tests = ("welch", "failed out", "yuen 20%", "no one seed")
    out = [f"## Degenerate seeds: false-positive rate (nominal 5%, {experiments:,} experiments per row) and power "
           f"at a true gain of {GAIN:g} points ({power_experiments:,})\n",
           "Seed spreads 0.5 and 4 points (ratio 8) or both 2; welch: every seed (the report before); failed out: "
           "Welch's t without the runs no better than a constant predictor (the report now); yuen 20%: Yuen's "
           "trimmed t; no one seed: significant only if still significant with any one seed left out. No test: an arm "
           "left with under 2 seeds.\n",
           "| story | spreads | seeds | " + " | ".join(f"{t} size" for t in tests) + " | no test | "
           + " | ".join(f"{t} power" for t in tests) + " |", "|---|---|---|" + "---|" * (2 * len(tests) + 1)]
    for row in rows:
        size, power = row["size"], row["power"]
        out.append(f"| {row['story']} | {row['spread']} | {row['k']} | "
                   + " | ".join(f"{100 * size[t]:.2f}%" for t in tests) + f" | {100 * size['no test']:.1f}% | "
                   + " | ".join(f"{100 * power[t]:.1f}%" for t in tests) + " |")
    out += ["", worst_line(rows), ""]
    return out


def worst_line(rows: list[dict]) -> str:
    """``Worst false-positive rate per story: ...``: each story's worst cell, for Welch and for the report now."""
    parts = []
    for story in STORIES:
        cells = [r for r in rows if r["story"] == story]
        for test in ("welch", "failed out", "no one seed"):
            worst = max(cells, key=lambda r: r["size"][test])
            parts.append(f"{story}, {test}: {100 * worst['size'][test]:.2f}% ({worst['k']} seeds, {worst['spread']})")
    return "Worst false-positive rate per story: " + "; ".join(parts)
