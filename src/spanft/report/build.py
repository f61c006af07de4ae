"""Report stage: every table and figure of the paper from the fine-tuning runs, and GLUE leaderboard zips.

The report stage (``spanft report``) writes, under ``reports/``:

- ``tables/table{1..8}.{md,csv,tex}`` (:mod:`spanft.report.tables`), ``tables/verdicts.csv`` (every verdict
  line as data) and ``tables/paper_values.csv`` (every number the paper prints, :mod:`spanft.report.paper`),
- ``figures/figure2.md``, ``figures/figure{3,4}.{png,pdf}`` (:mod:`spanft.report.figures`),
- ``metrics.json`` (DVC metrics: headline dev scores), ``plots/spans_per_sentence.csv``,
  ``plots/dictsize_score.csv`` (DVC plots), and ``index.md``, written last: a one-screen summary (inputs,
  verdicts, runs no better than a constant predictor, :mod:`spanft.report.summary`), then every file.

Everything is computed before anything is written, each file is written atomically, and ``index.md`` is
removed first and written last, so an interrupted report never looks complete. Outputs are byte-identical
for identical inputs, except Table 3's measured seconds.

"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

import pandas as pd

from spanft.data.corpus import read_corpus_record
from spanft.fileio import atomic_open, check_output_location
from spanft.params.plan import Plan
from spanft.report import figures
from spanft.report.cells import profile_line
from spanft.report.context import ReportContext
from spanft.report.paper import Paper, tidy_values
from spanft.report.summary import flagged_lines, summary_lines
from spanft.report.tables import all_tables
from spanft.report.trivial import check_runs

log = logging.getLogger("spanft")

HEADLINE_STUDIES = ["glue", "backbones", "snli", "ner"]


def write_reports(plan: Plan, runs_dir: str | Path, segmented_dir: str | Path, out_dir: str | Path, *,
                  paper_values: str | Path | None = None, corpus_record: str | Path | None = None) -> list[str]:
    """Write every report file under ``out_dir``; return their paths relative to it (index.md last).

    ``corpus_record``: the corpus stage's provenance file, shown in the summary (absent: "not recorded").
    """
    check_output_location(out_dir, inputs=[runs_dir, segmented_dir])  # before anything is read or written
    corpus = read_corpus_record(corpus_record) if corpus_record else None
    files = build_reports(plan, Path(runs_dir), Path(segmented_dir), paper_values=paper_values, corpus=corpus)
    _write_all(Path(out_dir), files)
    return list(files)


def build_reports(plan: Plan, runs_dir: Path, segmented_dir: Path, *, paper_values: str | Path | None = None,
                  corpus: dict | None = None) -> dict[str, bytes]:
    """Every report file's bytes by relative path, ``index.md`` last (nothing is written)."""
    profile = plan.profile_label
    paper = Paper.load(paper_values)
    context = ReportContext(plan, runs_dir, segmented_dir, paper)
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
    files["metrics.json"] = (json.dumps(headline_metrics(context), indent=2, sort_keys=True) + "\n").encode()
    _read_dictsize_runs(context)  # Figure 4's runs are checked against constant predictors too
    checks = check_runs(context.all_runs())
    files["index.md"] = index_markdown(profile, list(files), tables, context.all_runs(), checks, corpus).encode()
    return files


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
    result: dict[str, Any] = {"profile": plan.profile_label}
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
    "table2": "significance: McNemar of the best runs (the paper's) and per seed, two-level bootstrap (seeds, examples)",
    "table3": "cost: fine-tuning seconds, device, extra parameters",
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
    "verdicts": "every verdict line as data: our gain, its 95% interval and p, the paper's gain, the word",
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
