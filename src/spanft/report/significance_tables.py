"""Tables 2 and 3, on the glue study's baseline and +SF runs (Table 1's two arms, :mod:`spanft.report.context`).
Table 2, significance: per backbone and task, McNemar's test of the best runs (the paper's test), McNemar per
seed, and the verdict's test of SF − baseline (Welch's t over per-seed scores; with 1 seed in an arm the
example-level bootstrap) with the gain it could detect, and a verdict per backbone that tells "every task
significant" from "some significant, the rest inconclusive", from "no task shows anything", and from losses.
Table 3, cost: per backbone and task, the mean measured fine-tuning seconds of each arm, their ratio, the
devices and the extra parameters of span fine-tuning, beside the paper's number.
"""

from __future__ import annotations

import math

import pandas as pd

from spanft.errors import SpanftError
from spanft.report import degenerate, reach
from spanft.report.cells import (
    DASH,
    Table,
    bootstrap_p_cell,
    ci_cell,
    csv_number,
    fixed,
    gain_fields,
    p_value_cell,
)
from spanft.report.context import Comparison, ReportContext, methods
from spanft.report.paper import METRIC_NAMES
from spanft.report.runs import Run, best_run, summarize
from spanft.report.stats import mcnemar_files
from spanft.report.verdict import (
    INCONCLUSIVE,
    MACHINERY,
    MIXED,
    NO_INFERENCE,
    NO_SPREAD,
    OPPOSITE,
    PARTLY,
    REPRODUCED,
    SYNTHETIC,
    PlainVerdict,
    interval_level,
    seeds_words,
    signed,
    test_name,
)

TABLE2_NOTES = [
    "Best runs: each task's best baseline run against its best +SF run (best = highest dev main metric).",
    "McNemar: exact binomial test when the discordant pairs (only baseline + only SF) are fewer than 25, "
    "else chi-square with continuity correction (statsmodels mcnemar).",
    "Per seed: McNemar of the baseline and +SF runs that share a seed; the side right more often on the "
    "discordant examples in brackets. A best-run test can look significant either way by seed alone.",
    "SF − baseline: the task's main metric x 100, mean over seeds, 95% interval and two-sided p of Welch's t over "
    "per-seed scores (README \"Significance\"); the interval excludes 0 exactly when p < 0.05. Detectable: the "
    "smallest gain this test finds with 80% power at the measured per-seed sds (its power with the sds and df "
    "estimated, as they are), in points; in brackets its 80% range from the uncertain seed sd — a rough figure "
    "(below: what it reaches). With 1 seed in an arm: the paired bootstrap of dev examples (≤ marks p at its floor "
    "2/(R+1)), which makes no inference about the method; an arm whose seeds all score the same gives no "
    "inference either (no spread across seeds). The verdict counts only tasks with a test over seeds.",
]
TABLE3_NOTES = [
    "ms/step: a run's median wall time per optimizer step, warm-up steps and evaluation left out (metrics.json "
    "step_time), mean over seeds; CPU ms in brackets (every thread of the process). SF / baseline, runs: the "
    "ratio of these, two runs timed minutes apart, so it also carries how the machine's speed drifted between them.",
    "SF / baseline, side by side: the step_cost stage trains both arms in one process on the same batches, a "
    "step of each in turn, and takes the median per-round ratio (data/step_cost.json; README "
    "\"Table 3\"): what the machine does meanwhile slows both alike. The verdict uses it.",
    "contended: a run (or the side-by-side timing) whose main thread spent over a quarter of each step waiting "
    "for a core (the kernel's run-queue wait); its ratio is not shown and the verdict leaves the task out, as it "
    "does a task whose runs were not all timed.",
    "s: mean fine-tuning wall time over seeds (metrics.json train_seconds), evaluation and checkpoints included: "
    "measured, so it varies run to run.",
    "Extra parameters: the span module and its classifier input, as % of the backbone's parameters.",
]


def _arms(context: ReportContext, backbone: str, task: str, seeds: list[int]) -> tuple[list[Run], list[Run]]:
    """The baseline and +SF runs of Table 1 for one backbone and task."""
    baseline, sf = methods(1)
    return (context.runs(baseline.study, backbone, task, baseline.variant, seeds),
            context.runs(sf.study, backbone, task, sf.variant, seeds))


# ------------------------------------------------------------------------------------------- Table 2


def table2(context: ReportContext) -> Table:
    title = ("Significance of SF − baseline on the dev sets: McNemar's test of the best runs (the paper's "
             "test), McNemar per seed, and the test of the mean gain that each row's \"test (SF − baseline)\" column "
             "names "
             "(Welch's t over per-seed scores with 2 or more seeds per arm; with 1 seed, the example bootstrap, "
             "which makes no inference about the method).")
    plan = context.plan
    wanted = plan.reports.mcnemar_tasks
    tasks = [task for task in plan.studies["glue"].tasks if task in wanted]
    seeds = plan.studies["glue"].seeds
    paper_table = context.paper.table(2)
    rows, data, verdicts = [], [], []
    for backbone in plan.studies["glue"].backbones:
        paper_row = context.paper_row(paper_table, backbone, "sf")
        results = []
        for task in tasks:
            row, records, comparison = _significance_row(context, backbone, task, seeds, paper_row)
            rows.append(row)
            data += records
            results.append((task, comparison))
        verdicts.append(_table2_verdict(context, backbone, results, paper_row))
    skipped = [task for task in wanted if task not in tasks]
    notes = [] if not skipped else [f"reports.mcnemar_tasks not in the glue study: {', '.join(skipped)}."]
    return Table(2, title, pd.DataFrame(rows), pd.DataFrame(data), notes + TABLE2_NOTES + [reach.note()], verdicts)


def _significance_row(context: ReportContext, backbone: str, task: str, seeds: list[int], paper_row):
    """One task's row, its CSV records (best runs, each seed, the mean gain) and the mean gain's comparison."""
    base_runs, sf_runs = _arms(context, backbone, task, seeds)
    base, span = best_run(base_runs), best_run(sf_runs)
    split = base.spec.selection_split
    result = mcnemar_files(base.predictions(split), span.predictions(split))
    pairs = context.comparisons.seed_pairs(base_runs, sf_runs, split)
    gain = context.comparisons.compare(base_runs, sf_runs, split, base.spec.main_metric)
    paper = math.nan if paper_row is None else paper_row.value(task)
    where = {"backbone": backbone, "paper_backbone": context.plan.paper_name(backbone), "task": task,
             "split": split}
    row = {
        "Backbone": context.backbone_label(backbone), "Task": task, "Split": split,
        "Metric": METRIC_NAMES.get(base.spec.main_metric, base.spec.main_metric),
        "Best seeds (baseline vs SF)": f"{base.seed} vs {span.seed}", "n": result.n,
        "only baseline": result.only_a_correct, "only SF": result.only_b_correct, "test": result.method,
        "p (best runs)": p_value_cell(result.p_value), "p (paper, best runs)": p_value_cell(paper),
        "p per seed": "; ".join(f"s{pair.seed} {p_value_cell(pair.result.p_value)} ({_side(pair.favours)})"
                                for pair in pairs) or DASH,
        "SF − baseline, 95% CI": ci_cell(gain),
        "p (SF − baseline)": bootstrap_p_cell(gain),
        "test (SF − baseline)": test_name(gain),
        "detectable (80% power, range)": _detectable_cell(gain),
    }
    records = [{**where, "comparison": "best runs", "baseline_seed": base.seed, "sf_seed": span.seed,
                **result.as_dict(), "paper_p_value": csv_number(paper, 1.0)}]
    records += [{**where, "comparison": f"seed {pair.seed}", "baseline_seed": pair.seed, "sf_seed": pair.seed,
                 **pair.result.as_dict()} for pair in pairs]
    records.append({**where, "comparison": "mean gain", "method": interval_level(gain),
                    "metric": base.spec.main_metric, **gain_fields(gain)})
    return row, records, gain


def _detectable_cell(result: Comparison) -> str:
    """``±7.7 (5.5–14.9)``: the detectable gain in points and its 80% range from the seed sd's uncertainty."""
    if not result.method_inference:
        return DASH
    low, high = result.detectable_range
    return f"±{100 * result.detectable_gain:.1f} ({100 * low:.1f}–{100 * high:.1f})"


def _table2_verdict(context: ReportContext, backbone: str, results: list[tuple[str, Comparison]],
                    paper_row) -> PlainVerdict:
    if paper_row is None:
        paper = "the paper has no McNemar row for this backbone"
    else:
        values = [v for v in paper_row.values.values() if v is not None]
        below = sum(v < 0.05 for v in values)
        paper = f"the paper: best-run McNemar p < 0.05 on {below} of {len(values)} tasks"
    tested = [(task, result) for task, result in results if result.method_inference]
    better = [task for task, result in tested if result.low > 0]  # the interval excludes 0 on SF's side
    worse = [task for task, result in tested if result.high < 0]
    neither = [(task, result) for task, result in tested if result.low <= 0 <= result.high]
    untested = [task for task, result in results if not result.method_inference]
    total = len(tested)
    if not tested:  # every task untested: for tied seeds only, or for a single seed somewhere
        word = NO_SPREAD if all(getattr(r, "no_spread", False) for _, r in results) and results else NO_INFERENCE
    elif len(better) == total and not untested:
        word = REPRODUCED
    elif better and worse:
        word = MIXED
    elif worse:
        word = OPPOSITE
    elif better:
        word = PARTLY
    else:
        word = INCONCLUSIVE
    text = (f"Of the {total} tasks with a test over seeds (Welch t), SF significantly better (95% interval above 0, "
            f"p < 0.05) on {len(better)}, significantly worse on {len(worse)}, neither on {len(neither)}"
            f"{_untested(untested, results)}; {paper}. Reproduced = significant in SF's favour on every task; partly "
            f"= some significant, the rest inconclusive (no evidence either way); inconclusive = no task shows a "
            f"significant gain or loss.")
    if untested:
        text += f" Run 2 or more seeds per arm, each with a spread, to test {', '.join(untested)}."
    flagged = [f"{task}{degenerate.words(result)}" for task, result in tested if degenerate.words(result)]
    if flagged:
        text += " " + ". ".join(item.replace("; degenerate", ": degenerate", 1) for item in flagged) + "."
    if neither:
        text += " Inconclusive tasks, " + "; ".join(_task_power(context, backbone, task, result)
                                                   for task, result in neither) + "."
    if context.synthetic:
        word, text = SYNTHETIC, f"{text} ({MACHINERY})"
    return PlainVerdict(2, context.backbone_label(backbone), word, text)


def _untested(untested: list[str], results: list[tuple[str, Comparison]]) -> str:
    """``; no inference on 2 of 6 tasks (rte: 1 seed per arm, mrpc: no spread across seeds)``."""
    if not untested:
        return ""
    why = {task: ("no spread across seeds" if getattr(result, "no_spread", False) else "1 seed per arm")
           for task, result in results}
    parts = ", ".join(f"{task}: {why[task]}" for task in untested)
    return f"; no inference on {len(untested)} of {len(results)} tasks ({parts})"


def _task_power(context: ReportContext, backbone: str, task: str, result: Comparison) -> str:
    """``rte: detectable ±4.1 pp (80% power); the paper's Table 1 gain +2.5 (test) would need 12 seeds per arm``."""
    text = f"{task}: detectable {_detectable_cell(result)} pp (80% power)"
    table1 = context.paper.table(1)
    base = context.paper_row(table1, backbone, "baseline", stand_in=True)
    sf = context.paper_row(table1, backbone, "sf", stand_in=True)
    if base is None or sf is None or math.isnan(sf.value(task) - base.value(task)):
        return text
    published = sf.value(task) - base.value(task)
    if published == 0:
        return f"{text}; the paper's Table 1 gain is 0 (test)"
    needed = seeds_words(result, published / 100)
    return f"{text}; the paper's Table 1 gain {signed(published)} (test) would need {needed}"


def _side(favours: str) -> str:
    return {"sf": "SF", "baseline": "baseline", "neither": "tie"}[favours]


# ------------------------------------------------------------------------------------------- Table 3


def table3(context: ReportContext) -> Table:
    title = "Cost of span fine-tuning: measured fine-tuning time and extra parameters."
    plan = context.plan
    seeds = plan.studies["glue"].seeds
    paper_extra = _paper_extra_parameters(context)
    rows, data, verdicts = [], [], []
    for backbone in plan.studies["glue"].backbones:
        records = []
        for task in plan.studies["glue"].tasks:
            row, record = _cost_row(context, backbone, task, seeds, paper_extra)
            rows.append(row)
            records.append(record)
        data += records
        word = SYNTHETIC if context.synthetic else "cost, no verdict"
        text = _cost_text(records, paper_extra) + (f" ({MACHINERY})" if context.synthetic else "")
        verdicts.append(PlainVerdict(3, context.backbone_label(backbone), word, text))
    return Table(3, title, pd.DataFrame(rows), pd.DataFrame(data), list(TABLE3_NOTES), verdicts)


def _cost_text(records: list[dict], paper_extra: float) -> str:
    """The cost line: extra parameters, the per-step ratio over the tasks timed uncontended, and the wall-time ratio.

    The side-by-side ratio when the step_cost stage timed any task, else the runs' own."""
    extra = summarize(r["extra_parameters_percent"] for r in records).mean
    side_by_side = any(r["paired_measured"] for r in records)
    key, contended_key, how, missing = (
        ("paired_step_ratio", "paired_contended", "timed side by side", "not measured") if side_by_side
        else ("step_ratio", "contended", "from the runs' own step times", "not every run timed"))
    ratios = [r[key] for r in records if not math.isnan(r[key])]
    contended = [r["task"] for r in records if r[contended_key]]
    untimed = [r["task"] for r in records if not r[contended_key] and math.isnan(r[key])]
    left_out = "; ".join(part for part in (f"contended: {', '.join(contended)}" if contended else "",
                                           f"{missing}: {', '.join(untimed)}" if untimed else "") if part)
    if ratios:
        cost = (f"takes {fixed(summarize(ratios).mean, 2)}x the baseline's time per optimizer step, {how} (mean "
                f"over {len(ratios)} of {len(records)} tasks{'; left out, ' + left_out if left_out else ''})")
    else:
        cost = f"has no step-time figure (every task left out, {left_out})"
    wall = summarize(r["ratio"] for r in records).mean
    return (f"SF adds {fixed(extra, 2)}% parameters (the paper's text: {fixed(paper_extra, 0)}% of a BERT) and "
            f"{cost}; its whole fine-tuning time, start-up and evaluation included, was {fixed(wall, 2)}x "
            f"(measured on this machine).")


def _paper_extra_parameters(context: ReportContext) -> float:
    """The extra parameters % the paper's text gives (Table 3's first row that has one), else NaN."""
    paper_table = context.paper.table(3)
    if paper_table is None:
        return math.nan
    return next((row.value("extra_parameters_percent") for row in paper_table.rows
                 if not math.isnan(row.value("extra_parameters_percent"))), math.nan)


def _cost_row(context: ReportContext, backbone: str, task: str, seeds: list[int],
              paper_extra: float) -> tuple[dict, dict]:
    """One task's cost row and its CSV record."""
    base, span = _arms(context, backbone, task, seeds)
    base_s = summarize(_float(run, "train_seconds") for run in base).mean
    span_s = summarize(_float(run, "train_seconds") for run in span).mean
    base_step, base_cpu = (summarize(_step(run, key) for run in base).mean for key in ("step_seconds", "step_cpu_seconds"))
    span_step, span_cpu = (summarize(_step(run, key) for run in span).mean for key in ("step_seconds", "step_cpu_seconds"))
    contended = any(_contended(run) for run in base + span)
    # a ratio of like with like: every run of both arms timed (a run resumed after its last step, or of an older
    # version, has no step time), none of them contended
    every_timed = bool(base) and bool(span) and all(not math.isnan(_step(run, "step_seconds")) for run in base + span)
    step_ratio = _ratio(span_step, base_step) if every_timed and not contended else math.nan
    devices = "; ".join(sorted({str(run.get("device", "?")) for run in base + span}))
    extra = summarize(_float(run, "extra_parameters_percent") for run in span).mean
    paired_costs, paired_device = context.step_costs(backbone)
    paired = paired_costs.get(task)
    paired_contended = bool(paired and paired.get("contended"))
    paired_ratio = math.nan if paired is None or paired_contended else float(paired["ratio"])
    row = {"Backbone": context.backbone_label(backbone), "Task": task,
           "baseline ms/step (CPU)": _ms(base_step, base_cpu), "+SF ms/step (CPU)": _ms(span_step, span_cpu),
           "SF / baseline, runs": ("contended" if contended else fixed(step_ratio, 2) if every_timed
                                   else "not every run timed"),
           "SF / baseline, side by side": ("contended" if paired_contended else "not measured" if paired is None
                                           else fixed(paired_ratio, 2)),
           "side by side on": paired_device if paired is not None else "—",
           "baseline s": fixed(base_s, 1), "+SF s": fixed(span_s, 1), "device": devices,
           "extra params %": fixed(extra, 2), "extra params % (paper, text)": fixed(paper_extra, 2)}
    record = {"backbone": backbone, "paper_backbone": context.plan.paper_name(backbone), "task": task,
              "baseline_step_seconds": base_step, "sf_step_seconds": span_step,
              "baseline_step_cpu_seconds": base_cpu, "sf_step_cpu_seconds": span_cpu,
              "step_ratio": step_ratio, "contended": contended,
              "paired_measured": paired is not None,
              "paired_baseline_step_seconds": float(paired["baseline_step_seconds"]) if paired else math.nan,
              "paired_sf_step_seconds": float(paired["sf_step_seconds"]) if paired else math.nan,
              "paired_step_ratio": paired_ratio, "paired_contended": paired_contended,
              "paired_device": paired_device if paired is not None else "",
              "baseline_seconds": base_s, "sf_seconds": span_s, "ratio": _ratio(span_s, base_s), "device": devices,
              "extra_parameters_percent": extra, "paper_extra_parameters_percent": csv_number(paper_extra, 1.0)}
    return row, record


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator and not math.isnan(denominator) else math.nan


def _ms(wall: float, cpu: float) -> str:
    if math.isnan(wall):
        return "not recorded"
    return f"{1000 * wall:.1f} ({'—' if math.isnan(cpu) else f'{1000 * cpu:.1f}'})"


def _step_time(run: Run) -> dict:
    """A run's ``step_time`` block (runs of older versions have none: empty)."""
    block = run.get("step_time")
    if block is None:
        return {}
    if not isinstance(block, dict):
        raise SpanftError(f"{run.path / 'metrics.json'}: step_time must be a mapping, found {block!r}")
    return block


def _step(run: Run, key: str) -> float:
    """A run's median step time, wall or CPU (NaN when not recorded)."""
    value = _step_time(run).get(key)
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpanftError(f"{run.path / 'metrics.json'}: step_time.{key} must be a number, found {value!r}")
    return float(value)


def _contended(run: Run) -> bool:
    value = _step_time(run).get("contended")
    if value is not None and not isinstance(value, bool):
        raise SpanftError(f"{run.path / 'metrics.json'}: step_time.contended must be true, false or null, "
                          f"found {value!r}")
    return bool(value)


def _float(run: Run, key: str) -> float:
    value = run.get(key)
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpanftError(f"{run.path / 'metrics.json'}: {key} must be a number, found {value!r}")
    return float(value)
