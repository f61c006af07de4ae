"""Tables 2 and 3, on the glue study's baseline and +SF runs (Table 1's two arms, :mod:`spanft.report.context`).
Table 2, significance: per backbone and task, McNemar's test of the best runs (the paper's test), McNemar per
seed, and the two-level bootstrap (seeds, then dev examples) of SF − baseline, with a verdict per backbone.
Table 3, cost: per backbone and task, the mean measured fine-tuning seconds of each arm, their ratio, the
devices and the extra parameters of span fine-tuning, beside the paper's number.
"""

from __future__ import annotations

import math

import pandas as pd

from spanft.errors import SpanftError
from spanft.report.bootstrap import BootstrapResult
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
from spanft.report.context import ReportContext, methods
from spanft.report.paper import METRIC_NAMES
from spanft.report.runs import Run, best_run, summarize
from spanft.report.stats import mcnemar_files
from spanft.report.verdict import (
    MACHINERY,
    NO_INFERENCE,
    ONE_SEED,
    SYNTHETIC,
    PlainVerdict,
    interval_level,
)

TABLE2_NOTES = [
    "Best runs: each task's best baseline run against its best +SF run (best = highest dev main metric).",
    "McNemar: exact binomial test when the discordant pairs (only baseline + only SF) are fewer than 25, "
    "else chi-square with continuity correction (statsmodels mcnemar).",
    "Per seed: McNemar of the baseline and +SF runs that share a seed; the side right more often on the "
    "discordant examples in brackets. A best-run test can look significant either way by seed alone.",
    "Bootstrap: the task's main metric x 100, SF − baseline, mean over seeds, 95% percentile interval and "
    "two-sided p from one two-level bootstrap — seeds within each arm, then dev examples; the interval "
    "excludes 0 exactly when p ≤ 0.05; ≤ marks p at the resampling floor 2/(R+1) (README \"Significance\"). "
    "With 1 seed per arm it resamples examples only: no inference about the method.",
]
TABLE3_NOTES = [
    "Mean fine-tuning wall time over seeds (metrics.json train_seconds): measured, so it varies run to run.",
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
             "test), McNemar per seed, and the two-level bootstrap over seeds and examples (the verdict's).")
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
            row, records, bootstrap = _significance_row(context, backbone, task, seeds, paper_row)
            rows.append(row)
            data += records
            results.append(bootstrap)
        verdicts.append(_table2_verdict(context, backbone, results, paper_row))
    skipped = [task for task in wanted if task not in tasks]
    notes = [] if not skipped else [f"reports.mcnemar_tasks not in the glue study: {', '.join(skipped)}."]
    return Table(2, title, pd.DataFrame(rows), pd.DataFrame(data), notes + TABLE2_NOTES, verdicts)


def _significance_row(context: ReportContext, backbone: str, task: str, seeds: list[int], paper_row):
    """One task's row, its CSV records (best runs, each seed, the bootstrap) and its bootstrap result."""
    base_runs, sf_runs = _arms(context, backbone, task, seeds)
    base, span = best_run(base_runs), best_run(sf_runs)
    split = base.spec.selection_split
    result = mcnemar_files(base.predictions(split), span.predictions(split))
    pairs = context.comparisons.seed_pairs(base_runs, sf_runs, split)
    bootstrap = context.comparisons.bootstrap(base_runs, sf_runs, split, base.spec.main_metric)
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
        "SF − baseline, 95% CI": ci_cell(bootstrap),
        "p (bootstrap)": bootstrap_p_cell(bootstrap),
        "resampled": interval_level(bootstrap),
    }
    records = [{**where, "comparison": "best runs", "baseline_seed": base.seed, "sf_seed": span.seed,
                **result.as_dict(), "paper_p_value": csv_number(paper, 1.0)}]
    records += [{**where, "comparison": f"seed {pair.seed}", "baseline_seed": pair.seed, "sf_seed": pair.seed,
                 **pair.result.as_dict()} for pair in pairs]
    records.append({**where, "comparison": "bootstrap", "method": f"bootstrap ({interval_level(bootstrap)})",
                    "metric": base.spec.main_metric, **gain_fields(bootstrap)})
    return row, records, bootstrap


def _table2_verdict(context: ReportContext, backbone: str, results: list[BootstrapResult],
                    paper_row) -> PlainVerdict:
    if paper_row is None:
        paper = "the paper has no McNemar row for this backbone"
    else:
        values = [v for v in paper_row.values.values() if v is not None]
        below = sum(v < 0.05 for v in values)
        paper = f"the paper: best-run McNemar p < 0.05 on {below} of {len(values)} tasks"
    better = sum(result.low > 0 for result in results)  # the interval excludes 0 on SF's side
    worse = sum(result.high < 0 for result in results)
    word = "reproduced" if results and better == len(results) else "not reproduced"
    text = (f"SF significantly better (95% interval above 0, p ≤ 0.05) on {better} of {len(results)} tasks, "
            f"significantly worse on {worse}; {paper}. Reproduced = significant in SF's favour on every task.")
    if any(not result.runs_resampled for result in results):
        word, text = NO_INFERENCE, f"{text} ({ONE_SEED})"
    if context.synthetic:
        word, text = SYNTHETIC, f"{text} ({MACHINERY})"
    return PlainVerdict(2, context.backbone_label(backbone), word, text)


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
        extras, ratios = [], []
        for task in plan.studies["glue"].tasks:
            row, record = _cost_row(context, backbone, task, seeds, paper_extra)
            rows.append(row)
            data.append(record)
            extras.append(record["extra_parameters_percent"])
            ratios.append(record["ratio"])
        extra, ratio = summarize(extras).mean, summarize(ratios).mean
        text = (f"SF adds {fixed(extra, 2)}% parameters (the paper's text: {fixed(paper_extra, 0)}% of a BERT) "
                f"and takes {fixed(ratio, 2)}x the baseline's fine-tuning time (mean over tasks; measured on "
                f"this machine).")
        word = SYNTHETIC if context.synthetic else "cost, no verdict"
        text += f" ({MACHINERY})" if context.synthetic else ""
        verdicts.append(PlainVerdict(3, context.backbone_label(backbone), word, text))
    return Table(3, title, pd.DataFrame(rows), pd.DataFrame(data), list(TABLE3_NOTES), verdicts)


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
    ratio = span_s / base_s if base_s and not math.isnan(base_s) else math.nan
    devices = "; ".join(sorted({str(run.get("device", "?")) for run in base + span}))
    extra = summarize(_float(run, "extra_parameters_percent") for run in span).mean
    row = {"Backbone": context.backbone_label(backbone), "Task": task,
           "baseline s": fixed(base_s, 1), "+SF s": fixed(span_s, 1),
           "SF / baseline": fixed(ratio, 2), "device": devices,
           "extra params %": fixed(extra, 2), "extra params % (paper, text)": fixed(paper_extra, 2)}
    record = {"backbone": backbone, "paper_backbone": context.plan.paper_name(backbone), "task": task,
              "baseline_seconds": base_s, "sf_seconds": span_s, "ratio": ratio, "device": devices,
              "extra_parameters_percent": extra, "paper_extra_parameters_percent": csv_number(paper_extra, 1.0)}
    return row, record


def _float(run: Run, key: str) -> float:
    value = run.get(key)
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpanftError(f"{run.path / 'metrics.json'}: {key} must be a number, found {value!r}")
    return float(value)
