"""Metrics against hand computations and slow, obviously correct reference loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanft.data.metrics import compute_metrics
from spanft.data.registry import get_task
from spanft.errors import SpanftError


def test_cola_mcc_by_hand():
    # gold 1 1 1 0 0 0 ; pred 1 1 0 0 0 1  -> TP=2 TN=2 FP=1 FN=1
    # MCC = (2*2 - 1*1) / sqrt(3*3*3*3) = 3/9
    result = compute_metrics(get_task("cola"), [1, 1, 0, 0, 0, 1], [1, 1, 1, 0, 0, 0])
    assert result["mcc"] == pytest.approx(1 / 3)
    assert result["accuracy"] == pytest.approx(4 / 6)


def test_mrpc_f1_positive_class_by_hand():
    # gold 1 1 0 0 0; pred 1 1 1 1 0. Positive class (equivalent): TP=2 FP=2 FN=0 -> F1 = 2*2/(2*2+2+0) = 2/3.
    # Negative class: TP=1 FP=0 FN=2 -> F1 = 2/(2+2) = 1/2, and their macro mean 7/12: only class 1 gives 2/3.
    result = compute_metrics(get_task("mrpc"), [1, 1, 1, 1, 0], [1, 1, 0, 0, 0])
    assert result["f1"] == pytest.approx(2 / 3)
    assert result["f1"] != pytest.approx(1 / 2) and result["f1"] != pytest.approx(7 / 12)
    assert result["accuracy"] == pytest.approx(3 / 5)
    assert get_task("qqp").main_metric == "f1"


def test_accuracy_from_logits():
    logits = np.array([[0.1, 0.9, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    assert compute_metrics(get_task("mnli"), logits, [1, 1, 2]) == {"accuracy": pytest.approx(2 / 3)}


def test_stsb_pearson_spearman_by_hand():
    # pred = 2*gold + 1 is perfectly linear; a swapped pair breaks Spearman: ranks 1 2 4 3 vs 1 2 3 4
    # Spearman = 1 - 6*sum(d^2)/(n(n^2-1)) = 1 - 6*2/60 = 0.8
    result = compute_metrics(get_task("stsb"), [1.0, 2.0, 4.0, 3.5], [0.0, 1.0, 2.0, 3.0])
    assert result["spearman"] == pytest.approx(0.8)
    linear = compute_metrics(get_task("stsb"), [1.0, 3.0, 5.0, 7.0], [0.0, 1.0, 2.0, 3.0])
    assert linear["pearson"] == pytest.approx(1.0)


def test_stsb_pearson_hand_value():
    # x = 1 2 3, y = 1 3 2: cov = (−1)(−1)+0+(1)(0) = 1; var_x = 2, var_y = 2 -> r = 0.5
    assert compute_metrics(get_task("stsb"), [1, 2, 3], [1, 3, 2])["pearson"] == pytest.approx(0.5)


def test_constant_prediction_gives_nan_correlation():
    result = compute_metrics(get_task("stsb"), [2.0, 2.0, 2.0], [1.0, 2.0, 3.0])
    assert math.isnan(result["pearson"]) and math.isnan(result["spearman"])


def test_conll_entity_f1_by_hand():
    task = get_task("conll2003")
    tag = {name: i for i, name in enumerate(task.label_names)}
    gold = [[tag["B-PER"], tag["I-PER"], tag["O"], tag["B-LOC"]], [tag["B-ORG"], tag["O"]]]
    # sentence 1: PER right, LOC predicted as MISC; sentence 2: ORG missed, a spurious MISC
    pred = [[tag["B-PER"], tag["I-PER"], tag["O"], tag["B-MISC"]], [tag["O"], tag["B-MISC"]]]
    # gold entities 3, predicted 3, correct 1 -> P = R = F1 = 1/3; token accuracy 3/6
    result = compute_metrics(task, pred, gold)
    assert result["precision"] == pytest.approx(1 / 3)
    assert result["recall"] == pytest.approx(1 / 3)
    assert result["f1"] == pytest.approx(1 / 3)
    assert result["accuracy"] == pytest.approx(3 / 6)


def test_conll_entity_boundary_matters():
    task = get_task("conll2003")
    tag = {name: i for i, name in enumerate(task.label_names)}
    gold = [[tag["B-PER"], tag["I-PER"]]]
    pred = [[tag["B-PER"], tag["O"]]]  # right type, wrong extent: no credit
    assert compute_metrics(task, pred, gold)["f1"] == 0.0


def test_length_mismatch_is_a_user_error():
    with pytest.raises(SpanftError, match="2 predictions for 3 references"):
        compute_metrics(get_task("sst2"), [0, 1], [0, 1, 1])
    with pytest.raises(SpanftError, match="sentence 0"):
        compute_metrics(get_task("conll2003"), [[0, 0]], [[0]])


def _slow_mcc(pred, gold):
    tp = sum(p == 1 and g == 1 for p, g in zip(pred, gold))
    tn = sum(p == 0 and g == 0 for p, g in zip(pred, gold))
    fp = sum(p == 1 and g == 0 for p, g in zip(pred, gold))
    fn = sum(p == 0 and g == 1 for p, g in zip(pred, gold))
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return 0.0 if denominator == 0 else (tp * tn - fp * fn) / denominator


def _slow_f1(pred, gold):
    tp = sum(p == 1 and g == 1 for p, g in zip(pred, gold))
    fp = sum(p == 1 and g == 0 for p, g in zip(pred, gold))
    fn = sum(p == 0 and g == 1 for p, g in zip(pred, gold))
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=1, max_size=40))
def test_binary_metrics_match_slow_loops(pairs):
    pred = [p for p, _ in pairs]
    gold = [g for _, g in pairs]
    cola = compute_metrics(get_task("cola"), pred, gold)
    mrpc = compute_metrics(get_task("mrpc"), pred, gold)
    assert cola["mcc"] == pytest.approx(_slow_mcc(pred, gold), abs=1e-9)
    assert mrpc["f1"] == pytest.approx(_slow_f1(pred, gold), abs=1e-9)
    assert mrpc["accuracy"] == pytest.approx(sum(p == g for p, g in pairs) / len(pairs))


def test_every_task_reports_its_main_metric():
    from spanft.data.registry import TASKS

    for task in TASKS.values():
        if task.is_tagging:
            result = compute_metrics(task, [[1, 2, 0]], [[1, 2, 0]])
        elif task.is_regression:
            result = compute_metrics(task, [0.0, 1.0, 2.0], [0.0, 1.0, 2.5])
        else:
            result = compute_metrics(task, [0, 1, 1], [0, 1, 0])
        assert task.main_metric in result
        assert set(result) == set(task.metrics)


def test_an_accuracy_task_imports_no_metric_library():
    # A fine-tuning stage is a fresh process: scikit-learn, scipy.stats and seqeval cost it about 0.4 s to
    # import, so each is imported by the metric that needs it, and an accuracy task scores without them.
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from spanft.data.metrics import compute_metrics\n"
        "from spanft.data.registry import get_task\n"
        "compute_metrics(get_task('sst2'), [1, 0, 1], [1, 1, 1])\n"
        "print(sorted(m for m in ('sklearn', 'scipy.stats', 'seqeval') if m in sys.modules))\n"
        "compute_metrics(get_task('cola'), [1, 0, 1], [1, 1, 0])\n"
        "print(sorted(m for m in ('sklearn', 'scipy.stats', 'seqeval') if m in sys.modules))\n"
    )
    after_accuracy, after_mcc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert after_accuracy == "[]"
    assert "'sklearn'" in after_mcc and "'seqeval'" not in after_mcc  # MCC needs scikit-learn, not seqeval


def test_tagging_with_only_empty_sentences_is_one_line_error():
    with pytest.raises(SpanftError, match="no tags to score: all 2 sentences are empty"):
        compute_metrics(get_task("conll2003"), [[], []], [[], []])
