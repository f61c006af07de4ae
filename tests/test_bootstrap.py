"""The two-level paired bootstrap (spanft.report.bootstrap) against independent computations.

Oracles: compute_metrics (scikit-learn, scipy, seqeval) on explicitly resampled runs and examples in a slow
loop with the same random draws; exact enumeration of every two-level resample of a tiny split; McNemar's
test in the one-seed limit; the interval and p-value rule written out with order statistics.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import multinomial

from spanft.data.metrics import compute_metrics
from spanft.data.registry import get_task
from spanft.errors import SpanftError
from spanft.report.bootstrap import (
    example_statistics,
    mean_of,
    metric_from_sums,
    paired_bootstrap,
    summarize,
)
from spanft.report.stats import mcnemar_from_correct

CASES = [("cola", "mcc"), ("mrpc", "f1"), ("qqp", "accuracy"), ("mnli", "accuracy"), ("stsb", "pearson"),
         ("conll2003", "f1")]


def fake_runs(task_name: str, n: int, seeds: int, error: float, rng: np.random.Generator):
    """Gold labels and ``seeds`` prediction lists of one task, each wrong on about ``error`` of the examples."""
    task = get_task(task_name)
    if task.is_tagging:
        gold = [list(rng.choice([0, 0, 0, 1, 2, 3, 5], size=int(rng.integers(1, 7)))) for _ in range(n)]
        preds = [[[t if rng.random() > error else int(rng.integers(0, 9)) for t in row] for row in gold]
                 for _ in range(seeds)]
        return gold, preds
    if task.is_regression:
        gold = rng.uniform(0, 5, n)
        return list(gold), [list(gold + rng.normal(0, 4 * error, n)) for _ in range(seeds)]
    gold = rng.integers(0, task.num_labels, n)
    errors = error * rng.uniform(0.3, 1.7, seeds)  # runs of different quality, as seeds give
    preds = [list(np.where(rng.random(n) < e, rng.integers(0, task.num_labels, n), gold)) for e in errors]
    return list(gold), preds


def metric_gain(task, metric, gold, preds_a, preds_b, index=None, runs_a=None, runs_b=None) -> float:
    """Mean over B's runs minus mean over A's runs, with compute_metrics on the examples ``index`` picks;
    ``runs_a`` / ``runs_b``: the runs each side uses (indices, repeats allowed; default every run once)."""
    index = range(len(gold)) if index is None else index
    runs_a = range(len(preds_a)) if runs_a is None else runs_a
    runs_b = range(len(preds_b)) if runs_b is None else runs_b

    def score(pred) -> float:
        return compute_metrics(task, [pred[i] for i in index], [gold[i] for i in index])[metric]

    return float(np.mean([score(preds_b[j]) for j in runs_b]) - np.mean([score(preds_a[j]) for j in runs_a]))


@pytest.mark.parametrize("name, metric", CASES)
def test_the_resamples_equal_a_slow_loop_with_the_same_draws(name, metric):
    task = get_task(name)
    rng = np.random.default_rng([11, len(name)])
    gold, preds = fake_runs(name, 40, 5, 0.3, rng)
    a, b = preds[:2], preds[2:]  # 2 baseline runs, 3 SF runs
    result = paired_bootstrap(task, metric, gold, a, b, resamples=60, seed=[3, 4])
    draws = np.random.default_rng([3, 4])
    runs_a, runs_b = draws.integers(0, 2, size=(60, 2)), draws.integers(0, 3, size=(60, 3))
    slow = [metric_gain(task, metric, gold, a, b, draws.integers(0, 40, size=40), runs_a[r], runs_b[r])
            for r in range(60)]
    np.testing.assert_allclose(result.distribution, slow, rtol=1e-9, atol=1e-12)
    assert (result.runs_a, result.runs_b, result.runs_resampled) == (2, 3, True)
    fixed = paired_bootstrap(task, metric, gold, a, b, resamples=60, seed=[3, 4], resample_runs=False)
    draws = np.random.default_rng([3, 4])
    slow = [metric_gain(task, metric, gold, a, b, draws.integers(0, 40, size=40)) for _ in range(60)]
    np.testing.assert_allclose(fixed.distribution, slow, rtol=1e-9, atol=1e-12)
    assert not fixed.runs_resampled
    assert result.gain == pytest.approx(metric_gain(task, metric, gold, preds[:2], preds[2:]), abs=1e-12)
    # a plausible wrong "gain": the best B run minus the best A run is another number here
    best = max(compute_metrics(task, p, gold)[metric] for p in preds[2:]) - \
        max(compute_metrics(task, p, gold)[metric] for p in preds[:2])
    assert abs(best - result.gain) > 1e-6


def test_blocks_do_not_change_the_draws(monkeypatch):
    from spanft.report import bootstrap

    task = get_task("mrpc")
    gold, preds = fake_runs("mrpc", 30, 2, 0.3, np.random.default_rng(5))
    gold, preds = fake_runs("mrpc", 30, 4, 0.3, np.random.default_rng(5))
    whole = paired_bootstrap(task, "f1", gold, preds[:2], preds[2:], resamples=50, seed=9)
    monkeypatch.setattr(bootstrap, "BLOCK_ENTRIES", 30 * 7)  # blocks of 7 resamples
    blocked = paired_bootstrap(task, "f1", gold, preds[:2], preds[2:], resamples=50, seed=9)
    np.testing.assert_array_equal(whole.distribution, blocked.distribution)


def test_monte_carlo_converges_to_the_exact_bootstrap_of_a_tiny_split():
    """Every resample of 6 examples (as a multiset, with its multinomial probability) and every draw of 2 runs
    from each arm's 2 (16 equally likely pairs of draws), scored with sklearn."""
    task = get_task("cola")
    gold = [1, 1, 0, 0, 1, 0]
    preds_a = [[1, 0, 0, 1, 1, 0], [1, 1, 1, 0, 0, 0]]
    preds_b = [[1, 1, 0, 0, 1, 1], [0, 1, 0, 0, 1, 0]]
    n = len(gold)
    exact_mean = exact_below = exact_above = 0.0
    run_draws = list(itertools.product(range(2), repeat=2))
    for multiset in itertools.combinations_with_replacement(range(n), n):
        counts = np.bincount(multiset, minlength=n)
        probability = multinomial.pmf(counts, n, [1 / n] * n) / len(run_draws) ** 2
        scores_a = [compute_metrics(task, [p[i] for i in multiset], [gold[i] for i in multiset])["mcc"]
                    for p in preds_a]
        scores_b = [compute_metrics(task, [p[i] for i in multiset], [gold[i] for i in multiset])["mcc"]
                    for p in preds_b]
        for draw_a, draw_b in itertools.product(run_draws, run_draws):
            gain = np.mean([scores_b[j] for j in draw_b]) - np.mean([scores_a[j] for j in draw_a])
            exact_mean += probability * gain
            exact_below += probability * (gain <= 0)
            exact_above += probability * (gain >= 0)
    resamples = 20000
    result = paired_bootstrap(task, "mcc", gold, preds_a, preds_b, resamples=resamples, seed=1)
    error = result.distribution.std() / math.sqrt(resamples)
    assert result.distribution.mean() == pytest.approx(exact_mean, abs=4 * error)

    def share(p: float) -> float:  # four binomial standard errors
        return 4 * math.sqrt(p * (1 - p) / resamples) + 1e-9

    assert np.mean(result.distribution <= 0) == pytest.approx(exact_below, abs=share(exact_below))
    assert np.mean(result.distribution >= 0) == pytest.approx(exact_above, abs=share(exact_above))
    exact_p = min(1.0, 2 * min(exact_below, exact_above))
    assert result.p_value == pytest.approx(exact_p, abs=0.02)


@pytest.mark.parametrize("only_a, only_b", [(30, 50), (20, 45), (40, 42), (10, 60), (25, 12)])
def test_one_seed_accuracy_agrees_with_mcnemar(only_a, only_b):
    """With one run a side, the accuracy gain is (only_b - only_a) / n: its bootstrap p and McNemar's agree."""
    both, neither = 200, 100
    gold = [1] * (both + only_a + only_b + neither)
    correct_a = [True] * both + [True] * only_a + [False] * only_b + [False] * neither
    correct_b = [True] * both + [False] * only_a + [True] * only_b + [False] * neither
    pred_a = [1 if c else 0 for c in correct_a]
    pred_b = [1 if c else 0 for c in correct_b]
    result = paired_bootstrap(get_task("qqp"), "accuracy", gold, [pred_a], [pred_b], resamples=20000, seed=2)
    mcnemar = mcnemar_from_correct(correct_a, correct_b)
    assert result.gain == pytest.approx((only_b - only_a) / len(gold))
    assert np.sign(result.gain) == np.sign(only_b - only_a)
    assert (result.low > 0 or result.high < 0) == (mcnemar.p_value < 0.05)
    floor = 2 / (20000 + 1)  # the smallest p the bootstrap can give
    if mcnemar.p_value < floor:
        assert result.p_value < 10 * floor
    else:
        assert abs(math.log10(result.p_value) - math.log10(mcnemar.p_value)) < 0.5


def test_the_average_of_columns_bootstraps_each_column_on_its_own_draws():
    rng = np.random.default_rng(4)
    columns = []
    for name, metric, seed in (("cola", "mcc", [0, 1]), ("stsb", "pearson", [0, 2])):
        gold, preds = fake_runs(name, 25, 2, 0.3, rng)
        columns.append((get_task(name), metric, gold, preds, seed))
    results = [paired_bootstrap(t, m, g, p[:1], p[1:], 80, s) for t, m, g, p, s in columns]
    average = mean_of(results)
    slow = []
    draws = [np.random.default_rng(seed) for *_, seed in columns]
    for _ in range(80):
        gains = [metric_gain(t, m, g, p[:1], p[1:], d.integers(0, 25, size=25))
                 for (t, m, g, p, _), d in zip(columns, draws)]
        slow.append(np.mean(gains))
    np.testing.assert_allclose(average.distribution, slow, rtol=1e-9, atol=1e-12)
    assert average.gain == pytest.approx(np.mean([r.gain for r in results]))
    assert average.n_examples == 50


def test_interval_and_p_value_from_a_known_distribution():
    # 79 finite resamples -1, 1, 2, ..., 78 (and a NaN): j = floor(0.05 * 80 / 2) = 2, so the interval is the
    # 2nd and 78th smallest; one resample at or below 0 -> p = 2 (1 + 1) / 80
    distribution = np.array([np.nan, 5.0, -1.0, *range(1, 5), *range(6, 79)])
    result = summarize(1.5, distribution, 10)
    assert result.p_value == pytest.approx(0.05) and not result.p_at_floor
    assert (result.low, result.high) == (1.0, 77.0)
    assert result.significant  # excludes 0, and p <= 0.05: the same statement
    assert math.isnan(summarize(math.nan, distribution, 10).low)
    identical = summarize(0.0, np.zeros(100), 10)
    assert identical.p_value == 1.0 and identical.low == identical.high == 0.0
    assert math.isnan(summarize(0.5, np.arange(38.0), 10).low)  # under 39 finite resamples: no 95% interval
    floor = summarize(0.5, np.arange(1.0, 40.0), 10)
    assert floor.p_value == pytest.approx(2 / 40) and floor.p_at_floor and floor.low == 1.0


@settings(max_examples=200, deadline=None)
@given(st.integers(39, 3000), st.integers(0, 200), st.booleans(), st.integers(0, 2**32 - 1))
def test_the_interval_excludes_0_exactly_when_p_is_at_most_005(size, far, upper, seed):
    """One rule: for any sorted resamples, [g(j), g(R+1-j)] excludes 0 iff p <= 0.05 (checked in exact fractions)."""
    from fractions import Fraction

    far = min(far, size)
    rng = np.random.default_rng(seed)
    values = np.concatenate([-rng.uniform(0, 1, far), rng.uniform(1e-6, 1, size - far)])  # `far` at or below 0
    values = -values if upper else values
    result = summarize(float(np.median(values)), rng.permutation(values), 10)
    p_exact = min(Fraction(1), Fraction(2 * (min(far, size - far) + 1), size + 1))
    assert result.p_value == pytest.approx(float(p_exact))
    assert result.significant == (p_exact <= Fraction(1, 20))
    j = (size + 1) // 40  # floor(0.05 (R + 1) / 2)
    ordered = np.sort(values)
    assert (result.low, result.high) == (ordered[j - 1], ordered[size - j])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CASES), st.integers(0, 10_000), st.integers(2, 30))
def test_metrics_from_summed_statistics_equal_compute_metrics(case, seed, n):
    name, metric = case
    task = get_task(name)
    gold, (pred,) = fake_runs(name, n, 1, 0.4, np.random.default_rng(seed))
    expected = compute_metrics(task, pred, gold)[metric]
    value = float(metric_from_sums(task, metric, example_statistics(task, metric, gold, pred).sum(axis=0)))
    if math.isnan(expected):
        assert math.isnan(value)
    else:
        assert value == pytest.approx(expected, abs=1e-9)


def test_constant_predictions_follow_compute_metrics_conventions():
    cola, stsb = get_task("cola"), get_task("stsb")
    for pred in ([1, 1, 1, 1], [0, 0, 0, 0]):
        sums = example_statistics(cola, "mcc", [1, 0, 1, 0], pred).sum(axis=0)
        assert float(metric_from_sums(cola, "mcc", sums)) == compute_metrics(cola, pred, [1, 0, 1, 0])["mcc"] == 0.0
    sums = example_statistics(stsb, "pearson", [1.0, 2.0, 3.0], [2.0, 2.0, 2.0]).sum(axis=0)
    assert math.isnan(float(metric_from_sums(stsb, "pearson", sums)))


def test_bad_inputs_are_errors():
    task = get_task("mrpc")
    with pytest.raises(SpanftError, match="one prediction per example"):
        paired_bootstrap(task, "f1", [0, 1], [[0, 1]], [[0]], 10, 0)
    with pytest.raises(SpanftError, match="at least one run"):
        paired_bootstrap(task, "f1", [0, 1], [], [[0, 1]], 10, 0)
    with pytest.raises(SpanftError, match="resamples must be positive"):
        paired_bootstrap(task, "f1", [0, 1], [[0, 1]], [[0, 1]], 0, 0)
    with pytest.raises(SpanftError, match="spearman"):
        paired_bootstrap(get_task("stsb"), "spearman", [0.0, 1.0], [[0.0, 1.0]], [[0.0, 1.0]], 10, 0)
