"""Predictions of a split scored as the reports score them: labels, tags by first sub-token, metrics."""

from __future__ import annotations

import logging
import math

import numpy as np

from spanft.data.metrics import compute_metrics
from spanft.data.registry import TaskSpec
from spanft.model.span_model import predictions_from_logits

log = logging.getLogger("spanft")


def nan_to_none(value: float) -> float | None:
    return None if isinstance(value, float) and math.isnan(value) else value


def word_tag_predictions(logits: np.ndarray, token_labels: np.ndarray, word_counts: list[int], outside: int):
    """Per-word tag ids from per-token logits [N, T, C]: the prediction at each word's first sub-token.

    The first sub-tokens are the positions whose label is not -100, in word order; words cut off by
    truncation (no position left) are predicted ``outside`` ("O"), so scores count them as missed.
    """
    predicted = logits.argmax(axis=-1)
    words = []
    for row, count in enumerate(word_counts):
        positions = np.flatnonzero(token_labels[row] != -100)[:count]
        tags = predicted[row, positions].tolist()
        words.append(tags + [outside] * (count - len(tags)))
    return words


def score_split(task: TaskSpec, frame, logits: np.ndarray, token_labels: np.ndarray | None):
    """``(metrics, gold strings, predicted strings)`` for one split; metrics empty when it is unlabeled."""
    if task.is_tagging:
        counts = [len(words) for words in frame["words_a"]]
        # spanft.features marks each word's first sub-token with a label >= 0 (0 in unlabeled examples)
        pred = word_tag_predictions(logits, token_labels, counts, task.label_names.index("O"))
        gold = [list(tags) for tags in frame["tags"]]
        labeled = [i for i, tags in enumerate(gold) if len(tags)]
        metrics = compute_metrics(task, [pred[i] for i in labeled], [gold[i] for i in labeled]) if labeled else {}
        names = task.label_names
        return metrics, [" ".join(names[t] for t in tags) for tags in gold], [" ".join(names[t] for t in p) for p in pred]
    pred = predictions_from_logits(logits, task.task_type)
    gold = frame["label"].to_numpy()
    labeled = ~np.isnan(gold) if task.is_regression else gold >= 0
    metrics = compute_metrics(task, pred[labeled], gold[labeled]) if labeled.any() else {}
    if task.is_regression:
        fmt = lambda value: "" if math.isnan(value) else f"{value:.6g}"  # noqa: E731
        return metrics, [fmt(float(g)) for g in gold], [f"{float(p):.6g}" for p in pred]
    names = task.label_names
    return metrics, [names[int(g)] if g >= 0 else "" for g in gold], [names[int(p)] for p in pred]


def selection_metrics(task: TaskSpec, frame):
    """``compute_metrics`` for the Trainer: the selection split scored exactly as the final report scores it."""

    def compute(eval_prediction) -> dict[str, float]:
        logits = eval_prediction.predictions
        logits = logits[0] if isinstance(logits, tuple) else logits
        labels = eval_prediction.label_ids if task.is_tagging else None
        metrics, _, _ = score_split(task, frame, logits, labels)
        # NaN (e.g. a constant regression output) must not win the best-epoch comparison.
        return {key: (-1.0 if math.isnan(value) else value) for key, value in metrics.items()}

    return compute
