"""Tables 1, 4 and 6, the GLUE-style tables: per backbone, each method's rows (mean ± sd over seeds, the best
run, the paper's row and ours − paper where the paper's split is dev), a gain row per compared method (SF −
baseline with its 95% interval: Welch's t over per-seed scores, or with 1 seed the example-level bootstrap),
and a verdict on the mean gain over the paper's nine columns. A column per task score (two for MNLI) and two averages: ours (one column per task) and the
paper's rule (:data:`spanft.report.paper.PAPER_AVERAGE_COLUMNS`). Which runs are which rows:
:mod:`spanft.report.context`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd

from spanft.data.registry import get_task
from spanft.english import count_of
from spanft.errors import SpanftError
from spanft.report.cells import (
    DASH,
    Table,
    ci_cell,
    csv_number,
    difference,
    gain_fields,
    mean_sd,
    paper_cell,
    pct,
    significance_note,
)
from spanft.report.context import Comparison, Method, ReportContext, combine, methods
from spanft.report.paper import (
    METRIC_NAMES,
    PAPER_AVERAGE_COLUMNS,
    PaperTable,
    printed_columns_average,
)
from spanft.report.runs import Run, Summary, best_run, summarize
from spanft.report.verdict import Verdict, interval_level

AVERAGE_RULE = ("Avg (ours): mean over the study's tasks of each task's first column (MNLI: matched), per seed. "
                "Avg (paper rule): the paper's average, the mean of nine columns — CoLA, SST-2, MNLI-m, MNLI-mm, "
                "QNLI, RTE, MRPC, QQP, STS-B (MNLI counted twice, WNLI left out) — per seed; — when the study "
                "lacks one of them.")
AVERAGE_LABELS = {"avg": "Avg (ours)", "avg-paper-rule": "Avg (paper rule)"}


@dataclass(frozen=True)
class Column:
    """One score column of a GLUE-style table."""

    label: str  # CoLA (MCC)
    key: str  # the paper's column key: cola, mnli-m, ...
    task: str
    split: str
    metric: str


def glue_columns(tasks: list[str], paper_table: PaperTable | None = None) -> list[Column]:
    """A column per task (two for MNLI); the metric is the paper table's for that column, else the task's main one."""
    columns = []
    for name in tasks:
        task = get_task(name)
        if name == "mnli":
            keys = [(split, f"mnli-{suffix}", f"MNLI-{suffix}") for split, suffix in zip(task.eval_splits, ["m", "mm"])]
        else:
            stem = task.splits[task.test_splits[0]].submission_stem if task.test_splits else name.upper()
            keys = [(task.selection_split, name, stem)]
        for split, key, stem in keys:
            metric = (paper_table.metric_of(key) if paper_table else None) or task.main_metric
            if metric not in task.metrics:
                metric = task.main_metric
            columns.append(Column(f"{stem} ({METRIC_NAMES.get(metric, metric)})", key, name, split, metric))
    return columns


# ------------------------------------------------------------------------------------------- the tables


def table1(context: ReportContext) -> Table:
    title = "GLUE dev results, baseline and span fine-tuning (+SF), per backbone."
    return glue_table(context, 1, title, "glue", methods(1), include_best=True)


def table4(context: ReportContext) -> Table:
    title = "Other backbones (paper: SpanBERT-large, RoBERTa-large), baseline and +SF, GLUE dev."
    table = glue_table(context, 4, title, "backbones", methods(4), include_best=False)
    table.notes.insert(0, "Columns use the metric of the paper's Table 4 (QQP: accuracy, where Table 1 uses F1).")
    return table


def table6(context: ReportContext) -> Table:
    title = "Ablation on GLUE dev: +CNN without segmentation, random, chunker and n-gram (+SF) segmentation."
    table = glue_table(context, 6, title, "ablation", methods(6), include_best=False)
    table.notes.insert(0, "Baseline and +SF rows are the glue study's runs of the same backbone, task and seed.")
    table.notes.insert(1, chunker_note(context))
    table.notes.append("The paper prints only Table 6's average and does not name its tasks"
                       + ("." if context.synthetic else "; ours − paper compares it with our average under the "
                                                         "paper's rule."))
    return table


def glue_table(context: ReportContext, number: int, title: str, study: str, table_methods: list[Method],
               include_best: bool) -> Table:
    """Rows per backbone and method, a column per task score and two averages; then gains and verdicts.

    ``table_methods``: the first is the baseline the others are compared with; one has the key ``sf``.
    """
    plan = context.plan
    tasks = plan.studies[study].tasks
    seeds = plan.studies[study].seeds
    paper_table = context.paper.table(number)
    columns = glue_columns(tasks, paper_table)
    baseline = table_methods[0]
    rows, data, verdicts = [], [], []
    for backbone in plan.studies[study].backbones:
        label = {"Backbone": context.backbone_label(backbone)}
        runs = {m.key: {t: context.runs(m.study, backbone, t, m.variant, seeds) for t in tasks} for m in table_methods}
        for method in table_methods:
            method_rows, records = _method_rows(context, label, method, columns, runs[method.key], seeds,
                                                include_best, backbone, paper_table)
            rows += method_rows
            data += records
        for method in table_methods[1:]:
            row, records = _gain_row(context, label, method, columns, runs[baseline.key], runs[method.key], backbone)
            rows.append(row)
            data += records
        verdicts.append(_verdict(context, number, backbone, columns, runs[baseline.key], runs["sf"], seeds,
                                 paper_table))
    notes = ["Scores are dev-set metrics x 100; mean ± sd over seeds (sample sd, ddof = 1).", AVERAGE_RULE,
             significance_note()]
    if include_best and len(seeds) > 1:
        notes.append("Best run: the seed with the highest dev main metric (MNLI: matched); its scores.")
    notes += training_caps(context, tasks)
    return Table(number, title, pd.DataFrame(rows), pd.DataFrame(data), notes, verdicts)


def training_caps(context: ReportContext, tasks: list[str]) -> list[str]:
    """A note per task and cut split set (params ``hparams.<task>.max_train_examples`` / ``max_eval_examples``)."""
    notes = []
    for task in tasks:
        for key, what in (("max_train_examples", "training set"), ("max_eval_examples", "dev and test sets")):
            cap = getattr(context.plan.hparams[task], key)
            if cap:
                notes.append(f"{task}: {what} capped at the first {int(cap):,} examples (hparams.{task}.{key}).")
    return notes


def chunker_note(context: ReportContext) -> str:
    """Which tagger produced the chunker row: params ``chunker.source`` and ``chunker.tagger``, and what the
    segmented data recorded (the tagger's training data and POS accuracy)."""
    tagger_file, source = context.plan.chunker.tagger, context.plan.chunker.source
    tagger = {
        "synthetic": "an NLTK PerceptronTagger trained here on the synthetic corpus's part-of-speech tags",
        "conll": "an NLTK PerceptronTagger trained here on CoNLL-2003 train's Penn Treebank POS tags",
        "nltk": "NLTK's pretrained averaged-perceptron tagger",
    }.get(source, f"tagger source {source}")
    tagger += f" ({tagger_file})" if tagger_file else ""
    recorded = sorted({info.get("segmenter", {}).get("tagger", "") for info in _chunker_infos(context)} - {""})
    suffix = f"; recorded in the segmented data: {', '.join(recorded)}" if recorded else ""
    return f"Chunker segmentation: NLTK RegexpParser NP/VP chunks over tags from {tagger}{suffix}."


def _chunker_infos(context: ReportContext) -> list[dict]:
    infos = []
    for task in context.plan.studies["ablation"].tasks:
        path = context.segmented_dir / "chunker" / task / "segmentation.json"
        if path.is_file():
            try:
                infos.append(json.loads(path.read_text(encoding="utf-8")))
            except json.JSONDecodeError as exc:
                raise SpanftError(f"{path}: not valid JSON ({exc})") from None
    return infos


# ------------------------------------------------------------------------------------------- rows


def _method_rows(context: ReportContext, label: dict, method: Method, columns: list[Column],
                 runs: dict[str, list[Run]], seeds: list[int], include_best: bool, backbone: str,
                 paper_table: PaperTable | None) -> tuple[list[dict], list[dict]]:
    """One method's rows (mean ± sd, best run, the paper's) and their CSV records."""
    label = {**label, "Method": method.label}
    mean_row, best_row, means, data = {}, {}, {}, []
    for column in columns:
        column_runs = runs[column.task]
        summary = summarize(run.metric(column.split, column.metric) for run in column_runs)
        best = best_run(column_runs)
        best_value = best.metric(column.split, column.metric)
        mean_row[column.label] = mean_sd(summary)
        means[column.label] = csv_number(summary.mean)
        best_row[column.label] = f"{pct(best_value)} (s{best.seed})"
        data.append(_datum(context, backbone, method, column.key, column.split, column.metric, summary, best_value,
                           best.seed))
    for key, (per_seed, best_value) in _averages(columns, runs, len(seeds)).items():
        summary = summarize(per_seed)
        mean_row[AVERAGE_LABELS[key]] = mean_sd(summary)
        means[AVERAGE_LABELS[key]] = csv_number(summary.mean)
        best_row[AVERAGE_LABELS[key]] = pct(best_value)
        data.append(_datum(context, backbone, method, key, "dev", "average", summary, best_value, None))
    seed_text = f"mean ± sd ({count_of(len(seeds), 'seed')})"
    rows = [{**label, "Statistic": seed_text, **mean_row}]
    if include_best and len(seeds) > 1:  # with one seed the best run is the mean row
        rows.append({**label, "Statistic": "best run (seed)", **best_row})
    paper_row = context.paper_row(paper_table, backbone, method.key)
    if paper_row is not None:
        paper_rows, records = _paper_rows(context, label, method, columns, paper_row, paper_table, means, backbone)
        rows += paper_rows
        data += records
    return rows, data


def _paper_rows(context: ReportContext, label: dict, method: Method, columns: list[Column], paper_row,
                paper_table: PaperTable, means: dict[str, float | None],
                backbone: str) -> tuple[list[dict], list[dict]]:
    """The paper's row for a method and, where its split is dev, ours − paper; and their CSV records."""
    split = paper_table.splits[0]
    values = {column.label: paper_row.value(column.key) for column in columns}
    values |= {AVERAGE_LABELS["avg"]: math.nan, AVERAGE_LABELS["avg-paper-rule"]: paper_row.value("avg")}
    cells = {label: paper_cell(value) for label, value in values.items()}
    printed = paper_row.value("avg")
    nine = set(PAPER_AVERAGE_COLUMNS) <= set(paper_table.columns)
    recomputed = printed_columns_average(paper_row)[0] if nine else math.nan
    average = paper_cell(printed)
    if not math.isnan(recomputed) and not math.isnan(printed) and abs(recomputed - printed) > 0.1 + 1e-9:
        average += f" (its columns: {recomputed:.1f})"
    cells[AVERAGE_LABELS["avg-paper-rule"]] = average
    data = [{"backbone": backbone, "paper_backbone": context.plan.paper_name(backbone), "method": method.key,
             "study": "paper", "variant": method.variant, "column": "avg-paper-rule" if key == "avg" else key,
             "split": paper_table.split_of(key), "metric": paper_table.metric_of(key), "statistic": "paper",
             "paper_row": paper_row.label, "mean_pct": csv_number(paper_row.value(key), 1.0)}
            for key in [column.key for column in columns] + ["avg"] if key in paper_table.columns]
    rows = [{**label, "Statistic": f"paper ({split})", **cells}]
    if split == "dev" and not context.synthetic:  # like with like: ours − paper where the paper's split is ours
        ours = {c: math.nan if means.get(c) is None else means[c] for c in values}
        differences = {c: difference(ours[c], value) for c, value in values.items()}
        if any(cell != DASH for cell in differences.values()):
            rows.append({**label, "Statistic": "ours − paper (dev)", **differences})
    return rows, data


def _gain_row(context: ReportContext, label: dict, method: Method, columns: list[Column],
              base: dict[str, list[Run]], other: dict[str, list[Run]], backbone: str) -> tuple[dict, list[dict]]:
    """``method − baseline`` per column and average with its 95% interval, and its CSV records."""
    results = {c.key: context.comparisons.compare(base[c.task], other[c.task], c.split, c.metric) for c in columns}
    averages = _average_gains(columns, results)
    cells = {c.label: ci_cell(results[c.key]) for c in columns}
    cells |= {AVERAGE_LABELS[key]: ci_cell(result) for key, result in averages.items()}
    data = [{"backbone": backbone, "paper_backbone": context.plan.paper_name(backbone),
             "method": f"{method.key}-baseline", "study": method.study, "variant": method.variant, "column": key,
             "split": "dev", "statistic": "gain", **gain_fields(result)}
            for key, result in [*results.items(), *averages.items()]]
    levels = sorted({interval_level(r) for r in [*results.values(), *averages.values()] if r is not None})
    statistic = f"gain, 95% CI (dev; {', '.join(levels) or 'no runs'})"
    return {**label, "Method": f"{method.label} − baseline", "Statistic": statistic, **cells}, data


def _verdict(context: ReportContext, number: int, backbone: str, columns: list[Column], base: dict[str, list[Run]],
             sf: dict[str, list[Run]], seeds: list[int], paper_table: PaperTable | None) -> Verdict:
    scope = [c for c in columns if c.key in PAPER_AVERAGE_COLUMNS]
    result = combine([context.comparisons.compare(base[c.task], sf[c.task], c.split, c.metric) for c in scope]) \
        if scope else None
    names = ", ".join(c.label.split(" ")[0] for c in scope)
    rule = " — the paper's rule" if len(scope) == len(PAPER_AVERAGE_COLUMNS) else ""
    paper_gain, paper_scope, extra = _paper_gain(context, backbone, scope, paper_table)
    return Verdict(number, context.backbone_label(backbone), "SF − baseline",
                   f"the mean of {count_of(len(scope), 'dev column')} ({names}{rule})", result, len(seeds), paper_gain,
                   paper_scope, extra, context.synthetic, backbone)


def _paper_gain(context: ReportContext, backbone: str, scope: list[Column], paper_table: PaperTable | None):
    base = context.paper_row(paper_table, backbone, "baseline", stand_in=True)
    sf = context.paper_row(paper_table, backbone, "sf", stand_in=True)
    if base is None or sf is None:
        return math.nan, "no published gain", ""
    who = context.stand_in_words(paper_table, backbone, base)
    keys = [c.key for c in scope if not math.isnan(base.value(c.key)) and not math.isnan(sf.value(c.key))]
    if keys:
        gain = sum(sf.value(k) - base.value(k) for k in keys) / len(keys)
        where = f"{paper_table.split_of(keys[0])}, {who}, the same {count_of(len(keys), 'column')}"
    else:
        gain = sf.value("avg") - base.value("avg")
        where = f"{paper_table.split_of('avg')}, {who}, its printed averages (tasks not named)"
    printed = sf.value("gain") if "gain" in paper_table.columns else math.nan
    extra = "" if math.isnan(printed) else f"the paper prints a gain of {printed:.1f} from its averages"
    return gain, where, extra


def _datum(context: ReportContext, backbone: str, method: Method, column: str, split: str, metric: str,
           summary: Summary, best: float, best_seed: int | None) -> dict:
    return {"backbone": backbone, "paper_backbone": context.plan.paper_name(backbone), "method": method.key,
            "study": method.study, "variant": method.variant, "column": column, "split": split,
            "metric": metric, "statistic": "ours", "n_seeds": summary.n, "mean_pct": csv_number(summary.mean),
            "sd_pct": csv_number(summary.sd), "best_pct": csv_number(best), "best_seed": best_seed}


# ------------------------------------------------------------------------------------------- averages


def _averages(columns: list[Column], runs: dict[str, list[Run]], n_seeds: int) -> dict[str, tuple[list[float], float]]:
    """Per average: its value per seed, and its value over the best runs (each task's best seed)."""
    result = {}
    for key, group in _average_groups(columns).items():
        if not group:
            result[key] = ([math.nan] * n_seeds, math.nan)
            continue
        per_seed = [_mean_or_nan([runs[c.task][i].metric(c.split, c.metric) for c in group]) for i in range(n_seeds)]
        best = _mean_or_nan([best_run(runs[c.task]).metric(c.split, c.metric) for c in group])
        result[key] = (per_seed, best)
    return result


def _average_groups(columns: list[Column]) -> dict[str, list[Column]]:
    """The columns each average takes: ours, one per task; the paper's rule, all nine or none."""
    first_per_task = list({c.task: c for c in reversed(columns)}.values())[::-1]
    rule = [c for c in columns if c.key in PAPER_AVERAGE_COLUMNS]
    return {"avg": first_per_task, "avg-paper-rule": rule if len(rule) == len(PAPER_AVERAGE_COLUMNS) else []}


def _average_gains(columns: list[Column], results: dict[str, Comparison]) -> dict[str, Comparison | None]:
    return {key: combine([results[c.key] for c in group]) if group else None
            for key, group in _average_groups(columns).items()}


def _mean_or_nan(values: list[float]) -> float:
    return math.nan if not values or any(math.isnan(v) for v in values) else sum(values) / len(values)
