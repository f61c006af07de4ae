"""Two-level paired bootstrap: how sure is the gain of one way of training (SF) over another (the baseline)?

The question is about a *method*, so the interval must carry both sources of chance: which dev examples the
split holds, and which training runs (seeds) each arm got. One resample

1. draws the split's examples with replacement (one draw shared by every run, so the runs stay paired), and
2. draws, within each arm holding two or more runs, as many runs as it has, with replacement;

on it each drawn run's metric is recomputed and the gain is the mean over B's drawn runs minus the mean over
A's. An arm of one run cannot resample its runs: with one run in either arm the interval covers example
sampling only — it speaks of these trained runs, not of the method (:attr:`BootstrapResult.runs_resampled`).
``resample_runs=False`` gives the example-level bootstrap of earlier versions (runs held fixed), kept to
measure what it gets wrong (tests/test_bootstrap_calibration.py: with a seed-to-seed spread and no effect,
it calls a null gain significant several times more often than its nominal 5%).

Interval and p-value are one rule (:func:`summarize`). With the R finite resampled gains sorted,
g(1) <= ... <= g(R), the (1 - a) interval is [g(j), g(R + 1 - j)] with j = floor(a (R + 1) / 2), and the
two-sided p-value is ``min(1, 2 (min(#gains <= 0, #gains >= 0) + 1) / (R + 1))``. For every level a the
interval excludes 0 exactly when p <= a: p is the level at which the interval reaches 0. The +1 keeps a
finite number of resamples from claiming p = 0: the smallest p is 2 / (R + 1), an upper bound, written
``p ≤ 2/(R+1)``. The 95% interval needs j >= 1, that is R >= 39 finite resamples; with fewer there is none.

Draws: the run choices from ``numpy.random.default_rng(run_seed)`` (default: ``seed``), first A's
``integers(0, k_a, size=(R, k_a))`` (only when A has k_a >= 2 runs and runs are resampled), then B's likewise;
the examples from ``numpy.random.default_rng(seed)`` (after the run choices when ``run_seed`` is not given),
block by block, ``integers(0, n, size=(block, n))``. Columns scored by the same runs (MNLI-m and MNLI-mm) are
given the same ``run_seed`` (the report's: ``[reports.bootstrap.seed, crc32(task)]``), so an average over them
draws the same seeds for both.

The report decides with this bootstrap only where it cannot test the method: with one run in an arm it gives
the example-level interval of these runs. With two or more runs per arm the verdict comes from Welch's t-test
over per-seed scores (:mod:`spanft.report.seedtest`): the two-level percentile interval shrinks the seeds'
variance by (k - 1) / k and has no small-sample correction, so its false-positive rate climbs towards 18.5%
(3 seeds) as the dev set grows (README "Significance").

Vectorised: every metric is a function of per-example sums (a confusion matrix; Pearson's moments; entity
counts per sentence), so a block of resamples is one matrix product of resample counts with per-example
statistics — no Python loop over resamples or examples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
from seqeval.metrics.sequence_labeling import get_entities

from spanft.data.registry import TaskSpec
from spanft.errors import SpanftError

CONFIDENCE = 0.95
MIN_RESAMPLES = 39  # the fewest resamples whose 95% interval has j = floor(0.05 (R + 1) / 2) >= 1
BLOCK_ENTRIES = 4_000_000  # resample x example counts held at once (32 MB of float64)


@dataclass(frozen=True)
class BootstrapResult:
    """The gain on the full split (metric units, not percent), its interval, p-value and resampled gains.

    ``runs_a`` / ``runs_b``: the runs (seeds) per arm (the fewest over the columns of an average);
    ``resampled_a`` / ``resampled_b``: whether the resamples drew that arm's runs as well as examples.
    """

    gain: float
    low: float
    high: float
    p_value: float
    resamples: int
    n_examples: int
    distribution: np.ndarray = field(repr=False, compare=False)
    runs_a: int = 1
    runs_b: int = 1
    resampled_a: bool = False  # A's runs were drawn with replacement (A has two or more and runs were resampled)
    resampled_b: bool = False

    @property
    def runs_resampled(self) -> bool:
        """Both arms' runs were resampled (the two-level bootstrap proper)."""
        return self.resampled_a and self.resampled_b

    @property
    def method_inference(self) -> bool:
        """False: the report draws no conclusion about the method from a bootstrap (see the module's docstring)."""
        return False

    @property
    def finite(self) -> int:
        """Resamples with a finite gain (R of the interval and of the p-value)."""
        return int(np.sum(np.isfinite(self.distribution)))

    @property
    def p_at_floor(self) -> bool:
        """True when no resample fell on the far side of 0: p is then the bound 2 / (R + 1)."""
        return not math.isnan(self.p_value) and self.p_value <= 2 / (self.finite + 1) * (1 + 1e-12)

    @property
    def significant(self) -> bool:
        """The 95% interval excludes 0 (equivalently p <= 0.05)."""
        return not math.isnan(self.low) and (self.low > 0 or self.high < 0)


# ------------------------------------------------------------------------------------------- statistics


def example_statistics(task: TaskSpec, metric: str, gold: Sequence, pred: Sequence) -> np.ndarray:
    """Per-example additive statistics, shape (examples, m), whose column sums determine ``metric``."""
    if task.is_tagging:
        return _entity_counts(task, gold, pred)
    if task.is_regression:
        if metric != "pearson":
            raise SpanftError(f"bootstrap: {task.name} {metric} is not a sum of per-example statistics")
        x = np.asarray(pred, dtype=np.float64)
        y = np.asarray(gold, dtype=np.float64)
        x, y = x - x.mean(), y - y.mean()  # Pearson ignores shifts; centring keeps the sums well conditioned
        return np.stack([np.ones_like(x), x, y, x * x, y * y, x * y], axis=1)
    if metric not in ("accuracy", "f1", "mcc"):
        raise SpanftError(f"bootstrap: unknown classification metric {metric!r}")
    k = task.num_labels
    codes = np.asarray(gold, dtype=np.int64) * k + np.asarray(pred, dtype=np.int64)
    return np.eye(k * k)[codes]  # one-hot cell of the confusion matrix (gold row, predicted column)


def _entity_counts(task: TaskSpec, gold: Sequence, pred: Sequence) -> np.ndarray:
    names = task.label_names
    rows = []
    for gold_row, pred_row in zip(gold, pred):
        gold_entities = set(get_entities([names[int(t)] for t in gold_row]))
        pred_entities = set(get_entities([names[int(t)] for t in pred_row]))
        rows.append((len(gold_entities & pred_entities), len(pred_entities), len(gold_entities)))
    return np.asarray(rows, dtype=np.float64).reshape(-1, 3)


def metric_from_sums(task: TaskSpec, metric: str, sums: np.ndarray) -> np.ndarray:
    """``metric`` from summed statistics (last axis), with compute_metrics' conventions for empty cases."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if task.is_tagging:
            correct, predicted, actual = sums[..., 0], sums[..., 1], sums[..., 2]
            return np.where(correct > 0, 2 * correct / (predicted + actual), 0.0)
        if task.is_regression:
            n, sx, sy, sxx, syy, sxy = (sums[..., i] for i in range(6))
            cov, var_x, var_y = sxy - sx * sy / n, sxx - sx * sx / n, syy - sy * sy / n
            degenerate = (var_x <= 1e-12 * np.maximum(sxx, 1)) | (var_y <= 1e-12 * np.maximum(syy, 1))
            return np.where(degenerate, np.nan, cov / np.sqrt(var_x * var_y))
        k = task.num_labels
        confusion = sums.reshape(*sums.shape[:-1], k, k)
        total = confusion.sum(axis=(-2, -1))
        correct = np.trace(confusion, axis1=-2, axis2=-1)
        if metric == "accuracy":
            return correct / total
        if metric == "f1":
            tp, fp, fn = confusion[..., 1, 1], confusion[..., 0, 1], confusion[..., 1, 0]
            return np.where(tp > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
        true_counts, pred_counts = confusion.sum(axis=-1), confusion.sum(axis=-2)
        covariance = correct * total - np.sum(true_counts * pred_counts, axis=-1)
        spread = (total ** 2 - np.sum(pred_counts ** 2, axis=-1)) * (total ** 2 - np.sum(true_counts ** 2, axis=-1))
        return np.where(spread > 0, covariance / np.sqrt(spread), 0.0)


# ------------------------------------------------------------------------------------------- bootstrap


def paired_bootstrap(task: TaskSpec, metric: str, gold: Sequence, preds_a: Sequence[Sequence],
                     preds_b: Sequence[Sequence], resamples: int, seed: int | Sequence[int],
                     resample_runs: bool = True, run_seed: int | Sequence[int] | None = None) -> BootstrapResult:
    """Gain of B over A (mean over B's runs minus mean over A's runs of ``metric``) and its two-level bootstrap.

    ``gold`` and every prediction list follow the same example order; ``seed`` seeds numpy's default_rng
    (the draws are listed in the module's docstring; ``run_seed`` seeds the run choices apart from the examples).
    ``resample_runs=False``: examples only, runs held fixed.
    """
    if not preds_a or not preds_b:
        raise SpanftError("bootstrap: each side needs at least one run")
    if resamples < 1:
        raise SpanftError(f"bootstrap: resamples must be positive, found {resamples}")
    n = len(gold)
    if n == 0 or any(len(pred) != n for pred in [*preds_a, *preds_b]):
        raise SpanftError(f"bootstrap: every run needs one prediction per example ({n} examples)")
    blocks = [example_statistics(task, metric, gold, pred) for pred in [*preds_a, *preds_b]]
    per_run = blocks[0].shape[1]
    statistics = np.concatenate(blocks, axis=1)
    k_a, k_b = len(preds_a), len(preds_b)

    def run_scores(sums: np.ndarray) -> np.ndarray:  # (..., runs): every run's metric
        return metric_from_sums(task, metric, sums.reshape(*sums.shape[:-1], len(blocks), per_run))

    full = run_scores(statistics.sum(axis=0))
    gain = float(full[k_a:].mean() - full[:k_a].mean())
    rng = np.random.default_rng(seed)
    run_rng = rng if run_seed is None else np.random.default_rng(run_seed)
    pick_a = _run_draws(run_rng, k_a, resamples, resample_runs)
    pick_b = _run_draws(run_rng, k_b, resamples, resample_runs) + k_a
    distribution = np.empty(resamples, dtype=np.float64)
    block = max(1, BLOCK_ENTRIES // n)
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        draws = rng.integers(0, n, size=(size, n))
        counts = np.bincount((draws + n * np.arange(size)[:, None]).ravel(), minlength=size * n)
        scores = run_scores(counts.reshape(size, n).astype(np.float64) @ statistics)
        rows = slice(start, start + size)
        distribution[rows] = (np.take_along_axis(scores, pick_b[rows], axis=1).mean(axis=1)
                              - np.take_along_axis(scores, pick_a[rows], axis=1).mean(axis=1))
    result = summarize(gain, distribution, n)
    return replace(result, runs_a=k_a, runs_b=k_b, resampled_a=resample_runs and k_a >= 2,
                   resampled_b=resample_runs and k_b >= 2)


def _run_draws(rng: np.random.Generator, runs: int, resamples: int, resample_runs: bool) -> np.ndarray:
    """(resamples, runs) indices of the runs each resample uses: drawn with replacement, or every run once."""
    if resample_runs and runs >= 2:
        return rng.integers(0, runs, size=(resamples, runs))
    return np.broadcast_to(np.arange(runs), (resamples, runs))


def summarize(gain: float, distribution: np.ndarray, n_examples: int) -> BootstrapResult:
    """Interval and p-value of resampled gains by the one rule of the module's docstring (NaN resamples, e.g.
    a constant Pearson input, are left out; fewer than 39 finite ones give no interval)."""
    finite = np.sort(distribution[np.isfinite(distribution)])
    size = finite.size
    rank = math.floor((1 - CONFIDENCE) * (size + 1) / 2 + 1e-9)  # j: the interval is [g(j), g(R + 1 - j)]
    if math.isnan(gain) or rank < 1:
        return BootstrapResult(math.nan, math.nan, math.nan, math.nan, distribution.size, n_examples, distribution)
    far_side = min(int(np.sum(finite <= 0)), int(np.sum(finite >= 0)))
    p_value = min(1.0, 2 * (far_side + 1) / (size + 1))
    low, high = finite[rank - 1], finite[size - rank]
    return BootstrapResult(gain, float(low), float(high), p_value, distribution.size, n_examples, distribution)


def mean_of(results: Sequence[BootstrapResult]) -> BootstrapResult:
    """The gain of an average over columns, each bootstrapped on its own examples and runs with its own draws."""
    if not results:
        raise SpanftError("bootstrap: no columns to average")
    sizes = {result.distribution.size for result in results}
    if len(sizes) != 1:
        raise SpanftError(f"bootstrap: columns with different resample counts {sorted(sizes)}")
    distribution = np.mean([result.distribution for result in results], axis=0)
    gain = float(np.mean([result.gain for result in results]))
    summary = summarize(gain, distribution, sum(result.n_examples for result in results))
    return replace(summary, runs_a=min(r.runs_a for r in results), runs_b=min(r.runs_b for r in results),
                   resampled_a=all(r.resampled_a for r in results), resampled_b=all(r.resampled_b for r in results))
