"""Tables 5, 7 and 8, the dev/test tables of one task (SNLI accuracy; Table 7: the span encoders on SNLI;
CoNLL-2003 entity F1): per backbone, each method's mean ± sd on the dev and the test split beside the paper's
number for the same split and ours − paper, then a row per compared pair (the gain and its 95% interval on
each split) with a verdict on its dev gain. Test scores come from metrics.json, else
from the test predictions when they carry gold labels. Which runs are which rows: :mod:`spanft.report.context`.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from spanft.data.registry import get_task
from spanft.english import count_of
from spanft.report.cells import (
    Table,
    ci_cell,
    csv_number,
    difference,
    gain_fields,
    mean_sd,
    paper_cell,
    significance_note,
)
from spanft.report.context import (
    DEFAULT_ENCODER,
    Comparison,
    Method,
    ReportContext,
    methods,
)
from spanft.report.paper import METRIC_NAMES, PaperTable
from spanft.report.runs import Run, split_score, summarize
from spanft.report.verdict import Verdict


def table5(context: ReportContext) -> Table:
    title = "SNLI accuracy, baseline and +SF."
    baseline, sf = methods(5)
    return dev_test_table(context, 5, title, "snli", "snli", "accuracy", [baseline, sf], [(baseline, sf)])


def table7(context: ReportContext) -> Table:
    title = "Span encoders on SNLI (within-span / across-span pooling)."
    listed = set(context.plan.studies["snli"].encoders) | {DEFAULT_ENCODER}
    encoders = [m for m in methods(7) if m.key in listed]
    default = next(m for m in encoders if m.key == DEFAULT_ENCODER)
    pairs = [(other, default) for other in encoders if other is not default]
    table = dev_test_table(context, 7, title, "snli", "snli", "accuracy", encoders, pairs)
    table.notes.insert(0, "CNN-CNN is the default span fine-tuning encoder (the snli study's sf runs).")
    return table


def table8(context: ReportContext) -> Table:
    title = "CoNLL-2003 named entity recognition, entity-level F1, baseline and +SF."
    baseline, sf = methods(8)
    return dev_test_table(context, 8, title, "ner", "conll2003", "f1", [baseline, sf], [(baseline, sf)])


def dev_test_table(context: ReportContext, number: int, title: str, study: str, task: str, metric: str,
                   table_methods: list[Method], pairs: list[tuple[Method, Method]]) -> Table:
    """Rows per backbone: each method's dev and test scores, then each pair's gains; a verdict per pair."""
    spec = get_task(task)
    splits = {"dev": spec.eval_splits[0], "test": "test"}
    seeds = context.plan.studies[study].seeds
    paper_table = context.paper.table(number)
    rows, data, verdicts = [], [], []
    for backbone in context.plan.studies[study].backbones:
        label = {"Backbone": context.backbone_label(backbone)}
        runs = {m.key: context.runs(m.study, backbone, task, m.variant, seeds) for m in table_methods}
        for method in table_methods:
            row, records = _method_row(context, label, method, runs[method.key], splits, metric, backbone,
                                       paper_table)
            rows.append(row)
            data += records
        for first, second in pairs:
            row, records = _pair_row(context, label, first, second, runs, splits, metric, backbone, paper_table)
            rows.append(row)
            data += records
            dev = _split_comparison(context, runs[first.key], runs[second.key], splits["dev"], metric)
            paper, who = _paper_difference(context, paper_table, backbone, first, second, "dev", stand_in=True)
            verdicts.append(Verdict(number, context.backbone_label(backbone), row["Method"],
                                    f"{spec.name} dev {METRIC_NAMES[metric]}", dev, len(seeds), paper,
                                    f"dev, {who}", synthetic=context.synthetic, backbone=backbone,
                                    versus=first.key))
    notes = [f"{spec.name} {METRIC_NAMES[metric]} x 100 on the {splits['dev']} (dev) and test splits; "
             f"{_seeds_words(len(seeds))}. {_difference_words(context.synthetic)}",
             "Test: metrics.json when it scores the split, else the test predictions scored when they carry "
             "gold labels, else —.",
             significance_note("the split's examples")]
    return Table(number, title, pd.DataFrame(rows), pd.DataFrame(data), notes, verdicts)


def _method_row(context: ReportContext, label: dict, method: Method, runs: list[Run], splits: dict[str, str],
                metric: str, backbone: str, paper_table: PaperTable | None) -> tuple[dict, list[dict]]:
    """One method's dev and test scores beside the paper's, and their CSV records."""
    row = {**label, "Method": method.label}
    paper_row = context.paper_row(paper_table, backbone, method.key)
    data = []
    for name, split in splits.items():
        summary = summarize(split_score(run, split, metric) for run in runs)
        paper = math.nan if paper_row is None else paper_row.value(name)
        row |= {f"{name.capitalize()} {METRIC_NAMES[metric]}": mean_sd(summary),
                f"{name.capitalize()} (paper)": paper_cell(paper)}
        if not context.synthetic:  # synthetic data is not the paper's: no difference to show
            row[f"{name.capitalize()}: ours − paper"] = difference(100 * summary.mean, paper)
        data.append({"backbone": backbone, "paper_backbone": context.plan.paper_name(backbone),
                     "method": method.key, "variant": method.variant, "split": split, "metric": metric,
                     "statistic": "ours", "n_seeds": summary.n, "mean_pct": csv_number(summary.mean),
                     "sd_pct": csv_number(summary.sd), "paper_pct": csv_number(paper, 1.0),
                     "paper_row": "" if paper_row is None else paper_row.label})
    return row, data


def _pair_row(context: ReportContext, label: dict, first: Method, second: Method, runs: dict[str, list[Run]],
              splits: dict[str, str], metric: str, backbone: str,
              paper_table: PaperTable | None) -> tuple[dict, list[dict]]:
    """``second − first`` on each split with its 95% interval beside the paper's difference; its CSV records."""
    row = {**label, "Method": f"{second.label.lstrip('+')} − {first.label}"}
    data = []
    for name, split in splits.items():
        result = _split_comparison(context, runs[first.key], runs[second.key], split, metric)
        paper = _paper_difference(context, paper_table, backbone, first, second, name, stand_in=False)[0]
        row |= {f"{name.capitalize()} {METRIC_NAMES[metric]}": ci_cell(result),
                f"{name.capitalize()} (paper)": difference(paper, 0.0)}
        if not context.synthetic:
            row[f"{name.capitalize()}: ours − paper"] = ""
        data.append({"backbone": backbone, "paper_backbone": context.plan.paper_name(backbone),
                     "method": f"{second.key}-{first.key}", "split": split, "metric": metric,
                     "statistic": "gain", "paper_pct": csv_number(paper, 1.0), **gain_fields(result)})
    return row, data


def _seeds_words(n: int) -> str:
    return f"mean ± sd over {count_of(n, 'seed')} (sample sd)" if n > 1 else f"{count_of(n, 'seed')} (no sd)"


def _difference_words(synthetic: bool) -> str:
    if synthetic:
        return "The paper's columns are the same splits, but synthetic data is not the paper's: no difference is shown."
    return "The paper's columns are the same splits, so ours − paper is shown."


def _split_comparison(context: ReportContext, runs_a: list[Run], runs_b: list[Run], split: str,
                     metric: str) -> Comparison | None:
    """The comparison on ``split`` (Welch over seeds, or with 1 seed the example-level bootstrap), or None when a
    run's predictions of it are missing or unlabeled."""
    for run in [*runs_a, *runs_b]:
        path = run.predictions(split)
        if not path.is_file() or _first_gold(path) == "":
            return None
    return context.comparisons.compare(runs_a, runs_b, split, metric)


def _paper_difference(context: ReportContext, paper_table: PaperTable | None, backbone: str, first: Method,
                      second: Method, column: str, stand_in: bool) -> tuple[float, str]:
    a = context.paper_row(paper_table, backbone, first.key, stand_in)
    b = context.paper_row(paper_table, backbone, second.key, stand_in)
    if a is None or b is None:
        return math.nan, "no published rows"
    return b.value(column) - a.value(column), context.stand_in_words(paper_table, backbone, a)


def _first_gold(path: Path) -> str:
    with open(path, encoding="utf-8") as handle:
        handle.readline()
        fields = handle.readline().rstrip("\n").split("\t")
    return fields[1] if len(fields) > 1 else ""
