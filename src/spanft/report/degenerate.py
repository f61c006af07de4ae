"""Degenerate seeds in a test over seeds: named in the verdict line, and never a result without saying so.

Two kinds of seed can carry a verdict on their own:

- **a failed run**: no better than a constant predictor on the scored split (:mod:`spanft.report.trivial`: at or
  below the majority class's accuracy, MCC 0, ...). Fine-tuning BERT on small sets fails so on some seeds
  (Mosbach, Andriushchenko and Klakow 2021, "On the stability of fine-tuning BERT", which calls a run at or below
  the majority-class score failed; Dodge et al. 2020);
- **a seed far outside its arm**: farther than :data:`FAR` scaled median absolute deviations from its arm's
  median (3 or more seeds; the MAD scaled by 1.4826, the normal sd's consistent estimate, floored at 0.5
  points, the smallest seed sd the significance benchmark covers, so that seeds tied on a small dev set do not
  make every other seed "far").

The line names each (``failed run: compared seed 3``), and for each asks whether the verdict rests on it: Welch's
t over the tested seeds without that one (the arms then unequal, Welch's df); when the interval's side of 0
changes, the line says so with the p-value without it. The verdict's word stays Welch's over every tested seed:
``benchmarks/bench_significance.py --stories`` measures the test's size with skewed, collapsing and 8x-unequal
seeds, beside the remedies (failed runs left out, Yuen's trimmed t, and a verdict kept only if it rests on no
single seed), and README "Significance" quotes its worst cells.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import stats

from spanft.english import p_round
from spanft.report.seedtest import LEVEL

FAR = 5.0  # scaled MADs from the arm's median: a seed farther is far outside its arm
MAD_SCALE = 1.4826  # MAD x this estimates a normal sd
MIN_SPREAD = 0.005  # metric units: the scaled MAD's floor, the smallest seed sd the significance benchmark covers
ARMS = {"a": "baseline", "b": "compared"}


def far_outside(scores: Sequence[float], seeds: Sequence[int]) -> list[int]:
    """The seeds whose score lies farther than :data:`FAR` scaled MADs from the arm's median (3+ seeds)."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size < 3:
        return []
    median = float(np.median(values))
    spread = max(MAD_SCALE * float(np.median(np.abs(values - median))), MIN_SPREAD)
    return [seed for seed, value in zip(seeds, values) if abs(value - median) > FAR * spread]


def _p_without(result, arm: str, seed: int) -> float:
    """Welch's two-sided p over the tested seeds with ``seed`` of ``arm`` left out (NaN: under 2 seeds left)."""
    tested_a, tested_b = result.tested
    seeds_a, seeds_b = tested_seeds(result)
    a = [s for s, k in zip(tested_a, seeds_a) if not (arm == "a" and k == seed)]
    b = [s for s, k in zip(tested_b, seeds_b) if not (arm == "b" and k == seed)]
    if min(len(a), len(b)) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(stats.ttest_ind(b, a, equal_var=False).pvalue)


def tested_seeds(result) -> tuple[list[int], list[int]]:
    """The seeds of the tested scores, in the order of ``result.tested``."""
    from spanft.report.seedtest import balanced

    k = result.seeds_tested
    return ([result.seeds_a[i] for i in balanced(result.seeds_a, result.seeds_b, k)],
            [result.seeds_b[i] for i in balanced(result.seeds_b, result.seeds_a, k)])


def flagged(result) -> list[tuple[str, int, str]]:
    """``(arm, seed, why)`` for each degenerate tested seed: failed runs first, then far outside its arm."""
    seeds_a, seeds_b = tested_seeds(result)
    tested_a, tested_b = result.tested
    out = []
    for arm, seeds, scores in (("a", seeds_a, tested_a), ("b", seeds_b, tested_b)):
        failed = set(getattr(result, f"failed_{arm}", ()))
        out += [(arm, seed, "failed run: no better than a constant predictor") for seed in seeds if seed in failed]
        out += [(arm, seed, "far outside its arm") for seed in far_outside(scores, seeds) if seed not in failed]
    return out


def words(result) -> str:
    """``; degenerate seeds: compared seed 3 (failed run: ...; the verdict rests on it: without it p = 0.21, the
    interval would hold 0)``, or nothing."""
    if not getattr(result, "method_inference", False) or not hasattr(result, "tested"):
        return ""
    parts = []
    for arm, seed, why in flagged(result):
        text = f"{ARMS[arm]} seed {seed} ({why}"
        p = _p_without(result, arm, seed)
        significant = result.p_value < LEVEL
        if math.isnan(p):
            text += "; without it no test: the verdict rests on it"
        elif (p < LEVEL) != significant:
            side = "hold 0" if significant else "exclude 0"
            text += f"; the verdict rests on it: without it p = {p_round(p)} and the interval would {side}"
        parts.append(text + ")")
    return f"; degenerate seeds: {', '.join(parts)}" if parts else ""


def rests_on_one(result) -> bool:
    """The verdict's side of 0 changes with some degenerate seed left out."""
    return "rests on it" in words(result)
