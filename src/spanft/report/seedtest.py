"""Welch's t-test over per-seed scores: the verdict's test of SF against the baseline when each arm has two or
more runs (seeds), with the power these runs had.

Each run (one seed) is scored once on the whole dev split; the gain is SF's mean over its seeds minus the
baseline's, and its standard error is ``sqrt(s_a^2 / k_a + s_b^2 / k_b)`` (sample variances over seeds, ddof 1).
The t statistic ``gain / se`` is referred to Student's t with the Welch–Satterthwaite degrees of freedom
``se^4 / ((s_a^2 / k_a)^2 / (k_a - 1) + (s_b^2 / k_b)^2 / (k_b - 1))``.

**Arms of unequal size** (:func:`balanced`): the test uses as many seeds from each arm as the smaller arm has,
the seeds both arms ran first, then the lowest; the larger arm's other seeds are left out of the test (Table 1's
mean ± sd still shows them). Its size is Welch's with equal arms (benchmarks/bench_significance.py: within 6%
over the grid; with seed sds that differ several-fold between the arms it passes 5% at 2 and 3 seeds, the
"Equal arms" section), and adding a seed to either arm never costs power: to the larger arm it changes nothing,
to the smaller it adds a pair. Welch's df on every seed of unequal arms overstates the df when the smaller arm spreads
more, and its false-positive rate then passes 5%; Hsu's ``min(k_a, k_b) - 1``, used before, held the size but
gave 3 vs 5 seeds less power than 3 vs 3 (the benchmark's "Unequal arms" section). The 95% interval is
``gain ± t(0.975, df) se``; it excludes 0 exactly when p < 0.05.

**No spread** (:attr:`SeedTest.no_spread`): when every seed of an arm scores the same (likely at 99% accuracy
on a small dev set) — the same up to float rounding (:func:`spreads`), so that averages equal in exact
arithmetic but a float step apart are tied too — that arm's sample variance is 0, an estimate no test can lean on: the p-value and the
interval are NaN and the verdict reads "no inference (no spread across seeds)", never p = 0.

Why this test (README "Significance", benchmarks/bench_significance.py): a run's dev score already carries
both sources of chance, the seed and which examples that run gets wrong, so the spread of per-seed scores
measures the variance of the method's mean directly.

**Power** (:func:`welch_power`): the power of this very test, the sample variances and Welch's df varying as
they do from experiment to experiment. Given true per-seed variances, the gain is normal and each arm's sample
variance a scaled chi-square, independent of it; the power is the mean, over a grid of the two chi-squares'
quantiles (:data:`GRID` x :data:`GRID` midpoints), of the normal probability that ``|gain|`` passes
``t(1 - level / 2, df) se``. The detectable gain is the true gain with 80% power at the measured variances
(the true ones unknown: :func:`sd_range` gives the 80% interval of the seed sd, from the chi-square of the
pooled variance, and the detectable gain and seeds needed at its ends); the seeds needed for a gain are the fewest
k per arm (both arms k) with 80% power at the measured variances.

Averages over columns (:func:`seed_average`) average each seed's scores over the columns first, then test the
per-seed averages: columns scored by the same runs (MNLI-m and MNLI-mm) keep their shared seed, and the
average's se carries their covariance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Sequence

import numpy as np
from scipy import optimize, special, stats

from spanft.errors import SpanftError

CONFIDENCE = 0.95
LEVEL = 0.05  # two-sided; 1 - CONFIDENCE, written exactly (1 - 0.95 is 0.05000000000000004)
POWER = 0.80
RANGE = 0.80  # the interval of the seed sd (and so of the detectable gain) that the power words print
MAX_SEEDS = 10_000  # seeds_needed gives up above this many per arm
GRID = 64  # quadrature points per arm's chi-square
TIE = 1e-9  # seeds whose scores differ by less than this share (of the largest) are tied: no spread, no test


@lru_cache(maxsize=256)
def _chi_grid(k_a: int, k_b: int) -> tuple[np.ndarray, np.ndarray]:
    """Each arm's sample variance over its true one, chi2(k - 1) / (k - 1) at GRID midpoint quantiles, as the
    flattened GRID x GRID product grid."""
    u = (np.arange(GRID) + 0.5) / GRID
    q_a = stats.chi2.ppf(u, k_a - 1) / (k_a - 1)
    q_b = stats.chi2.ppf(u, k_b - 1) / (k_b - 1)
    a, b = np.meshgrid(q_a, q_b, indexing="ij")
    return a.ravel(), b.ravel()


def _welch_grid(theta: float, k_a: int, k_b: int) -> tuple[np.ndarray, np.ndarray]:
    """Welch's se (in units of the true se) and df at every grid point, for the variance share ``theta``."""
    u_a, u_b = _chi_grid(k_a, k_b)
    v_a, v_b = theta * u_a, (1 - theta) * u_b
    se2 = v_a + v_b
    df = se2 ** 2 / (v_a ** 2 / (k_a - 1) + v_b ** 2 / (k_b - 1))  # Welch–Satterthwaite
    return np.sqrt(se2), df


def _rejection(shift: float, theta: float, k_a: int, k_b: int, nominal: float) -> float:
    """The probability that Welch's test at ``nominal`` rejects, for a true gain of ``shift`` true se."""
    se, df = _welch_grid(theta, k_a, k_b)
    critical = special.stdtrit(df, 1 - nominal / 2) * se
    return float(np.mean(special.ndtr(shift - critical) + special.ndtr(-shift - critical)))


def welch_arrays(scores_a: np.ndarray, scores_b: np.ndarray) -> tuple[np.ndarray, ...]:
    """Vectorised test over the last axis: (gain, se, df, p) of mean(b) - mean(a), Welch–Satterthwaite's df.

    Both arms need two or more scores; with unequal arms only the first min(k_a, k_b) scores of each enter
    (callers order them, :func:`balanced`). An arm whose scores all tie gives p = NaN (no inference)."""
    a = np.asarray(scores_a, dtype=np.float64)
    b = np.asarray(scores_b, dtype=np.float64)
    k = min(a.shape[-1], b.shape[-1])
    if k < 2:
        raise SpanftError(f"Welch test: each arm needs 2 or more seeds, found {a.shape[-1]} and {b.shape[-1]}")
    a, b = a[..., :k], b[..., :k]
    v_a = a.var(axis=-1, ddof=1) / k
    v_b = b.var(axis=-1, ddof=1) / k
    gain = b.mean(axis=-1) - a.mean(axis=-1)
    se = np.sqrt(v_a + v_b)
    spread = spreads(a) & spreads(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(spread, (k - 1) * (v_a + v_b) ** 2 / (v_a ** 2 + v_b ** 2), np.nan)
        p = np.where(spread, 2 * special.stdtr(df, -np.abs(gain / se)), np.nan)
    return gain, se, df, np.minimum(1.0, p)


def spreads(scores: np.ndarray) -> np.ndarray:
    """Over the last axis: the scores differ by more than float rounding (:data:`TIE`, relative to the largest
    magnitude, 1 near 0). Scores equal in exact arithmetic but a float step apart are tied: no test."""
    scores = np.asarray(scores, dtype=np.float64)
    scale = np.maximum(1.0, np.abs(scores).max(axis=-1))
    return np.ptp(scores, axis=-1) > TIE * scale


def balanced(seeds: Sequence[int], other: Sequence[int], k: int) -> list[int]:
    """The positions of the ``k`` seeds of an arm that enter the test: those the other arm ran too, then the
    lowest (so the order of the runs never matters)."""
    shared = set(other)
    return sorted(range(len(seeds)), key=lambda i: (seeds[i] not in shared, seeds[i]))[:k]


def welch_power(gain: float, var_a: float, var_b: float, k_a: int, k_b: int) -> float:
    """The power of this module's test (two-sided, 5%) at a true ``gain`` with true per-seed variances
    ``var_a``, ``var_b`` and k seeds per arm (min(k_a, k_b) enter each): the sample variances and Welch's df vary
    as they would."""
    k = min(k_a, k_b)
    total = (var_a + var_b) / k
    if not total > 0:
        return math.nan
    return _rejection(abs(gain) / math.sqrt(total), var_a / k / total, k, k, LEVEL)


def detectable_gain(var_a: float, var_b: float, k_a: int, k_b: int, target: float = POWER) -> float:
    """The smallest true gain (units of the scores) that the test finds with ``target`` power, at true per-seed
    variances ``var_a``, ``var_b`` and k seeds per arm."""
    total = (var_a + var_b) / min(k_a, k_b)
    if not total > 0:
        return math.nan
    se = math.sqrt(total)
    high = 1.0  # in units of se: doubled until the power reaches the target
    while welch_power(high * se, var_a, var_b, k_a, k_b) < target:
        high *= 2
        if high > 1e6:
            return math.inf
    return float(optimize.brentq(lambda d: welch_power(d * se, var_a, var_b, k_a, k_b) - target, 0.0, high,
                                 xtol=1e-8)) * se


def sd_range(k_a: int, k_b: int, coverage: float = RANGE) -> tuple[float, float]:
    """The factors by which the true seed sd may differ from the measured one, ``coverage`` interval: the pooled
    sample variance of the tested seeds is sigma^2 chi2(df) / df with df = 2 (min(k_a, k_b) - 1) (the arms'
    variance ratio taken as measured)."""
    df = 2 * (min(k_a, k_b) - 1)
    tail = (1 - coverage) / 2
    return (math.sqrt(df / stats.chi2.ppf(1 - tail, df)), math.sqrt(df / stats.chi2.ppf(tail, df)))


def seeds_needed(gain: float, var_a: float, var_b: float, target: float = POWER) -> int | None:
    """The fewest seeds per arm (both arms alike) whose test finds a true ``gain`` with ``target`` power, given
    per-seed variances ``var_a`` and ``var_b``; None for a gain of 0 or NaN, no spread, or above :data:`MAX_SEEDS`."""
    if math.isnan(gain) or gain == 0 or not var_a > 0 or not var_b > 0:
        return None

    def enough(k: int) -> bool:
        return welch_power(gain, var_a, var_b, k, k) >= target

    if not enough(MAX_SEEDS):
        return None
    low, high = 1, 2  # enough(high), not enough(low): double, then bisect
    while not enough(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


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
    failed_a: tuple[int, ...] = ()  # seeds whose run was no better than a constant predictor (report/degenerate.py)
    failed_b: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if len(self.scores_a) != len(self.seeds_a) or len(self.scores_b) != len(self.seeds_b):
            raise SpanftError("Welch test: one seed per score")
        welch_arrays(self.scores_a, self.scores_b)  # checks both arms hold 2 or more

    @cached_property
    def tested(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The scores that enter the test, min(k_a, k_b) per arm (:func:`balanced`)."""
        k = min(self.runs_a, self.runs_b)
        return (tuple(self.scores_a[i] for i in balanced(self.seeds_a, self.seeds_b, k)),
                tuple(self.scores_b[i] for i in balanced(self.seeds_b, self.seeds_a, k)))

    @property
    def seeds_tested(self) -> int:
        """Seeds per arm in the test: the smaller arm's count."""
        return min(self.runs_a, self.runs_b)

    @cached_property  # the frozen fields never change: one Welch test per instance, however many cells read it
    def _test(self) -> tuple[float, float, float, float]:
        gain, se, df, p = welch_arrays(*self.tested)
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
        """t(0.975, df) se; NaN without spread."""
        if self.no_spread:
            return math.nan
        return float(special.stdtrit(self.df, 1 - LEVEL / 2)) * self.se

    @property
    def no_spread(self) -> bool:
        """An arm's seeds all score the same: its sample variance is 0, and the test makes no inference."""
        a, b = self.tested
        return not (bool(spreads(np.array(a))) and bool(spreads(np.array(b))))

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
        """The baseline's per-seed sd over the tested seeds."""
        return float(np.std(self.tested[0], ddof=1))

    @property
    def sd_b(self) -> float:
        return float(np.std(self.tested[1], ddof=1))

    @property
    def significant(self) -> bool:
        """The 95% interval excludes 0 (equivalently p < 0.05)."""
        return self.low > 0 or self.high < 0

    @property
    def method_inference(self) -> bool:
        """The interval speaks of the method (seeds varied in both arms, each with a spread), not of fixed runs."""
        return not self.no_spread

    # the bootstrap's fields, for the cells both kinds of result share
    p_at_floor = False
    resamples = None

    @property
    def detectable_gain(self) -> float:
        """The smallest true gain these runs find with 80% power (metric units), at the measured variances."""
        return detectable_gain(self.sd_a ** 2, self.sd_b ** 2, self.runs_a, self.runs_b)

    @property
    def detectable_range(self) -> tuple[float, float]:
        """The detectable gain at the ends of the seed sd's 80% interval (:func:`sd_range`)."""
        low, high = sd_range(self.runs_a, self.runs_b)
        return low * self.detectable_gain, high * self.detectable_gain

    def seeds_needed(self, gain: float) -> int | None:
        """Seeds per arm for 80% power at a true ``gain`` (metric units), from these runs' per-seed variances."""
        return seeds_needed(gain, self.sd_a ** 2, self.sd_b ** 2)

    def seeds_range(self, gain: float) -> tuple[int | None, int | None]:
        """The seeds needed at the ends of the seed sd's 80% interval (the variances scaled alike)."""
        low, high = sd_range(self.runs_a, self.runs_b)
        return seeds_needed(gain / low, self.sd_a ** 2, self.sd_b ** 2), seeds_needed(gain / high, self.sd_a ** 2,
                                                                                     self.sd_b ** 2)


def seed_test(scores_a: Sequence[float], scores_b: Sequence[float], seeds_a: Sequence[int],
              seeds_b: Sequence[int], n_examples: int, failed_a: Sequence[int] = (),
              failed_b: Sequence[int] = ()) -> SeedTest:
    return SeedTest(tuple(float(s) for s in scores_a), tuple(float(s) for s in scores_b), tuple(seeds_a),
                    tuple(seeds_b), n_examples, failed_a=tuple(failed_a), failed_b=tuple(failed_b))


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
                    sum(t.columns for t in tests), tuple(sorted({s for t in tests for s in t.failed_a})),
                    tuple(sorted({s for t in tests for s in t.failed_b})))
