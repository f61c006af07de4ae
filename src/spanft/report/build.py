"""Report stage: every table and figure of the paper from the fine-tuning runs.

The report stage (``spanft report``) writes, under ``reports/``:

- ``tables/table{1..8}.{md,csv,tex}``, ``tables/verdicts.csv`` (every verdict line as data) and
  ``tables/paper_values.csv`` (every number the paper prints, :mod:`spanft.report.paper`),
- ``figures/figure2.md``, ``figures/figure{3,4}.{png,pdf}`` (:mod:`spanft.report.figures`),
- ``metrics.json`` (DVC metrics: headline dev scores), ``headline.json`` (DVC metrics: each table's gain with its
  95% interval, as its verdict line prints it, :mod:`spanft.report.headline`), ``plots/spans_per_sentence.csv``,
  ``plots/dictsize_score.csv``, ``plots/training_curves.csv`` (DVC plots; the last: every run's DVCLive curves,
  :mod:`spanft.report.curves`), and ``index.md``, written last: a one-screen summary (profile, inputs, each
  table's verdict, runs no better than a constant predictor), then every file.

Tables 1-8: scores are shown in percent (metric x 100), one decimal, as the paper prints them; "mean ± sd" is
the mean and the sample standard deviation (ddof = 1) over seeds (the sd is left out with a single seed). The
CSVs hold the same numbers unrounded (6 decimals) with one row per cell. Like with like: our runs are scored
on dev. A paper number is labelled with its split; a difference "ours − paper" is shown only where the splits
match (the dev and test columns of Tables 5-8, Table 6's dev average). GLUE averages are shown two ways: ours
(one column per task, MNLI matched) and the paper's rule (nine columns: MNLI-m and MNLI-mm separately, no
WNLI). Each table ends with the paper's table as printed and footnotes on its inconsistencies, and with
verdict lines (:mod:`spanft.report.verdict`) computed from the runs' predictions. The builders are
:mod:`spanft.report.glue_tables` (1, 4, 6), :mod:`spanft.report.significance_tables` (2, 3) and
:mod:`spanft.report.dev_test_tables` (5, 7, 8), on a shared :class:`~spanft.report.context.ReportContext`.

The summary's inputs come from each run's ``metrics.json`` ``inputs`` block (``{"backbone": {...}, "data":
{...}}``, written by fine-tuning: where the backbone and the task data came from, with a revision or a digest);
runs without one show "not recorded". The corpus (WikiText's hub commit, or a path or the synthetic language,
and the corpus file's digest) comes from the corpus stage's record.

Everything is computed before anything is written, each file is written atomically, and ``index.md`` is
removed first and written last, so an interrupted report never looks complete. Outputs are byte-identical
for identical inputs, except Table 3's measured seconds.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from spanft.data.headline import REAL, SYNTHETIC
from spanft.data.provenance import read_corpus_record
from spanft.english import count_of
from spanft.fileio import atomic_open, check_output_location
from spanft.params.plan import Plan
from spanft.report import dev_test_tables, figures, glue_tables, significance_tables
from spanft.report.cells import NO_VALUE, Table, has_dash, profile_line
from spanft.report.context import ReportContext
from spanft.report.curves import training_curves
from spanft.report.headline import headline
from spanft.report.paper import (
    Paper,
    footnotes,
    printed_table,
    split_words,
    tidy_values,
)
from spanft.report.runs import Run
from spanft.report.trivial import RunCheck, check_runs

log = logging.getLogger("spanft")

HEADLINE_STUDIES = ["glue", "backbones", "snli", "ner"]


def write_reports(plan: Plan, runs_dir: str | Path, segmented_dir: str | Path, out_dir: str | Path, *,
                  paper_values: str | Path | None = None, corpus_record: str | Path | None = None,
                  step_cost_file: str | Path | None = None) -> list[str]:
    """Write every report file under ``out_dir``; return their paths relative to it (index.md last).

    ``corpus_record``: the corpus stage's provenance file, shown in the summary (absent: "not recorded").
    ``step_cost_file``: the step_cost stage's file, Table 3's side-by-side step costs (absent: "not measured").
    """
    check_output_location(out_dir, inputs=[runs_dir, segmented_dir])  # before anything is read or written
    corpus = read_corpus_record(corpus_record) if corpus_record else None
    files = build_reports(plan, Path(runs_dir), Path(segmented_dir), paper_values=paper_values, corpus=corpus,
                          step_cost_file=step_cost_file)
    _write_all(Path(out_dir), files)
    return list(files)


def build_reports(plan: Plan, runs_dir: Path, segmented_dir: Path, *, paper_values: str | Path | None = None,
                  corpus: dict | None = None, step_cost_file: str | Path | None = None) -> dict[str, bytes]:
    """Every report file's bytes by relative path, ``index.md`` last (nothing is written)."""
    profile = plan.profile_label
    paper = Paper.load(paper_values)
    context = ReportContext(plan, runs_dir, segmented_dir, paper, step_cost_file=step_cost_file)
    files: dict[str, bytes] = {}
    tables = all_tables(context)
    for table in tables:
        stem = f"tables/table{table.number}"
        files[f"{stem}.md"] = table.markdown(profile).encode()
        files[f"{stem}.csv"] = table.csv(profile).encode()
        files[f"{stem}.tex"] = table.latex(profile).encode()
    files["tables/verdicts.csv"] = _csv([v.record() for t in tables for v in t.verdicts], profile).encode()
    files["tables/paper_values.csv"] = figures.csv_text(tidy_values(paper)).encode()
    files["figures/figure2.md"] = figures.figure2_markdown(plan, segmented_dir).encode()
    spans = figures.spans_per_sentence(plan, segmented_dir)
    scores = figures.dictsize_scores(plan, runs_dir)
    for number, rendered in ((3, figures.figure3(spans, profile)), (4, figures.figure4(scores, profile))):
        for fmt, data in rendered.items():
            files[f"figures/figure{number}.{fmt}"] = data
    files["plots/spans_per_sentence.csv"] = figures.csv_text(spans).encode()
    files["plots/dictsize_score.csv"] = figures.csv_text(scores).encode()
    files["plots/training_curves.csv"] = figures.csv_text(training_curves(plan, runs_dir)).encode()
    files["metrics.json"] = (json.dumps(headline_metrics(context), indent=2, sort_keys=True) + "\n").encode()
    files["headline.json"] = (json.dumps(headline(tables, context.synthetic), indent=2, ensure_ascii=False)
                              + "\n").encode()
    _read_dictsize_runs(context)  # Figure 4's runs are checked against constant predictors too
    checks = check_runs(context.all_runs())
    files["index.md"] = index_markdown(profile, list(files), tables, context.all_runs(), checks, corpus).encode()
    return files


# ------------------------------------------------------------------------------------------- tables


BUILDERS: tuple[Callable[[ReportContext], Table], ...] = (
    glue_tables.table1, significance_tables.table2, significance_tables.table3, glue_tables.table4,
    dev_test_tables.table5, glue_tables.table6, dev_test_tables.table7, dev_test_tables.table8,
)


def all_tables(context: ReportContext) -> list[Table]:
    """Tables 1-8, each followed by the paper's table as printed."""
    return [with_paper(build(context), context.paper) for build in BUILDERS]


def with_paper(table: Table, paper: Paper) -> Table:
    """``table`` with the paper's table of the same number, its split and its footnotes appended."""
    paper_table = paper.table(table.number)
    if paper_table is not None:
        split = " and ".join(split_words(s, paper_table.is_glue) for s in paper_table.splits)
        table.paper_heading = f"The paper's Table {table.number} as printed — {paper_table.caption}. Split: {split}."
        table.paper_display = printed_table(paper_table)
        table.paper_notes = footnotes(paper, table.number)
        if has_dash(table.paper_display) and NO_VALUE not in table.notes:
            table.notes.append(NO_VALUE)
    return table


def _read_dictsize_runs(context: ReportContext) -> None:
    plan = context.plan
    seeds = plan.studies["dictsize"].seeds
    for backbone in plan.studies["dictsize"].backbones:
        for task in plan.studies["dictsize"].tasks:
            for method in plan.studies["dictsize"].methods:
                for size in plan.dict_sizes:
                    context.runs("dictsize", backbone, task, f"{method}-{size}", seeds)


def _csv(records: list[dict], profile: str) -> str:
    frame = pd.DataFrame(records)
    frame.insert(0, "profile", profile)
    for column in ("table", "n_seeds", "resamples"):
        if column in frame.columns:
            frame[column] = frame[column].astype("Int64")
    return figures.csv_text(frame)


def _write_all(out_dir: Path, files: dict[str, bytes]) -> None:
    index = out_dir / "index.md"
    if index.exists():
        index.unlink()  # until the last file is in place, the report does not look complete
    for relative, data in files.items():
        with atomic_open(out_dir / relative, "wb") as handle:
            handle.write(data)
    log.info("report: wrote %d files under %s", len(files), out_dir)


# ------------------------------------------------------------------------------------------- metrics.json


def headline_metrics(context: ReportContext) -> dict[str, Any]:
    """Per study / backbone / task: mean dev main metric of baseline and sf over seeds, and sf - baseline;
    GLUE-style studies also get ``average`` (mean over their tasks)."""
    plan = context.plan
    result: dict[str, Any] = {"profile": plan.profile_label, "data": SYNTHETIC if context.synthetic else REAL}
    for study in HEADLINE_STUDIES:
        seeds = plan.studies[study].seeds
        per_backbone = {}
        for backbone in plan.studies[study].backbones:
            means = {task: [_mean_dev(context.runs(study, backbone, task, variant, seeds))
                            for variant in ("baseline", "sf")]
                     for task in plan.studies[study].tasks}
            if study in ("glue", "backbones"):
                means["average"] = [_mean([pair[i] for pair in means.values()]) for i in (0, 1)]
            per_backbone[backbone] = {key: _pair(*pair) for key, pair in means.items()}
        result[study] = per_backbone
    return result


def _mean_dev(runs) -> float:
    return _mean([run.dev_main() for run in runs])


def _mean(values: list[float | None]) -> float:
    numbers = [math.nan if v is None else v for v in values]
    return math.nan if not numbers or any(math.isnan(v) for v in numbers) else sum(numbers) / len(numbers)


def _pair(baseline: float, sf: float) -> dict[str, float | None]:
    def clean(value: float) -> float | None:
        return None if value is None or math.isnan(value) else round(value, 6)

    return {"baseline": clean(baseline), "sf": clean(sf), "diff": clean(sf - baseline)}


# ------------------------------------------------------------------------------------------- index.md


_DESCRIPTIONS = {
    "table1": "GLUE dev, baseline and +SF per backbone (mean ± sd, best run)",
    "table2": "significance: McNemar of the best runs (the paper's) and per seed, Welch's t over per-seed scores",
    "table3": "cost: time per optimizer step (wall, CPU), fine-tuning seconds, device, extra parameters",
    "table4": "backbones study (paper: SpanBERT, RoBERTa), mean ± sd",
    "table5": "SNLI dev/test accuracy",
    "table6": "ablation: +CNN, random, chunker, n-gram segmentation",
    "table7": "span encoders on SNLI",
    "table8": "CoNLL-2003 entity F1 dev/test",
    "figure2": "segmentation examples",
    "figure3": "mean spans per sentence vs dictionary size (train split; pairs: both sentences)",
    "figure4": "dev score vs dictionary size, n-gram vs random (span vector only)",
    "spans_per_sentence": "Figure 3's data (DVC plot)",
    "dictsize_score": "Figure 4's data (DVC plot; score = dev main metric x 100)",
    "metrics": "DVC metrics: mean dev main metric of baseline and sf, their difference, GLUE averages",
    "headline": "DVC metrics: each table's gain and its 95% interval (x 100), as its verdict line prints them",
    "training_curves": "every run's training curves from its DVCLive files (DVC plots), by optimizer step",
    "verdicts": "every verdict line as data: our gain, its 95% interval, p and detectable gain, the paper's gain, the word",
    "paper_values": "every number the paper prints, with its table, row, origin, column, metric and split",
}


def index_markdown(profile: str, paths: list[str], tables: list = (), runs: list = (), checks: list = (),
                   corpus: dict | None = None) -> str:
    """The summary (profile, inputs, verdicts, flagged runs), then every report file."""
    lines = [profile_line(profile), "", *summary_lines(list(runs), list(tables), list(checks), corpus),
             "# Reports", ""]
    for path in sorted(paths):
        stem = Path(path).stem
        lines.append(f"- [{path}]({path}): {_DESCRIPTIONS.get(stem, '')}".rstrip(": "))
    lines += ["", "Every file is byte-identical for identical runs and segmented data, except Table 3's "
              "measured seconds.", "", *flagged_lines(list(checks))]
    return "\n".join(lines)

# -------------------------------------------------------------------------------- index.md summary


NOT_RECORDED = "not recorded"
FIELD_ORDER = ("source", "id_or_path", "revision", "digest")
DIGEST_CHARS = 12
FLAGS_SHOWN = 8


def summary_lines(runs: list[Run], tables: list, checks: list[RunCheck], corpus: dict | None = None) -> list[str]:
    """Markdown lines: inputs, verdicts per table, and the flagged runs (the first few); the profile line
    comes first in every report."""
    lines = ["# Summary", "", f"- Corpus: {describe(corpus)}", *inputs_lines(runs), "", "## Verdicts", ""]
    for table in tables:
        if not table.verdicts:
            lines.append(f"- Table {table.number}: no verdict ({'; '.join(table.notes[:1]) or 'no runs'})")
        for verdict in table.verdicts:
            lines.append(f"- Table {table.number}, {verdict.line()}")
    lines += ["", "## Runs no better than a constant predictor", ""]
    flagged = [check for check in checks if check.flagged]
    if not flagged:
        lines.append(f"- none of the {len(checks)} dev splits checked")
    for check in flagged[:FLAGS_SHOWN]:
        lines.append(f"- {check.describe()}")
    if len(flagged) > FLAGS_SHOWN:
        lines.append(f"- … and {len(flagged) - FLAGS_SHOWN} more (all {len(flagged)} at the end of this page)")
    return lines + [""]


def flagged_lines(checks: list[RunCheck]) -> list[str]:
    """Every flagged run, for the end of the index."""
    flagged = [check for check in checks if check.flagged]
    if len(flagged) <= FLAGS_SHOWN:
        return []
    return ["## Every run no better than a constant predictor", "",
            *(f"- {check.describe()}" for check in flagged), ""]


def inputs_lines(runs: list[Run]) -> list[str]:
    """One line for the backbones and one for the data: each distinct record and who used it."""
    backbones: dict[str, list[str]] = {}
    data: dict[str, list[str]] = {}
    missing = 0
    for run in runs:
        inputs = run.get("inputs")
        if not isinstance(inputs, dict):
            missing += 1
            inputs = {}
        _add(backbones, describe(inputs.get("backbone")), run.backbone)
        _add(data, describe(inputs.get("data")), run.task)
    runs_text = f"{count_of(len(runs), 'run')} read" + (f", {missing} without an inputs record" if missing else "")
    return [f"- Backbones: {_grouped(backbones)}", f"- Data: {_grouped(data)}", f"- Runs: {runs_text}"]


def describe(record: Any) -> str:
    """``source hub, id_or_path bert-base-uncased, revision 86b5e09…`` from an inputs record."""
    if not isinstance(record, dict) or not record:
        return NOT_RECORDED
    keys = [k for k in FIELD_ORDER if k in record] + sorted(k for k in record if k not in FIELD_ORDER)
    parts = []
    for key in keys:
        value = record[key]
        if isinstance(value, (dict, list)):
            continue
        text = str(value)
        if key in ("revision", "digest") and len(text) > DIGEST_CHARS:
            text = text[:DIGEST_CHARS] + "…"
        parts.append(f"{key} {text}")
    return ", ".join(parts) or NOT_RECORDED


def _add(groups: dict[str, list[str]], description: str, user: str) -> None:
    users = groups.setdefault(description, [])
    if user not in users:
        users.append(user)


def _grouped(groups: dict[str, list[str]]) -> str:
    if not groups:
        return NOT_RECORDED
    return "; ".join(f"{', '.join(users)}: {description}" for description, users in groups.items())
