"""Task metrics computed offline (scikit-learn, scipy, seqeval): no ``evaluate.load`` and no network.

Each metric imports its library when first used: a fine-tuning process pays only for its own task's
(scikit-learn and scipy take about 0.4 s to import; an accuracy task needs neither).

CoLA: Matthews correlation; SST-2, MNLI, QNLI, RTE, WNLI, SNLI: accuracy; MRPC, QQP: F1 of the positive
class (equivalent / duplicate) and accuracy; STS-B: Pearson and Spearman; CoNLL-2003: entity-level
precision, recall and F1 (seqeval, conlleval rules) and token accuracy.
"""

from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np

from spanft.data.registry import TaskSpec
from spanft.errors import SpanftError


def compute_metrics(task: TaskSpec, predictions, references) -> dict[str, float]:
    """Every metric in ``task.metrics`` (the main one is ``task.main_metric``).

    Classification: class ids (or logits of shape [n, num_labels], reduced by argmax). Regression: floats.
    Tagging: lists of tag-id lists, one per sentence, aligned word by word with the references.
    """
    if task.is_tagging:
        return _tagging_metrics(task, predictions, references)
    if task.is_regression:
        pred = np.asarray(predictions, dtype=np.float64).reshape(-1)
        gold = np.asarray(references, dtype=np.float64).reshape(-1)
        _check_lengths(len(pred), len(gold))
        return _regression_metrics(pred, gold)
    pred = np.asarray(predictions)
    if pred.ndim == 2:
        pred = pred.argmax(axis=-1)
    pred = pred.astype(np.int64).reshape(-1)
    gold = np.asarray(references, dtype=np.int64).reshape(-1)
    _check_lengths(len(pred), len(gold))
    return {name: _CLASSIFICATION[name](pred, gold) for name in task.metrics}


def _check_lengths(n_pred: int, n_gold: int) -> None:
    if n_pred != n_gold:
        raise SpanftError(f"{n_pred} predictions for {n_gold} references")
    if n_gold == 0:
        raise SpanftError("no examples to score")


def _accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    return float(np.mean(pred == gold))


def _f1(pred: np.ndarray, gold: np.ndarray) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(gold, pred, pos_label=1, average="binary", zero_division=0))


def _mcc(pred: np.ndarray, gold: np.ndarray) -> float:
    from sklearn.metrics import matthews_corrcoef

    with warnings.catch_warnings():  # one class only: sklearn warns and returns 0, the conventional value
        warnings.simplefilter("ignore")
        return float(matthews_corrcoef(gold, pred))


_CLASSIFICATION = {"accuracy": _accuracy, "f1": _f1, "mcc": _mcc}


def _regression_metrics(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Pearson and Spearman; NaN when either side is constant (the correlation is undefined)."""
    if len(pred) < 2 or np.ptp(pred) == 0 or np.ptp(gold) == 0:
        return {"pearson": math.nan, "spearman": math.nan}
    from scipy.stats import pearsonr, spearmanr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"pearson": float(pearsonr(pred, gold)[0]), "spearman": float(spearmanr(pred, gold)[0])}


def _tagging_metrics(
    task: TaskSpec, predictions: Sequence[Sequence[int]], references: Sequence[Sequence[int]]
) -> dict[str, float]:
    import seqeval.metrics as entity_metrics  # entity-level scores of IOB2 tag sequences

    _check_lengths(len(predictions), len(references))
    names = task.label_names
    pred_tags, gold_tags = [], []
    for number, (pred, gold) in enumerate(zip(predictions, references)):
        if len(pred) != len(gold):
            raise SpanftError(f"sentence {number}: {len(pred)} predicted tags for {len(gold)} gold tags")
        pred_tags.append([names[int(t)] for t in pred])
        gold_tags.append([names[int(t)] for t in gold])
    if not any(gold_tags):
        raise SpanftError(f"no tags to score: all {len(gold_tags)} sentences are empty")
    return {
        "f1": float(entity_metrics.f1_score(gold_tags, pred_tags, zero_division=0)),
        "precision": float(entity_metrics.precision_score(gold_tags, pred_tags, zero_division=0)),
        "recall": float(entity_metrics.recall_score(gold_tags, pred_tags, zero_division=0)),
        "accuracy": float(entity_metrics.accuracy_score(gold_tags, pred_tags)),
    }
