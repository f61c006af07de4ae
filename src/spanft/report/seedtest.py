"""Welch's t-test over per-seed scores: the verdict's test of SF against the baseline when each arm has two or
more runs (seeds), with the power these runs had.

Each run (one seed) is scored once on the whole dev split; the gain is SF's mean over its seeds minus the
baseline's, and its standard error is ``sqrt(s_a^2 / k_a + s_b^2 / k_b)`` (sample variances over seeds, ddof 1).
The t statistic ``gain / se`` is referred to Student's t with the Welch–Satterthwaite degrees of freedom
``se^4 / ((s_a^2 / k_a)^2 / (k_a - 1) + (s_b^2 / k_b)^2 / (k_b - 1))`` (arms of unequal size: Hsu's
``min(k_a, k_b) - 1``, see :func:`welch_arrays`); the 95% interval is
``gain ± t(0.975, df) se`` and the p-value two-sided, so the interval excludes 0 exactly when p < 0.05.

Why this test (README "Significance", benchmarks/bench_significance.py): a run's dev score already carries
both sources of chance, the seed and which examples that run gets wrong, so the spread of per-seed scores
measures the variance of the method's mean directly. Over the grid of 2–10 seeds per arm, dev sets of 277 to
40,000 examples, seed spreads of 0.5–4 points and accuracy, F1, MCC and Pearson, its false-positive rate stays at
or under 5.3% (10,000 simulated experiments per cell); the two-level bootstrap it replaces reached 19.8%.

Power (:func:`detectable_gain`, :func:`seeds_needed`): the noncentral t. A true gain d gives
``T ~ nct(df, d / se)``; the power is ``P(|T| > t(0.975, df))``. The detectable gain is the d with 80% power at
these runs' se and df; the seeds needed for a gain d are the fewest k per arm (both arms k) whose se from the
measured per-seed variances reaches 80% power for d.

Averages over columns (:func:`seed_average`) average each seed's scores over the columns first, then test the
per-seed averages: columns scored by the same runs (MNLI-m and MNLI-mm) keep their shared seed, and the
average's se carries their covariance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

import numpy as np
from scipy import optimize, stats

from spanft.errors import SpanftError

CONFIDENCE = 0.95
POWER = 0.80
MAX_SEEDS = 10_000  # seeds_needed gives up above this many per arm


def welch_arrays(scores_a: np.ndarray, scores_b: np.ndarray) -> tuple[np.ndarray, ...]:
    """Vectorised Welch test over the last axis: (gain, se, df, p) of mean(b) - mean(a).

    Both arms need two or more scores. With as many seeds in each arm the df is Welch–Satterthwaite's; with
    unequal arms it is Hsu's min(k_a, k_b) - 1, because Welch's df let the false-positive rate reach 10.8% when
    the smaller arm (2 seeds against 5) spread four times as much (benchmarks/bench_significance.py, stress slices). With se = 0 (every score equal within each arm) the p-value is 1
    when the gain is 0, else 0.
    """
    a = np.asarray(scores_a, dtype=np.float64)
    b = np.asarray(scores_b, dtype=np.float64)
    k_a, k_b = a.shape[-1], b.shape[-1]
    if min(k_a, k_b) < 2:
        raise SpanftError(f"Welch test: each arm needs 2 or more seeds, found {k_a} and {k_b}")
    v_a = a.var(axis=-1, ddof=1) / k_a
    v_b = b.var(axis=-1, ddof=1) / k_b
    gain = b.mean(axis=-1) - a.mean(axis=-1)
    se = np.sqrt(v_a + v_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        if k_a == k_b:
            df = (v_a + v_b) ** 2 / (v_a ** 2 / (k_a - 1) + v_b ** 2 / (k_b - 1))
            df = np.where(se > 0, df, k_a + k_b - 2)
        else:  # Hsu's conservative df: Welch's overstates it when the smaller arm spreads more
            df = np.full(np.shape(gain), float(min(k_a, k_b) - 1))
        t = np.where(se > 0, gain / se, np.where(gain == 0, 0.0, np.inf))
    p = np.minimum(1.0, 2 * stats.t.sf(np.abs(t), df))
    return gain, se, df, p


def power(gain: float, se: float, df: float, level: float = CONFIDENCE) -> float:
    """Two-sided power of the t-test at ``level`` for a true gain ``gain`` with standard error ``se``."""
    if se <= 0:
        return 1.0 if gain != 0 else 1 - level
    critical = stats.t.ppf(1 - (1 - level) / 2, df)
    shift = abs(gain) / se
    upper = float(stats.nct.sf(critical, df, shift))
    lower = float(stats.nct.cdf(-critical, df, shift))  # the far tail: NaN in scipy where it underflows
    if math.isnan(upper):
        upper = 1.0 if shift > critical else 0.0
    return upper + (0.0 if math.isnan(lower) else lower)


def detectable_gain(se: float, df: float, target: float = POWER) -> float:
    """The smallest true gain (same units as ``se``) that a test with this se and df finds with ``target`` power."""
    if not se > 0 or math.isnan(df):
        return 0.0 if se == 0 else math.nan
    high = 1.0  # in units of se: doubled until the power reaches the target
    while power(high * se, se, df) < target:
        high *= 2
        if high > 1e6:
            return math.inf
    return float(optimize.brentq(lambda d: power(d * se, se, df) - target, 0.0, high, xtol=1e-10)) * se


def welch_df(var_a: float, var_b: float, k_a: int, k_b: int) -> float:
    """The Welch–Satterthwaite degrees of freedom for per-seed variances ``var_a``, ``var_b`` and k seeds
    (Hsu's min(k_a, k_b) - 1 for unequal arms, as :func:`welch_arrays`)."""
    if k_a != k_b:
        return float(min(k_a, k_b) - 1)
    v_a, v_b = var_a / k_a, var_b / k_b
    if v_a + v_b <= 0:
        return float(k_a + k_b - 2)
    return (v_a + v_b) ** 2 / (v_a ** 2 / (k_a - 1) + v_b ** 2 / (k_b - 1))


def seeds_needed(gain: float, var_a: float, var_b: float, target: float = POWER) -> int | None:
    """The fewest seeds per arm (both arms alike) whose Welch test finds a true ``gain`` with ``target`` power,
    given per-seed variances ``var_a`` and ``var_b``; None for a gain of 0 or NaN, or above :data:`MAX_SEEDS`."""
    if math.isnan(gain) or gain == 0 or math.isnan(var_a) or math.isnan(var_b):
        return None

    def enough(k: int) -> bool:
        return power(gain, math.sqrt((var_a + var_b) / k), welch_df(var_a, var_b, k, k)) >= target

    if not enough(MAX_SEEDS):
        return None
    low, high = 1, 2  # enough(high), not enough(low): double, then bisect
    while not enough(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return max(high, 2)


@dataclass(frozen=True)
class SeedTest:
    """Welch's test of B's per-seed scores against A's (metric units, not percent): the gain, its 95% interval,
    the p-value, and the power these runs had. ``seeds_a`` / ``seeds_b`` name each score's seed."""

    scores_a: tuple[float, ...]
    scores_b: tuple[float, ...]
    seeds_a: tuple[int, ...]
    seeds_b: tuple[int, ...]
    n_examples: int
    columns: int = 1

    def __post_init__(self) -> None:
        if len(self.scores_a) != len(self.seeds_a) or len(self.scores_b) != len(self.seeds_b):
            raise SpanftError("Welch test: one seed per score")
        welch_arrays(self.scores_a, self.scores_b)  # checks both arms hold 2 or more

    @cached_property  # the frozen fields never change: one Welch test per instance, however many cells read it
    def _test(self) -> tuple[float, float, float, float]:
        gain, se, df, p = welch_arrays(self.scores_a, self.scores_b)
        return float(gain), float(se), float(df), float(p)

    @property
    def gain(self) -> float:
        return self._test[0]

    @property
    def se(self) -> float:
        return self._test[1]

    @property
    def df(self) -> float:
        return self._test[2]

    @property
    def p_value(self) -> float:
        return self._test[3]

    @cached_property
    def half_width(self) -> float:
        return float(stats.t.ppf(1 - (1 - CONFIDENCE) / 2, self.df)) * self.se

    @property
    def low(self) -> float:
        return self.gain - self.half_width

    @property
    def high(self) -> float:
        return self.gain + self.half_width

    @property
    def runs_a(self) -> int:
        return len(self.scores_a)

    @property
    def runs_b(self) -> int:
        return len(self.scores_b)

    @property
    def sd_a(self) -> float:
        return float(np.std(self.scores_a, ddof=1))

    @property
    def sd_b(self) -> float:
        return float(np.std(self.scores_b, ddof=1))

    @property
    def significant(self) -> bool:
        """The 95% interval excludes 0 (equivalently p < 0.05)."""
        return self.low > 0 or self.high < 0

    @property
    def method_inference(self) -> bool:
        """The interval speaks of the method (seeds varied in both arms), not of fixed runs."""
        return True

    # the bootstrap's fields, for the cells both kinds of result share
    p_at_floor = False
    resamples = None

    @property
    def detectable_gain(self) -> float:
        """The smallest true gain these runs find with 80% power (metric units)."""
        return detectable_gain(self.se, self.df)

    def seeds_needed(self, gain: float) -> int | None:
        """Seeds per arm for 80% power at a true ``gain`` (metric units), from these runs' per-seed variances."""
        return seeds_needed(gain, self.sd_a ** 2, self.sd_b ** 2)


def seed_test(scores_a: Sequence[float], scores_b: Sequence[float], seeds_a: Sequence[int],
              seeds_b: Sequence[int], n_examples: int) -> SeedTest:
    return SeedTest(tuple(float(s) for s in scores_a), tuple(float(s) for s in scores_b), tuple(seeds_a),
                    tuple(seeds_b), n_examples)


def seed_average(tests: Sequence[SeedTest]) -> SeedTest:
    """The test of an average over columns: each seed's scores averaged over the columns, then Welch's test.

    Every column must hold the same seeds in each arm (a column scored by the same runs as another, MNLI-m and
    MNLI-mm, then shares its seed with it; different tasks' runs of one seed are independent, and averaging them
    per seed keeps the seeds independent)."""
    if not tests:
        raise SpanftError("Welch test: no columns to average")
    first = tests[0]
    for test in tests[1:]:
        if set(test.seeds_a) != set(first.seeds_a) or set(test.seeds_b) != set(first.seeds_b):
            raise SpanftError(f"Welch test: columns with different seeds ({sorted(first.seeds_a)} / "
                              f"{sorted(first.seeds_b)} vs {sorted(test.seeds_a)} / {sorted(test.seeds_b)})")

    def averaged(arm: str) -> tuple[tuple[float, ...], tuple[int, ...]]:
        seeds = getattr(first, f"seeds_{arm}")
        per_seed = [[dict(zip(getattr(t, f"seeds_{arm}"), getattr(t, f"scores_{arm}")))[seed] for t in tests]
                    for seed in seeds]
        return tuple(float(np.mean(values)) for values in per_seed), seeds

    (scores_a, seeds_a), (scores_b, seeds_b) = averaged("a"), averaged("b")
    return SeedTest(scores_a, scores_b, seeds_a, seeds_b, sum(t.n_examples for t in tests),
                    sum(t.columns for t in tests))
