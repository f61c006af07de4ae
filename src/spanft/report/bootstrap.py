"""Paired bootstrap over dev examples that pools every seed: how sure is SF's gain over the baseline?

One resample draws the split's examples with replacement (the same draw for every run, so runs stay paired);
on it, each run's metric is recomputed and the gain is mean over SF seeds minus mean over baseline seeds.
Seed-to-seed variation and example sampling both enter the interval, where a best-run McNemar test sees
neither. From the resampled gains:

- the 95% interval is their 2.5th and 97.5th percentiles (percentile bootstrap);
- the two-sided p-value is ``min(1, 2 * (min(#gains <= 0, #gains >= 0) + 1) / (R + 1))``: twice the share of
  resamples on the far side of zero, with the +1 that keeps a finite number of resamples from claiming p = 0.
  p < 0.05 goes with an interval that excludes 0.

Vectorised: every metric is a function of per-example sums (a confusion matrix; Pearson's moments; entity
counts per sentence), so a block of resamples is one matrix product of resample counts with per-example
statistics — no Python loop over resamples or examples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from spanft.data.registry import TaskSpec
from spanft.errors import SpanftError

CONFIDENCE = 0.95
BLOCK_ENTRIES = 4_000_000  # resample x example counts held at once (32 MB of float64)


@dataclass(frozen=True)
class BootstrapResult:
    """The gain on the full split (metric units, not percent), its interval, p-value and resampled gains."""

    gain: float
    low: float
    high: float
    p_value: float
    resamples: int
    n_examples: int
    distribution: np.ndarray = field(repr=False, compare=False)


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
    from seqeval.metrics.sequence_labeling import get_entities

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
                     preds_b: Sequence[Sequence], resamples: int, seed: int | Sequence[int]) -> BootstrapResult:
    """Gain of B over A (mean over B's runs minus mean over A's runs of ``metric``) and its bootstrap.

    ``gold`` and every prediction list follow the same example order; ``seed`` seeds numpy's default_rng,
    which draws each block of resamples as ``integers(0, n, size=(block, n))``.
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

    def gains(sums: np.ndarray) -> np.ndarray:
        values = metric_from_sums(task, metric, sums.reshape(*sums.shape[:-1], len(blocks), per_run))
        return values[..., len(preds_a):].mean(axis=-1) - values[..., :len(preds_a)].mean(axis=-1)

    gain = float(gains(statistics.sum(axis=0)))
    rng = np.random.default_rng(seed)
    distribution = np.empty(resamples, dtype=np.float64)
    block = max(1, BLOCK_ENTRIES // n)
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        draws = rng.integers(0, n, size=(size, n))
        counts = np.bincount((draws + n * np.arange(size)[:, None]).ravel(), minlength=size * n)
        distribution[start:start + size] = gains(counts.reshape(size, n).astype(np.float64) @ statistics)
    return summarize(gain, distribution, n)


def summarize(gain: float, distribution: np.ndarray, n_examples: int) -> BootstrapResult:
    """Interval and p-value of resampled gains (NaN resamples, e.g. a constant Pearson input, are left out)."""
    finite = distribution[np.isfinite(distribution)]
    if math.isnan(gain) or finite.size == 0:
        return BootstrapResult(math.nan, math.nan, math.nan, math.nan, distribution.size, n_examples, distribution)
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(finite, [tail, 1 - tail])
    far_side = min(int(np.sum(finite <= 0)), int(np.sum(finite >= 0)))
    p_value = min(1.0, 2 * (far_side + 1) / (finite.size + 1))
    return BootstrapResult(gain, float(low), float(high), p_value, distribution.size, n_examples, distribution)


def mean_of(results: Sequence[BootstrapResult]) -> BootstrapResult:
    """The gain of an average over columns, each bootstrapped on its own examples with its own draws."""
    if not results:
        raise SpanftError("bootstrap: no columns to average")
    sizes = {result.distribution.size for result in results}
    if len(sizes) != 1:
        raise SpanftError(f"bootstrap: columns with different resample counts {sorted(sizes)}")
    distribution = np.mean([result.distribution for result in results], axis=0)
    gain = float(np.mean([result.gain for result in results]))
    return summarize(gain, distribution, sum(result.n_examples for result in results))
