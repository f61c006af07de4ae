"""The verdicts on fabricated 3-seed runs whose per-seed scores are set exactly (so mean and median differ): the
gain's test (Welch over per-seed scores, checked against scipy), averages over columns (each seed's average;
MNLI-m and MNLI-mm share their runs' seed), Table 2's words, the dev/test tables' sign, the power words beside
every inconclusive verdict, and the cells that print intervals and p-values."""

from __future__ import annotations

import copy
import io
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_reports import N_EXAMPLES, PARAMS, _write_run, build_reports, write_segmented  # noqa: E402

from spanft.data.metrics import compute_metrics  # noqa: E402
from spanft.data.registry import get_task  # noqa: E402
from spanft.report.bootstrap import paired_bootstrap, summarize  # noqa: E402
from spanft.report.cells import bootstrap_p_cell, ci_cell  # noqa: E402
from spanft.report.context import combine  # noqa: E402
from spanft.report.seedtest import seed_test  # noqa: E402

SEEDS = [1, 2, 3]


def exact_run(root: Path, study: str, task_name: str, variant: str, seed: int, wrong: int,
              backbone: str = "tiny") -> None:
    """A run whose every eval split has exactly ``wrong`` of its 60 examples wrong (the rest right), at positions
    that move with the seed; test splits as test_reports writes them."""
    _write_run(root, study, backbone, task_name, variant, seed, error=0.0)
    task = get_task(task_name)
    path = root / study / backbone / task_name / variant / f"seed{seed}"
    metrics = json.loads((path / "metrics.json").read_text())
    for split in task.eval_splits:
        file = path / "predictions" / f"{split}.tsv"
        frame = pd.read_csv(file, sep="\t", dtype=str, keep_default_na=False)
        gold = [task.label_id(g) for g in frame["gold"]]
        pred = list(gold)
        for i in range(wrong):
            position = (7 * seed + 11 * i) % N_EXAMPLES if wrong < N_EXAMPLES else i
            pred[position] = (gold[position] + 1) % task.num_labels
        frame["pred"] = [task.label_names[p] for p in pred]
        frame.to_csv(file, sep="\t", index=False)
        metrics["metrics"][split] = compute_metrics(task, pred, gold)
    (path / "metrics.json").write_text(json.dumps(metrics))


def accuracy(wrong: int) -> float:
    return 1 - wrong / N_EXAMPLES


def glue_params(tasks: list[str], mcnemar: list[str] | None = None) -> dict:
    params = copy.deepcopy(PARAMS)
    params["studies"] = {"glue": {"backbones": ["tiny"], "tasks": tasks, "seeds": SEEDS}}
    params["reports"] = {**params["reports"], "mcnemar_tasks": mcnemar or tasks}
    return params


@pytest.fixture(scope="module")
def segmented(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("segmented")
    write_segmented(root)
    return root


# Table 1 fixture: three tasks, four of the paper's columns (MNLI twice); wrong counts per seed, per arm.
# MNLI's matched and mismatched splits of one run have the same count: their scores move together by seed.
WRONG = {
    ("rte", "baseline"): [20, 14, 15], ("rte", "sf"): [12, 19, 13],
    ("mnli", "baseline"): [22, 10, 13], ("mnli", "sf"): [9, 20, 11],
    ("qnli", "baseline"): [18, 16, 9], ("qnli", "sf"): [8, 17, 15],
}


@pytest.fixture(scope="module")
def glue(tmp_path_factory, segmented):
    root = tmp_path_factory.mktemp("glue3")
    for (task, variant), counts in WRONG.items():
        for seed, wrong in zip(SEEDS, counts):
            exact_run(root / "runs", "glue", task, variant, seed, wrong)
    return build_reports(glue_params(["rte", "mnli", "qnli"]), root / "runs", segmented)


def _csv(files: dict, name: str) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(files[name]))


def test_the_fixture_has_mean_and_median_apart():
    for counts in WRONG.values():
        assert np.mean(counts) != np.median(counts)


def test_column_gains_are_scipys_welch_over_per_seed_scores(glue):
    gains = _csv(glue, "tables/table1.csv").query("statistic == 'gain'").set_index("column")
    for column, task in (("rte", "rte"), ("mnli-m", "mnli"), ("mnli-mm", "mnli"), ("qnli", "qnli")):
        a = [accuracy(w) for w in WRONG[(task, "baseline")]]
        b = [accuracy(w) for w in WRONG[(task, "sf")]]
        welch = stats.ttest_ind(b, a, equal_var=False)
        low, high = welch.confidence_interval(0.95)
        row = gains.loc[column]
        assert (row["gain_pct"], row["ci_low_pct"], row["ci_high_pct"], row["p_value"]) == pytest.approx(
            (100 * (np.mean(b) - np.mean(a)), 100 * low, 100 * high, welch.pvalue), abs=1e-6)


def test_the_average_tests_each_seeds_average_and_mnli_shares_its_seed(glue):
    columns = [("rte", "rte"), ("mnli", "mnli"), ("mnli", "mnli"), ("qnli", "qnli")]  # MNLI-m and MNLI-mm
    per_seed = {arm: [np.mean([accuracy(WRONG[(task, arm)][i]) for _, task in columns]) for i in range(3)]
                for arm in ("baseline", "sf")}
    welch = stats.ttest_ind(per_seed["sf"], per_seed["baseline"], equal_var=False)
    low, high = welch.confidence_interval(0.95)
    verdict = _csv(glue, "tables/verdicts.csv").query("table == 1").iloc[0]
    assert (verdict["gain_pct"], verdict["ci_low_pct"], verdict["ci_high_pct"]) == pytest.approx(
        (100 * (np.mean(per_seed["sf"]) - np.mean(per_seed["baseline"])), 100 * low, 100 * high), abs=1e-6)
    # treating MNLI-m and MNLI-mm as independent columns would give another (narrower) interval
    var = sum(np.var([accuracy(w) for w in WRONG[(task, arm)]], ddof=1) / 3 for _, task in columns
              for arm in ("baseline", "sf")) / 16
    assert 100 * 2 * 1.96 * math.sqrt(var) < verdict["ci_high_pct"] - verdict["ci_low_pct"] - 1.0
    gains = _csv(glue, "tables/table1.csv").query("statistic == 'gain'").set_index("column")
    assert gains.loc["avg", "ci_low_pct"] != pytest.approx(verdict["ci_low_pct"])  # ours: 3 columns, MNLI once


def test_the_paper_gain_is_taken_over_every_column_we_have(glue):
    from spanft.report.paper import Paper

    row = {r.method: r for r in Paper.load().table(1).own_rows() if r.backbone == "bert-base-uncased"}
    keys = ["rte", "mnli-m", "mnli-mm", "qnli"]
    expected = np.mean([row["sf"].value(k) - row["baseline"].value(k) for k in keys])  # (2.5+0.4+0.8+0.3)/4
    verdict = _csv(glue, "tables/verdicts.csv").query("table == 1").iloc[0]
    assert verdict["paper_gain_pct"] == pytest.approx(expected) == pytest.approx(1.0)


def test_every_inconclusive_verdict_carries_its_detectable_gain(glue):
    verdicts = _csv(glue, "tables/verdicts.csv")
    table1 = verdicts.query("table == 1").iloc[0]
    assert table1["verdict"] == "inconclusive"
    # the detectable gain: scipy's Welch test, simulated at the per-seed averages' sds, finds it 80% of the time
    columns = ["rte", "mnli", "mnli", "qnli"]
    per_seed = {arm: np.array([np.mean([accuracy(WRONG[(t, arm)][i]) for t in columns]) for i in range(3)])
                for arm in ("baseline", "sf")}
    rng = np.random.default_rng(3)
    gain = table1["detectable_gain_pct"] / 100
    a = rng.normal(0, per_seed["baseline"].std(ddof=1), (20_000, 3))
    b = rng.normal(gain, per_seed["sf"].std(ddof=1), (20_000, 3))
    assert np.mean(stats.ttest_ind(b, a, axis=1, equal_var=False).pvalue < 0.05) == pytest.approx(0.8, abs=0.012)
    assert table1["seeds_needed"] > 3
    lines = [line for name, text in glue.items() if name.endswith(".md") for line in text.decode().splitlines()
             if "**inconclusive**" in line or "**partly reproduced**" in line]
    assert lines
    for line in lines:
        assert "detect" in line and "80% power" in line, line
    assert f"±{table1['detectable_gain_pct']:.1f} pp with 80% power" in glue["tables/table1.md"].decode()
    assert f"would need {int(table1['seeds_needed'])} seeds per arm" in glue["tables/table1.md"].decode()


# ------------------------------------------------------------------------------------------- Table 2's words


def _table2(tmp_path, segmented, wrong: dict[tuple[str, str], list[int]]) -> pd.Series:
    for (task, variant), counts in wrong.items():
        for seed, count in zip(SEEDS, counts):
            exact_run(tmp_path / "runs", "glue", task, variant, seed, count)
    tasks = sorted({task for task, _ in wrong})
    files = build_reports(glue_params(tasks), tmp_path / "runs", segmented)
    return _csv(files, "tables/verdicts.csv").query("table == 2").iloc[0], files


BETTER = {"baseline": [20, 21, 22], "sf": [5, 6, 7]}  # significant gain
WORSE = {"baseline": [5, 6, 7], "sf": [20, 21, 22]}  # significant loss
UP = {"baseline": [10, 16, 13], "sf": [15, 8, 11]}  # a gain of 1.7 points that holds 0
DOWN = {"baseline": [15, 8, 11], "sf": [10, 16, 13]}  # a loss of 1.7 points that holds 0


def _arms(**tasks) -> dict:
    return {(task, arm): counts for task, kind in tasks.items() for arm, counts in kind.items()}


@pytest.mark.parametrize("kinds, word, counts", [
    (dict(qnli=BETTER, rte=BETTER, mrpc=BETTER), "reproduced", (3, 0, 0)),
    (dict(qnli=BETTER, rte=UP, mrpc=DOWN), "partly reproduced", (1, 0, 2)),
    (dict(qnli=UP, rte=UP, mrpc=DOWN), "inconclusive", (0, 0, 3)),
    (dict(qnli=WORSE, rte=UP, mrpc=UP), "opposite sign", (0, 1, 2)),
    (dict(qnli=BETTER, rte=WORSE, mrpc=UP), "mixed signs", (1, 1, 1)),
], ids=["all", "partly", "nothing", "loss", "mixed"])
def test_table2_tells_every_significant_from_some_from_none(tmp_path, segmented, kinds, word, counts):
    verdict, files = _table2(tmp_path, segmented, _arms(**kinds))
    assert verdict["verdict"] == word
    better, worse, neither = counts
    assert (f"Of the 3 tasks with a test over seeds (Welch t), SF significantly better (95% interval above 0, "
            f"p < 0.05) on {better}, significantly worse on {worse}, neither on {neither};") in verdict["comparison"]
    rows = _csv(files, "tables/table2.csv").query("comparison == 'mean gain'")
    assert (rows["method"] == "seeds (Welch t)").all()
    assert files["tables/table2.md"].decode().count("| Welch t over seeds (3 per arm) |") == 3
    if neither:
        assert "Inconclusive tasks, " in verdict["comparison"] and "detectable ±" in verdict["comparison"]
        table = _csv(files, "tables/table2.csv").query("comparison == 'mean gain'")
        assert table["detectable_gain_pct"].notna().all()
    else:
        assert "Inconclusive tasks" not in verdict["comparison"]


def test_table2_counts_only_tasks_with_a_test_and_names_the_test_per_row(tmp_path, segmented):
    tied = {"baseline": [10, 10, 10], "sf": [8, 8, 8]}  # every seed of each arm right on the same count
    verdict, files = _table2(tmp_path, segmented, _arms(qnli=BETTER, rte=tied, mrpc=BETTER))
    text = verdict["comparison"]
    assert "Of the 2 tasks with a test over seeds (Welch t), SF significantly better" in text
    assert "on 2, significantly worse on 0, neither on 0; no inference on 1 of 3 tasks (rte: no spread" in text
    assert verdict["verdict"] == "partly reproduced"  # not "reproduced": one task was not tested
    table = files["tables/table2.md"].decode()
    assert "test of the mean gain that each row's \"test (SF − baseline)\" column names" in table
    assert "| no test: an arm's seeds tie (no spread) |" in table and "p = 0" not in table
    rte = _csv(files, "tables/table2.csv").query("comparison == 'mean gain' and task == 'rte'").iloc[0]
    assert math.isnan(rte["p_value"]) and math.isnan(rte["ci_low_pct"])
    assert rte["gain_pct"] == pytest.approx(100 * (accuracy(8) - accuracy(10)))


def test_table2_with_only_tied_tasks_says_so(tmp_path, segmented):
    verdict, _ = _table2(tmp_path, segmented, _arms(rte={"baseline": [10, 10, 10], "sf": [8, 8, 8]}))
    assert verdict["verdict"] == "no inference (no spread across seeds)"
    assert "Of the 0 tasks with a test over seeds" in verdict["comparison"]


def test_table2_prints_the_detectable_gain_in_points(tmp_path, segmented):
    _, files = _table2(tmp_path, segmented, _arms(rte=UP))
    csv = _csv(files, "tables/table2.csv").query("comparison == 'mean gain'").iloc[0]
    assert csv["detectable_gain_pct"] > 5  # points (x 100): a metric-unit cell would read ±0.2
    assert f"| ±{csv['detectable_gain_pct']:.1f} (" in files["tables/table2.md"].decode()


def test_table2_names_the_seeds_the_papers_task_gain_needs(tmp_path, segmented):
    verdict, _ = _table2(tmp_path, segmented, _arms(rte=UP))
    assert verdict["verdict"] == "inconclusive"
    # the paper's Table 1 RTE gain: 69.6 - 67.1 = 2.5 points (test)
    assert "rte: detectable ±" in verdict["comparison"] and "the paper's Table 1 gain +2.5 (test) would need" \
        in verdict["comparison"]


# ------------------------------------------------------------------------------------------- dev/test tables


def test_a_dev_test_verdict_keeps_the_gains_sign(tmp_path, segmented):
    # SNLI: SF is right more often on every seed, by about 13 points
    wrong = {("snli", "baseline"): [20, 23, 21], ("snli", "sf"): [12, 13, 11]}
    for (task, variant), counts in wrong.items():
        for seed, count in zip(SEEDS, counts):
            exact_run(tmp_path / "runs", "snli", task, variant, seed, count)
    params = copy.deepcopy(PARAMS)
    params["studies"] = {"snli": {"backbones": ["tiny"], "seeds": SEEDS, "encoders": []}}
    files = build_reports(params, tmp_path / "runs", segmented)
    verdict = _csv(files, "tables/verdicts.csv").query("table == 5").iloc[0]
    expected = 100 * (np.mean([accuracy(w) for w in wrong[("snli", "sf")]])
                      - np.mean([accuracy(w) for w in wrong[("snli", "baseline")]]))
    assert expected > 10 and verdict["gain_pct"] == pytest.approx(expected)
    assert verdict["ci_low_pct"] > 0 and verdict["verdict"] == "larger than published"  # the paper: +0.3


# ------------------------------------------------------------------------------------------- cells and draws


def test_the_interval_cell_prints_low_then_high():
    result = seed_test([0.70, 0.72, 0.76], [0.70, 0.745, 0.75], [1, 2, 3], [1, 2, 3], 100)
    assert result.low < result.high
    assert ci_cell(result) == f"{100 * result.gain:+.1f} [{100 * result.low:+.1f}, {100 * result.high:+.1f}]"


def test_the_p_cell_marks_the_resampling_floor_as_a_bound():
    at_floor = summarize(0.02, np.linspace(0.01, 0.03, 399), 100)
    assert at_floor.p_at_floor and bootstrap_p_cell(at_floor) == "≤ 0.005"  # 2 / 400
    off = summarize(0.02, np.concatenate([[-0.01] * 9, np.linspace(0.01, 0.03, 390)]), 100)
    assert not off.p_at_floor and bootstrap_p_cell(off) == "0.05"  # 2 (9 + 1) / 400
    assert bootstrap_p_cell(seed_test([0.7, 0.72, 0.76], [0.7, 0.745, 0.75], [1, 2, 3], [1, 2, 3], 9))[0] != "≤"


def test_only_an_arm_with_several_runs_is_flagged_resampled():
    task = get_task("rte")
    rng = np.random.default_rng(3)
    gold = list(rng.integers(0, 2, 50))
    runs = [list(np.where(rng.random(50) < 0.3, 1 - np.array(gold), gold)) for _ in range(4)]
    one_three = paired_bootstrap(task, "accuracy", gold, runs[:1], runs[1:], 99, 0)
    assert (one_three.resampled_a, one_three.resampled_b, one_three.runs_resampled) == (False, True, False)
    three_one = paired_bootstrap(task, "accuracy", gold, runs[:3], runs[3:], 99, 0)
    assert (three_one.resampled_a, three_one.resampled_b, three_one.runs_resampled) == (True, False, False)
    both = paired_bootstrap(task, "accuracy", gold, runs[:2], runs[2:], 99, 0)
    assert both.runs_resampled


def test_columns_of_the_same_runs_share_their_run_draws():
    # runs right on every example or on none: a resample's gain depends on its run draws only
    task = get_task("mnli")
    gold = [0] * 20
    right, wrong = [0] * 20, [1] * 20
    arms = ([right, wrong, right], [wrong, right, right])
    m = paired_bootstrap(task, "accuracy", gold, *arms, 200, seed=[0, 1], run_seed=[0, 7])
    mm = paired_bootstrap(task, "accuracy", gold, *arms, 200, seed=[0, 2], run_seed=[0, 7])
    np.testing.assert_array_equal(m.distribution, mm.distribution)
    other = paired_bootstrap(task, "accuracy", gold, *arms, 200, seed=[0, 2], run_seed=[0, 8])
    assert not np.array_equal(m.distribution, other.distribution)


def test_combine_averages_per_seed_not_per_column():
    # two columns of the same runs (seed effects identical) and one of other runs
    a1, b1 = [0.70, 0.74, 0.72], [0.73, 0.77, 0.74]
    a3, b3 = [0.60, 0.61, 0.65], [0.62, 0.66, 0.61]
    tests = [seed_test(a, b, SEEDS, SEEDS, 10) for a, b in ((a1, b1), (a1, b1), (a3, b3))]
    average = combine(tests)
    per_a = [np.mean([a1[i], a1[i], a3[i]]) for i in range(3)]
    per_b = [np.mean([b1[i], b1[i], b3[i]]) for i in range(3)]
    welch = stats.ttest_ind(per_b, per_a, equal_var=False)
    assert (average.low, average.high) == pytest.approx(tuple(welch.confidence_interval(0.95)), rel=1e-9)
    assert average.gain == pytest.approx(np.mean(per_b) - np.mean(per_a))
    assert average.columns == 3


def test_the_report_draws_the_same_runs_for_mnli_matched_and_mismatched(tmp_path):
    # 1 baseline run against 3 SF runs, each right on every example or on none: the bootstrap's resampled gains
    # depend on its draws of SF's runs only, so MNLI's two splits give equal distributions when they share them
    from spanft.report.context import Comparisons
    from spanft.report.runs import load_runs

    exact_run(tmp_path, "glue", "mnli", "baseline", 1, 0)
    for seed, wrong in zip(SEEDS, [0, N_EXAMPLES, 0]):
        exact_run(tmp_path, "glue", "mnli", "sf", seed, wrong)
    base = load_runs(tmp_path, "glue", "tiny", "mnli", "baseline", [1])
    sf = load_runs(tmp_path, "glue", "tiny", "mnli", "sf", SEEDS)
    comparisons = Comparisons(99, 0)
    matched, mismatched = (comparisons.compare(base, sf, split, "accuracy") for split in get_task("mnli").eval_splits)
    assert not matched.method_inference and matched.resampled_b and not matched.resampled_a
    assert len(set(matched.distribution)) > 1
    np.testing.assert_array_equal(matched.distribution, mismatched.distribution)


def test_an_average_says_an_arm_was_resampled_only_when_every_column_resampled_it():
    from dataclasses import replace

    from spanft.report.bootstrap import mean_of

    base = summarize(0.01, np.linspace(-0.01, 0.03, 99), 50)
    resampled = replace(base, runs_a=1, runs_b=3, resampled_b=True)
    fixed = replace(base, runs_a=1, runs_b=1)
    average = mean_of([resampled, fixed])
    assert (average.resampled_a, average.resampled_b, average.runs_b) == (False, False, 1)
    assert mean_of([resampled, resampled]).resampled_b


# ------------------------------------------------------------------------------------------- Table 1's cells


def test_table1_means_are_means_not_medians(glue):
    table = _csv(glue, "tables/table1.csv").query("statistic == 'ours'").set_index(["method", "column"])
    for (task, arm), counts in WRONG.items():
        scores = [100 * accuracy(w) for w in counts]
        column = "mnli-m" if task == "mnli" else task
        assert np.mean(scores) != np.median(scores)
        assert table.loc[(arm, column), "mean_pct"] == pytest.approx(np.mean(scores))
        assert table.loc[(arm, column), "sd_pct"] == pytest.approx(np.std(scores, ddof=1))
    rows = glue["tables/table1.md"].decode()
    assert f"{np.mean([100 * accuracy(w) for w in WRONG[('rte', 'baseline')]]):.1f} ± " in rows


def test_a_paper_rule_average_needs_all_nine_columns(glue):
    # the fixture has 4 of the nine (RTE, MNLI-m, MNLI-mm, QNLI): no partial average, no gain, no verdict on it
    table = _csv(glue, "tables/table1.csv")
    ours = table.query("statistic == 'ours' and column == 'avg-paper-rule'")
    assert len(ours) == 2 and ours["mean_pct"].isna().all() and (ours["n_seeds"] == 0).all()
    gain = table.query("statistic == 'gain' and column == 'avg-paper-rule'")
    assert gain["gain_pct"].isna().all()


def test_an_average_is_two_level_only_when_every_column_resampled_both_arms():
    from dataclasses import replace

    from spanft.report.bootstrap import mean_of

    base = summarize(0.01, np.linspace(-0.01, 0.03, 99), 50)
    both = replace(base, runs_a=3, runs_b=3, resampled_a=True, resampled_b=True)
    baseline_only = replace(base, runs_a=3, runs_b=1, resampled_a=True)
    average = mean_of([both, baseline_only])
    assert (average.resampled_a, average.resampled_b, average.runs_resampled) == (True, False, False)
    assert not mean_of([both, replace(base, runs_a=1, runs_b=3, resampled_b=True)]).resampled_a
    assert mean_of([both, both]).runs_resampled


def test_an_averages_nan_resamples_leave_its_floor_at_2_over_finite_plus_1():
    from spanft.report.bootstrap import mean_of

    # a Pearson column with 100 constant-input (NaN) resamples: the average's finite resamples are 299, all > 0
    finite = np.linspace(0.01, 0.03, 399)
    with_nan = finite.copy()
    with_nan[:100] = np.nan
    average = mean_of([summarize(0.02, finite, 50), summarize(0.02, with_nan, 50)])
    assert average.finite == 299 and average.p_value == pytest.approx(2 / 300)
    assert average.p_at_floor and bootstrap_p_cell(average) == "≤ 0.00667"


def test_a_run_no_better_than_a_constant_predictor_is_named_in_the_verdict_line(tmp_path, segmented):
    """From the runs' own predictions: SF's seed 2 gets every RTE example wrong (below the majority class)."""
    for variant, counts in (("baseline", [20, 14, 15]), ("sf", [12, N_EXAMPLES, 13])):
        for seed, wrong in zip(SEEDS, counts):
            exact_run(tmp_path / "runs", "glue", "rte", variant, seed, wrong)
    files = build_reports(glue_params(["rte"]), tmp_path / "runs", segmented)
    line = next(line for line in files["tables/table1.md"].decode().splitlines() if line.startswith("- **"))
    assert "degenerate seeds: compared seed 2 (failed run: no better than a constant predictor" in line
    assert "baseline seed" not in line
    table2 = next(line for line in files["tables/table2.md"].decode().splitlines() if line.startswith("- **"))
    assert "rte: degenerate seeds: compared seed 2 (failed run" in table2


def test_a_one_seed_average_is_the_mean_of_its_columns_bootstraps(tmp_path, segmented):
    """Tables 1, 4, 6's Avg with 1 seed per arm: its gain is the mean of the columns' gains (exactly), its interval
    as wide as independent columns' combine to (the root of the summed squared widths over their count, within
    Monte Carlo error), centred near the gain, and its p below 0.05 exactly when the interval excludes 0."""
    wrong = {("rte", "baseline"): 20, ("rte", "sf"): 8, ("mnli", "baseline"): 15, ("mnli", "sf"): 14,
             ("qnli", "baseline"): 18, ("qnli", "sf"): 12}
    for (task, variant), count in wrong.items():
        exact_run(tmp_path / "runs", "glue", task, variant, 1, count)
    params = glue_params(["rte", "mnli", "qnli"])
    params["studies"]["glue"]["seeds"] = [1]
    files = build_reports(params, tmp_path / "runs", segmented)
    gains = _csv(files, "tables/table1.csv").query("statistic == 'gain'").set_index("column")
    columns = gains.loc[["rte", "mnli-m", "qnli"]]
    assert columns["gain_pct"].tolist() == pytest.approx(
        [100 * (accuracy(wrong[(t, "sf")]) - accuracy(wrong[(t, "baseline")])) for t in ("rte", "mnli", "qnli")])
    avg = gains.loc["avg"]
    assert avg["gain_pct"] == pytest.approx(columns["gain_pct"].mean(), abs=2e-6)
    widths = (columns["ci_high_pct"] - columns["ci_low_pct"]).to_numpy()
    assert avg["ci_high_pct"] - avg["ci_low_pct"] == pytest.approx(math.sqrt(np.sum(widths ** 2)) / 3, rel=0.2)
    assert avg["ci_low_pct"] < avg["gain_pct"] < avg["ci_high_pct"]
    assert (avg["p_value"] < 0.05) == (avg["ci_low_pct"] > 0 or avg["ci_high_pct"] < 0)
    line = next(line for line in files["tables/table1.md"].decode().splitlines() if line.startswith("- **"))
    verdict = _csv(files, "tables/verdicts.csv").query("table == 1").iloc[0]
    four = gains.loc[["rte", "mnli-m", "mnli-mm", "qnli"], "gain_pct"].mean()  # the paper's rule: MNLI twice
    assert verdict["gain_pct"] == pytest.approx(four, abs=2e-6)
    assert f"{verdict['gain_pct']:+.1f} pp, example-level 95% CI" in line
