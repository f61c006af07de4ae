"""Tables 1-8 of the paper from the fine-tuning runs, the paper's own numbers beside them, and a verdict each.

Scores are shown in percent (metric x 100), one decimal, as the paper prints them; "mean ± sd" is the mean
and the sample standard deviation (ddof = 1) over seeds (the sd is left out with a single seed). The CSVs
hold the same numbers unrounded (6 decimals) with one row per cell.

Like with like: our runs are scored on dev. A paper number is labelled with its split; a difference
"ours − paper" is shown only where the splits match (the dev and test columns of Tables 5-8, Table 6's dev
average). GLUE averages are shown two ways: ours (one column per task, MNLI matched) and the paper's rule
(nine columns: MNLI-m and MNLI-mm separately, no WNLI). Each table ends with the paper's table as printed
and footnotes on its inconsistencies (:mod:`spanft.report.paper`), and with verdict lines
(:mod:`spanft.report.verdict`) computed from the runs' predictions (:mod:`spanft.report.compare`).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from spanft.data.registry import get_task
from spanft.errors import SpanftError
from spanft.report.bootstrap import BootstrapResult, mean_of
from spanft.report.compare import Comparisons
from spanft.report.paper import (
    METRIC_NAMES,
    PAPER_AVERAGE_COLUMNS,
    Paper,
    PaperTable,
    footnotes,
    printed_columns_average,
    printed_table,
    split_words,
)
from spanft.report.runs import (
    Params,
    Run,
    Summary,
    best_run,
    load_runs,
    split_score,
    summarize,
)
from spanft.report.stats import mcnemar_files
from spanft.report.verdict import (
    MACHINERY,
    NO_INFERENCE,
    ONE_SEED,
    SYNTHETIC,
    PlainVerdict,
    Verdict,
    interval_level,
    signed,
)

DASH = "—"
NO_VALUE = "—: no value; in a paper cell, the paper prints none for that row and column."
ENCODERS = [("cnn-max", "CNN-Max"), ("cnn-cnn", "CNN-CNN"), ("attention-max", "Attention-Max"),
            ("attention-attention", "Attention-Attention")]
INTEGER_COLUMNS = {"n_seeds", "best_seed", "baseline_seed", "sf_seed", "n", "both_correct", "only_a_correct",
                   "only_b_correct", "both_wrong", "resamples"}
PROFILE_LINES = {
    "embedded": "Profile: embedded — synthetic data, tiny local backbones, CPU — not paper numbers.",
    "paper": "Profile: paper — the paper's tasks and backbones.",
    "small": "Profile: small — real task data, a small local encoder, a laptop's budget — not the paper's backbones.",
}
AVERAGE_RULE = ("Avg (ours): mean over the study's tasks of each task's first column (MNLI: matched), per seed. "
                "Avg (paper rule): the paper's average, the mean of nine columns — CoLA, SST-2, MNLI-m, MNLI-mm, "
                "QNLI, RTE, MRPC, QQP, STS-B (MNLI counted twice, WNLI left out) — per seed; — when the study "
                "lacks one of them.")
SIGNIFICANCE_NOTE = ("95% CI: two-level paired bootstrap — seeds within each arm, then dev examples — of the mean "
                     "over seeds of each arm's score, percentile interval (README \"Significance\"); with 1 seed per "
                     "arm it resamples examples only and speaks of these runs, not of the method. An Avg's interval "
                     "resamples each column's seeds and examples.")


def profile_line(profile: str) -> str:
    return PROFILE_LINES.get(profile, f"Profile: {profile}.")


# ------------------------------------------------------------------------------------------- formatting


def pct(value: float) -> str:
    return DASH if value is None or math.isnan(value) else f"{100 * value:.1f}"


def paper_cell(value: float) -> str:
    return DASH if math.isnan(value) else f"{value:.1f}"


def mean_sd(summary: Summary) -> str:
    if summary.n == 0:
        return DASH
    if summary.n == 1:
        return pct(summary.mean)
    return f"{pct(summary.mean)} ± {100 * summary.sd:.1f}"


def p_value_cell(value: float) -> str:
    return DASH if math.isnan(value) else f"{value:.3g}"


def bootstrap_p_cell(result: BootstrapResult | None) -> str:
    """The bootstrap p-value; at the resampling floor ``≤ 2/(R+1)``, an upper bound."""
    if result is None or math.isnan(result.p_value):
        return DASH
    return f"≤ {result.p_value:.3g}" if result.p_at_floor else p_value_cell(result.p_value)


def ci_cell(result: BootstrapResult | None) -> str:
    """``+1.2 [-0.3, +2.5]``: the gain x 100 and its 95% interval."""
    if result is None or math.isnan(result.gain):
        return DASH
    return f"{signed(100 * result.gain)} [{signed(100 * result.low)}, {signed(100 * result.high)}]"


def _number(value: float | None, scale: float = 100.0) -> float | None:
    return None if value is None or math.isnan(value) else scale * value


# ------------------------------------------------------------------------------------------- tables


@dataclass
class Table:
    number: int
    title: str
    display: pd.DataFrame  # formatted strings
    data: pd.DataFrame  # tidy numbers
    notes: list[str] = field(default_factory=list)
    verdicts: list = field(default_factory=list)  # Verdict | PlainVerdict
    paper_heading: str = ""
    paper_display: pd.DataFrame = field(default_factory=pd.DataFrame)
    paper_notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if _has_dash(self.display) or _has_dash(self.paper_display):
            self.notes.append(NO_VALUE)

    def markdown(self, profile: str) -> str:
        notes = "".join(f"- {note}\n" for note in self.notes)
        # disable_numparse: cells are formatted strings already ("14.0" must not become "14")
        body = self.display.to_markdown(index=False, disable_numparse=True) if len(self.display) else "(no rows)"
        text = f"{profile_line(profile)}\n\n**Table {self.number}.** {self.title}\n\n{body}\n\n{notes}"
        if self.verdicts:
            text += "\nVerdicts (rule: README \"Verdicts\"):\n\n" + "".join(f"- {v.line()}\n" for v in self.verdicts)
        if self.paper_heading:
            paper = self.paper_display.to_markdown(index=False, disable_numparse=True)
            text += f"\n**{self.paper_heading}**\n\n{paper}\n"
            if self.paper_notes:
                text += "\nOn the paper's numbers:\n\n" + "".join(f"- {note}\n" for note in self.paper_notes)
        return text

    def latex(self, profile: str) -> str:
        header = f"% {profile_line(profile)}\n% Table {self.number}. {self.title}\n"
        header += "".join(f"% {note}\n" for note in self.notes)
        header += "".join(f"% {v.line().replace('**', '')}\n" for v in self.verdicts)
        parts = [header]
        if len(self.display):
            parts.append(_tabular(self.display))
        if self.paper_heading:
            parts.append(f"% {self.paper_heading}\n" + "".join(f"% {note}\n" for note in self.paper_notes))
            parts.append(_tabular(self.paper_display))
        return "".join(parts)

    def csv(self, profile: str) -> str:
        frame = self.data.copy()
        for column in INTEGER_COLUMNS.intersection(frame.columns):
            frame[column] = frame[column].astype("Int64")
        frame.insert(0, "profile", profile)
        buffer = io.StringIO()
        frame.to_csv(buffer, index=False, float_format="%.6f", lineterminator="\n")
        return buffer.getvalue()


def _tabular(frame: pd.DataFrame) -> str:
    return frame.to_latex(index=False, escape=True).replace("±", r"$\pm$").replace(DASH, "--").replace("−", "-")


def _has_dash(display: pd.DataFrame) -> bool:
    return bool(len(display)) and bool((display == DASH).any().any())


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


@dataclass(frozen=True)
class Method:
    """A table row group: a label and where its runs live (study, variant)."""

    label: str
    key: str  # the paper rows' method
    study: str
    variant: str


class TableBuilder:
    """Builds every table from the params and the run directories."""

    def __init__(self, params: Params, runs_dir: Path, segmented_dir: Path, paper: Paper,
                 comparisons: Comparisons | None = None):
        self.params = params
        self.runs_dir = Path(runs_dir)
        self.segmented_dir = Path(segmented_dir)
        self.paper = paper
        self.comparisons = comparisons or Comparisons.from_params(params)
        self._cache: dict[tuple, list[Run]] = {}

    def runs(self, study: str, backbone: str, task: str, variant: str, seeds: list[int]) -> list[Run]:
        key = (study, backbone, task, variant, tuple(seeds))
        if key not in self._cache:
            self._cache[key] = load_runs(self.runs_dir, study, backbone, task, variant, seeds)
        return self._cache[key]

    def all_runs(self) -> list[Run]:
        """Every run the tables read, once each."""
        return [run for runs in self._cache.values() for run in runs]

    @property
    def synthetic(self) -> bool:
        """Synthetic task data (params ``data.source``; without it, the embedded profile): no verdict on the paper."""
        source = self.params.optional("data.source")
        return source == "synthetic" if source is not None else str(self.params.optional("profile")) == "embedded"

    def backbone_label(self, backbone: str) -> str:
        paper = self.params.paper_name(backbone)
        return backbone if paper == backbone else f"{backbone} (for {paper})"

    def all_tables(self) -> list[Table]:
        builders: list[Callable[[], Table]] = [self.table1, self.table2, self.table3, self.table4, self.table5,
                                               self.table6, self.table7, self.table8]
        return [self._with_paper(build()) for build in builders]

    def _with_paper(self, table: Table) -> Table:
        paper_table = self.paper.table(table.number)
        if paper_table is not None:
            split = " and ".join(split_words(s, paper_table.is_glue) for s in paper_table.splits)
            table.paper_heading = f"The paper's Table {table.number} as printed — {paper_table.caption}. Split: {split}."
            table.paper_display = printed_table(paper_table)
            table.paper_notes = footnotes(self.paper, table.number)
            if _has_dash(table.paper_display) and NO_VALUE not in table.notes:
                table.notes.append(NO_VALUE)
        return table

    def _missing_study(self, number: int, title: str, study: str) -> Table:
        empty = pd.DataFrame()
        return Table(number, title, empty, empty, [f"Study `{study}` is not in params.studies: no runs."])

    def _paper_row(self, paper_table: PaperTable | None, backbone: str, method: str, stand_in: bool = False):
        """The paper's row for our backbone (or, with ``stand_in``, the table's first backbone when it has none)."""
        if paper_table is None:
            return None
        name = self.params.paper_name(backbone)
        if stand_in:
            name = paper_table.stand_in(name)
        return paper_table.find(name, method)

    # ---- GLUE-style tables (1, 4, 6)

    def glue_table(self, number: int, title: str, study: str, methods: list[Method], include_best: bool) -> Table:
        """Rows per backbone and method, a column per task score and two averages; then gains and verdicts."""
        tasks = self.params.study_tasks(study)
        seeds = self.params.seeds(study)
        paper_table = self.paper.table(number)
        columns = glue_columns(tasks, paper_table)
        rows, data, verdicts = [], [], []
        for backbone in self.params.backbones(study):
            label = {"Backbone": self.backbone_label(backbone)}
            runs = {m.key: {t: self.runs(m.study, backbone, t, m.variant, seeds) for t in tasks} for m in methods}
            for method in methods:
                rows += self._glue_method_rows(label, method, columns, runs[method.key], seeds, include_best, data,
                                               backbone, paper_table)
            for method in methods[1:]:
                rows.append(self._glue_gain_row(label, method, columns, runs["baseline"], runs[method.key], data,
                                                backbone))
            verdicts.append(self._glue_verdict(number, backbone, columns, runs["baseline"], runs["sf"], seeds,
                                               paper_table))
        notes = ["Scores are dev-set metrics x 100; mean ± sd over seeds (sample sd, ddof = 1).", AVERAGE_RULE,
                 SIGNIFICANCE_NOTE]
        if include_best:
            notes.append("Best run: the seed with the highest dev main metric (MNLI: matched); its scores.")
        notes += self.training_caps(tasks)
        return Table(number, title, pd.DataFrame(rows), pd.DataFrame(data), notes, verdicts)

    def training_caps(self, tasks: list[str]) -> list[str]:
        """A note per task and cut split set (params ``hparams.<task>.max_train_examples`` / ``max_eval_examples``)."""
        notes = []
        for task in tasks:
            for key, what in (("max_train_examples", "training set"), ("max_eval_examples", "dev and test sets")):
                cap = self.params.optional(f"hparams.{task}.{key}")
                if cap:
                    notes.append(f"{task}: {what} capped at the first {int(cap):,} examples (hparams.{task}.{key}).")
        return notes

    def _glue_method_rows(self, label: dict, method: Method, columns: list[Column], runs: dict[str, list[Run]],
                          seeds: list[int], include_best: bool, data: list[dict], backbone: str,
                          paper_table: PaperTable | None) -> list[dict]:
        label = {**label, "Method": method.label}
        mean_row, best_row, means = {}, {}, {}
        for column in columns:
            column_runs = runs[column.task]
            summary = summarize(run.metric(column.split, column.metric) for run in column_runs)
            best = best_run(column_runs)
            best_value = best.metric(column.split, column.metric)
            mean_row[column.label] = mean_sd(summary)
            means[column.label] = _number(summary.mean)
            best_row[column.label] = f"{pct(best_value)} (s{best.seed})"
            data.append(self._datum(backbone, method, column.key, column.split, column.metric, summary, best_value,
                                    best.seed))
        for key, (per_seed, best_value) in _averages(columns, runs, len(seeds)).items():
            summary = summarize(per_seed)
            mean_row[AVERAGE_LABELS[key]] = mean_sd(summary)
            means[AVERAGE_LABELS[key]] = _number(summary.mean)
            best_row[AVERAGE_LABELS[key]] = pct(best_value)
            data.append(self._datum(backbone, method, key, "dev", "average", summary, best_value, None))
        seed_text = f"mean ± sd ({len(seeds)} seed{'' if len(seeds) == 1 else 's'})"
        rows = [{**label, "Statistic": seed_text, **mean_row}]
        if include_best:
            rows.append({**label, "Statistic": "best run (seed)", **best_row})
        paper_row = self._paper_row(paper_table, backbone, method.key)
        if paper_row is not None:
            rows += self._glue_paper_rows(label, method, columns, paper_row, paper_table, means, data, backbone)
        return rows

    def _glue_paper_rows(self, label: dict, method: Method, columns: list[Column], paper_row, paper_table: PaperTable,
                         means: dict[str, float | None], data: list[dict], backbone: str) -> list[dict]:
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
        for key in [column.key for column in columns] + ["avg"]:
            if key in paper_table.columns:
                data.append({"backbone": backbone, "paper_backbone": self.params.paper_name(backbone),
                             "method": method.key, "study": "paper", "variant": method.variant,
                             "column": "avg-paper-rule" if key == "avg" else key, "split": paper_table.split_of(key),
                             "metric": paper_table.metric_of(key), "statistic": "paper", "paper_row": paper_row.label,
                             "mean_pct": _number(paper_row.value(key), 1.0)})
        rows = [{**label, "Statistic": f"paper ({split})", **cells}]
        if split == "dev":  # like with like: ours − paper only where the paper's split is ours
            ours = {c: math.nan if means.get(c) is None else means[c] for c in values}
            differences = {c: _difference(ours[c], value) for c, value in values.items()}
            if any(cell != DASH for cell in differences.values()):
                rows.append({**label, "Statistic": "ours − paper (dev)", **differences})
        return rows

    def _glue_gain_row(self, label: dict, method: Method, columns: list[Column], base: dict[str, list[Run]],
                       other: dict[str, list[Run]], data: list[dict], backbone: str) -> dict:
        results = {c.key: self.comparisons.bootstrap(base[c.task], other[c.task], c.split, c.metric) for c in columns}
        averages = _average_gains(columns, results)
        cells = {c.label: ci_cell(results[c.key]) for c in columns}
        cells |= {AVERAGE_LABELS[key]: ci_cell(result) for key, result in averages.items()}
        for key, result in [*results.items(), *averages.items()]:
            data.append({"backbone": backbone, "paper_backbone": self.params.paper_name(backbone),
                         "method": f"{method.key}-baseline", "study": method.study, "variant": method.variant,
                         "column": key, "split": "dev", "statistic": "gain", **_gain_fields(result)})
        levels = sorted({interval_level(r) for r in [*results.values(), *averages.values()] if r is not None})
        statistic = f"gain, 95% CI (dev; {', '.join(levels) or 'no runs'})"
        return {**label, "Method": f"{method.label} − baseline", "Statistic": statistic, **cells}

    def _glue_verdict(self, number: int, backbone: str, columns: list[Column], base: dict[str, list[Run]],
                      sf: dict[str, list[Run]], seeds: list[int], paper_table: PaperTable | None) -> Verdict:
        scope = [c for c in columns if c.key in PAPER_AVERAGE_COLUMNS]
        result = mean_of([self.comparisons.bootstrap(base[c.task], sf[c.task], c.split, c.metric) for c in scope]) \
            if scope else None
        names = ", ".join(c.label.split(" ")[0] for c in scope)
        rule = " — the paper's rule" if len(scope) == len(PAPER_AVERAGE_COLUMNS) else ""
        paper_gain, paper_scope, extra = self._glue_paper_gain(backbone, scope, paper_table)
        return Verdict(number, self.backbone_label(backbone), "SF − baseline",
                       f"the mean of {len(scope)} dev columns ({names}{rule})", result, len(seeds), paper_gain,
                       paper_scope, extra, self.synthetic)

    def _glue_paper_gain(self, backbone: str, scope: list[Column], paper_table: PaperTable | None):
        base = self._paper_row(paper_table, backbone, "baseline", stand_in=True)
        sf = self._paper_row(paper_table, backbone, "sf", stand_in=True)
        if base is None or sf is None:
            return math.nan, "no published gain", ""
        who = self._stand_in_words(paper_table, backbone, base)
        keys = [c.key for c in scope if not math.isnan(base.value(c.key)) and not math.isnan(sf.value(c.key))]
        if keys:
            gain = sum(sf.value(k) - base.value(k) for k in keys) / len(keys)
            where = f"{paper_table.split_of(keys[0])}, {who}, the same {len(keys)} columns"
        else:
            gain = sf.value("avg") - base.value("avg")
            where = f"{paper_table.split_of('avg')}, {who}, its printed averages (tasks not named)"
        printed = sf.value("gain") if "gain" in paper_table.columns else math.nan
        extra = "" if math.isnan(printed) else f"the paper prints a gain of {printed:.1f} from its averages"
        return gain, where, extra

    def _stand_in_words(self, paper_table: PaperTable, backbone: str, row) -> str:
        ours = self.params.paper_name(backbone)
        if row.backbone is None:
            return "backbone not named"
        if paper_table.find(ours, row.method) is row:
            return row.label.replace(" + SF", "") + " rows"
        return f"{row.label.replace(' + SF', '')} rows; the paper has none for {ours}"

    def _datum(self, backbone: str, method: Method, column: str, split: str, metric: str, summary: Summary,
               best: float, best_seed: int | None) -> dict:
        return {"backbone": backbone, "paper_backbone": self.params.paper_name(backbone), "method": method.key,
                "study": method.study, "variant": method.variant, "column": column, "split": split,
                "metric": metric, "statistic": "ours", "n_seeds": summary.n, "mean_pct": _number(summary.mean),
                "sd_pct": _number(summary.sd), "best_pct": _number(best), "best_seed": best_seed}

    def table1(self) -> Table:
        title = "GLUE dev results, baseline and span fine-tuning (+SF), per backbone."
        if not self.params.has_study("glue"):
            return self._missing_study(1, title, "glue")
        methods = [Method("baseline", "baseline", "glue", "baseline"), Method("+SF", "sf", "glue", "sf")]
        return self.glue_table(1, title, "glue", methods, include_best=True)

    def table4(self) -> Table:
        title = "Other backbones (paper: SpanBERT-large, RoBERTa-large), baseline and +SF, GLUE dev."
        if not self.params.has_study("backbones"):
            return self._missing_study(4, title, "backbones")
        methods = [Method("baseline", "baseline", "backbones", "baseline"), Method("+SF", "sf", "backbones", "sf")]
        table = self.glue_table(4, title, "backbones", methods, include_best=False)
        table.notes.insert(0, "Columns use the metric of the paper's Table 4 (QQP: accuracy, where Table 1 uses F1).")
        return table

    def table6(self) -> Table:
        title = "Ablation on GLUE dev: +CNN without segmentation, random, chunker and n-gram (+SF) segmentation."
        if not self.params.has_study("ablation"):
            return self._missing_study(6, title, "ablation")
        methods = [
            Method("baseline", "baseline", "glue", "baseline"),
            Method("+CNN (no segmentation)", "cnn-noseg", "ablation", "cnn-noseg"),
            Method("+random segmentation", "random-seg", "ablation", "random-seg"),
            Method("+chunker segmentation", "chunker-seg", "ablation", "chunker-seg"),
            Method("+SF (n-gram)", "sf", "glue", "sf"),
        ]
        table = self.glue_table(6, title, "ablation", methods, include_best=False)
        table.notes.insert(0, "Baseline and +SF rows are the glue study's runs of the same backbone, task and seed.")
        table.notes.insert(1, self.chunker_note())
        table.notes.append("The paper prints only Table 6's average and does not name its tasks; ours − paper "
                           "compares it with our average under the paper's rule.")
        return table

    def chunker_note(self) -> str:
        """Which tagger produced the chunker row: params ``chunker.source`` (else ``chunker.tagger``: '' = NLTK's
        pretrained tagger), and what the segmented data recorded (the tagger's training data and POS accuracy)."""
        tagger_file = self.params.optional("chunker.tagger")
        source = self.params.optional("chunker.source") or ("synthetic" if tagger_file else "nltk")
        tagger = {
            "synthetic": "an NLTK PerceptronTagger trained here on the synthetic corpus's part-of-speech tags",
            "conll": "an NLTK PerceptronTagger trained here on CoNLL-2003 train's Penn Treebank POS tags",
            "nltk": "NLTK's pretrained averaged-perceptron tagger",
        }.get(source, f"tagger source {source}")
        tagger += f" ({tagger_file})" if tagger_file else ""
        recorded = sorted({info.get("segmenter", {}).get("tagger", "") for info in self._chunker_infos()} - {""})
        suffix = f"; recorded in the segmented data: {', '.join(recorded)}" if recorded else ""
        return f"Chunker segmentation: NLTK RegexpParser NP/VP chunks over tags from {tagger}{suffix}."

    def _chunker_infos(self) -> list[dict]:
        import json

        infos = []
        for task in self.params.study_tasks("ablation"):
            path = self.segmented_dir / "chunker" / task / "segmentation.json"
            if path.is_file():
                try:
                    infos.append(json.loads(path.read_text(encoding="utf-8")))
                except json.JSONDecodeError as exc:
                    raise SpanftError(f"{path}: not valid JSON ({exc})") from None
        return infos

    # ---- Table 2: McNemar and the two-level bootstrap

    def table2(self) -> Table:
        title = ("Significance of SF − baseline on the dev sets: McNemar's test of the best runs (the paper's "
                 "test), McNemar per seed, and the two-level bootstrap over seeds and examples (the verdict's).")
        if not self.params.has_study("glue"):
            return self._missing_study(2, title, "glue")
        wanted = self.params.optional("reports.mcnemar_tasks", []) or []
        tasks = [task for task in self.params.study_tasks("glue") if task in wanted]
        seeds = self.params.seeds("glue")
        paper_table = self.paper.table(2)
        rows, data, verdicts = [], [], []
        for backbone in self.params.backbones("glue"):
            paper_row = self._paper_row(paper_table, backbone, "sf")
            results = []
            for task in tasks:
                row, records, bootstrap = self._significance_row(backbone, task, seeds, paper_row)
                rows.append(row)
                data += records
                results.append(bootstrap)
            verdicts.append(self._table2_verdict(backbone, results, paper_row))
        skipped = [task for task in wanted if task not in tasks]
        notes = [] if not skipped else [f"reports.mcnemar_tasks not in the glue study: {', '.join(skipped)}."]
        notes += [
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
        return Table(2, title, pd.DataFrame(rows), pd.DataFrame(data), notes, verdicts)

    def _significance_row(self, backbone: str, task: str, seeds: list[int], paper_row):
        base_runs = self.runs("glue", backbone, task, "baseline", seeds)
        sf_runs = self.runs("glue", backbone, task, "sf", seeds)
        base, span = best_run(base_runs), best_run(sf_runs)
        split = base.spec.selection_split
        result = mcnemar_files(base.predictions(split), span.predictions(split))
        pairs = self.comparisons.seed_pairs(base_runs, sf_runs, split)
        bootstrap = self.comparisons.bootstrap(base_runs, sf_runs, split, base.spec.main_metric)
        paper = math.nan if paper_row is None else paper_row.value(task)
        where = {"backbone": backbone, "paper_backbone": self.params.paper_name(backbone), "task": task, "split": split}
        row = {
            "Backbone": self.backbone_label(backbone), "Task": task, "Split": split,
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
                    **result.as_dict(), "paper_p_value": _number(paper, 1.0)}]
        records += [{**where, "comparison": f"seed {pair.seed}", "baseline_seed": pair.seed, "sf_seed": pair.seed,
                     **pair.result.as_dict()} for pair in pairs]
        records.append({**where, "comparison": "bootstrap", "method": f"bootstrap ({interval_level(bootstrap)})",
                        "metric": base.spec.main_metric, **_gain_fields(bootstrap)})
        return row, records, bootstrap

    def _table2_verdict(self, backbone: str, results: list[BootstrapResult], paper_row) -> PlainVerdict:
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
        if self.synthetic:
            word, text = SYNTHETIC, f"{text} ({MACHINERY})"
        return PlainVerdict(2, self.backbone_label(backbone), word, text)

    # ---- Table 3: cost

    def table3(self) -> Table:
        title = "Cost of span fine-tuning: measured fine-tuning time and extra parameters."
        if not self.params.has_study("glue"):
            return self._missing_study(3, title, "glue")
        seeds = self.params.seeds("glue")
        paper_table = self.paper.table(3)
        paper_extra = math.nan
        if paper_table is not None:
            paper_extra = next((row.value("extra_parameters_percent") for row in paper_table.rows
                                if not math.isnan(row.value("extra_parameters_percent"))), math.nan)
        rows, data, verdicts = [], [], []
        for backbone in self.params.backbones("glue"):
            extras, ratios = [], []
            for task in self.params.study_tasks("glue"):
                base = self.runs("glue", backbone, task, "baseline", seeds)
                span = self.runs("glue", backbone, task, "sf", seeds)
                base_s = summarize(_float(run, "train_seconds") for run in base).mean
                span_s = summarize(_float(run, "train_seconds") for run in span).mean
                ratio = span_s / base_s if base_s and not math.isnan(base_s) else math.nan
                devices = "; ".join(sorted({str(run.get("device", "?")) for run in base + span}))
                extra = summarize(_float(run, "extra_parameters_percent") for run in span).mean
                extras.append(extra)
                ratios.append(ratio)
                rows.append({"Backbone": self.backbone_label(backbone), "Task": task,
                             "baseline s": _fixed(base_s, 1), "+SF s": _fixed(span_s, 1),
                             "SF / baseline": _fixed(ratio, 2), "device": devices,
                             "extra params %": _fixed(extra, 2), "extra params % (paper, text)": _fixed(paper_extra, 2)})
                data.append({"backbone": backbone, "paper_backbone": self.params.paper_name(backbone), "task": task,
                             "baseline_seconds": base_s, "sf_seconds": span_s, "ratio": ratio, "device": devices,
                             "extra_parameters_percent": extra,
                             "paper_extra_parameters_percent": _number(paper_extra, 1.0)})
            extra, ratio = summarize(extras).mean, summarize(ratios).mean
            text = (f"SF adds {_fixed(extra, 2)}% parameters (the paper's text: {_fixed(paper_extra, 0)}% of a BERT) "
                    f"and takes {_fixed(ratio, 2)}x the baseline's fine-tuning time (mean over tasks; measured on "
                    f"this machine).")
            word = SYNTHETIC if self.synthetic else "cost, no verdict"
            text += f" ({MACHINERY})" if self.synthetic else ""
            verdicts.append(PlainVerdict(3, self.backbone_label(backbone), word, text))
        notes = [
            "Mean fine-tuning wall time over seeds (metrics.json train_seconds): measured, so it varies run to run.",
            "Extra parameters: the span module and its classifier input, as % of the backbone's parameters.",
        ]
        return Table(3, title, pd.DataFrame(rows), pd.DataFrame(data), notes, verdicts)

    # ---- dev/test tables (5, 7, 8)

    def dev_test_table(self, number: int, title: str, study: str, task: str, metric: str, methods: list[Method],
                       pairs: list[tuple[Method, Method]]) -> Table:
        spec = get_task(task)
        splits = {"dev": spec.eval_splits[0], "test": "test"}
        seeds = self.params.seeds(study)
        paper_table = self.paper.table(number)
        rows, data, verdicts = [], [], []
        for backbone in self.params.backbones(study):
            label = {"Backbone": self.backbone_label(backbone)}
            runs = {m.key: self.runs(m.study, backbone, task, m.variant, seeds) for m in methods}
            for method in methods:
                row = {**label, "Method": method.label}
                paper_row = self._paper_row(paper_table, backbone, method.key)
                for name, split in splits.items():
                    summary = summarize(split_score(run, split, metric) for run in runs[method.key])
                    paper = math.nan if paper_row is None else paper_row.value(name)
                    row |= {f"{name.capitalize()} {METRIC_NAMES[metric]}": mean_sd(summary),
                            f"{name.capitalize()} (paper)": paper_cell(paper),
                            f"{name.capitalize()}: ours − paper": _difference(100 * summary.mean, paper)}
                    data.append({"backbone": backbone, "paper_backbone": self.params.paper_name(backbone),
                                 "method": method.key, "variant": method.variant, "split": split, "metric": metric,
                                 "statistic": "ours", "n_seeds": summary.n, "mean_pct": _number(summary.mean),
                                 "sd_pct": _number(summary.sd), "paper_pct": _number(paper, 1.0),
                                 "paper_row": "" if paper_row is None else paper_row.label})
                rows.append(row)
            for first, second in pairs:
                comparison = f"{second.label.lstrip('+')} − {first.label}"
                row = {**label, "Method": comparison}
                for name, split in splits.items():
                    result = self._split_bootstrap(runs[first.key], runs[second.key], split, metric)
                    paper = self._paper_difference(paper_table, backbone, first, second, name, stand_in=False)[0]
                    row |= {f"{name.capitalize()} {METRIC_NAMES[metric]}": ci_cell(result),
                            f"{name.capitalize()} (paper)": _difference(paper, 0.0),
                            f"{name.capitalize()}: ours − paper": ""}
                    data.append({"backbone": backbone, "paper_backbone": self.params.paper_name(backbone),
                                 "method": f"{second.key}-{first.key}", "split": split, "metric": metric,
                                 "statistic": "gain", "paper_pct": _number(paper, 1.0), **_gain_fields(result)})
                rows.append(row)
                dev = self._split_bootstrap(runs[first.key], runs[second.key], splits["dev"], metric)
                paper, who = self._paper_difference(paper_table, backbone, first, second, "dev", stand_in=True)
                verdicts.append(Verdict(number, self.backbone_label(backbone), comparison,
                                        f"{spec.name} dev {METRIC_NAMES[metric]}", dev, len(seeds), paper,
                                        f"dev, {who}", synthetic=self.synthetic))
        notes = [f"{spec.name} {METRIC_NAMES[metric]} x 100 on the {splits['dev']} (dev) and test splits; "
                 f"mean ± sd over {len(seeds)} seeds (sample sd). The paper's columns are the same splits, so "
                 f"ours − paper is shown.",
                 "Test: metrics.json when it scores the split, else the test predictions scored when they carry "
                 "gold labels, else —.",
                 SIGNIFICANCE_NOTE.replace("dev examples", "the split's examples")]
        return Table(number, title, pd.DataFrame(rows), pd.DataFrame(data), notes, verdicts)

    def _split_bootstrap(self, runs_a: list[Run], runs_b: list[Run], split: str, metric: str):
        """The bootstrap on ``split``, or None when a run's predictions of it are missing or unlabeled."""
        for run in [*runs_a, *runs_b]:
            path = run.predictions(split)
            if not path.is_file() or _first_gold(path) == "":
                return None
        return self.comparisons.bootstrap(runs_a, runs_b, split, metric)

    def _paper_difference(self, paper_table: PaperTable | None, backbone: str, first: Method, second: Method,
                          column: str, stand_in: bool) -> tuple[float, str]:
        a = self._paper_row(paper_table, backbone, first.key, stand_in)
        b = self._paper_row(paper_table, backbone, second.key, stand_in)
        if a is None or b is None:
            return math.nan, "no published rows"
        return b.value(column) - a.value(column), self._stand_in_words(paper_table, backbone, a)

    def table5(self) -> Table:
        title = "SNLI accuracy, baseline and +SF."
        if not self.params.has_study("snli"):
            return self._missing_study(5, title, "snli")
        methods = [Method("baseline", "baseline", "snli", "baseline"), Method("+SF", "sf", "snli", "sf")]
        return self.dev_test_table(5, title, "snli", "snli", "accuracy", methods, [(methods[0], methods[1])])

    def table7(self) -> Table:
        title = "Span encoders on SNLI (within-span / across-span pooling)."
        if not self.params.has_study("snli"):
            return self._missing_study(7, title, "snli")
        listed = set(self.params.optional("studies.snli.encoders", []) or []) | {"cnn-cnn"}
        methods = [Method(label, key, "snli", "sf" if key == "cnn-cnn" else f"sf-{key}")
                   for key, label in ENCODERS if key in listed]
        default = next(m for m in methods if m.key == "cnn-cnn")
        pairs = [(other, default) for other in methods if other is not default]
        table = self.dev_test_table(7, title, "snli", "snli", "accuracy", methods, pairs)
        table.notes.insert(0, "CNN-CNN is the default span fine-tuning encoder (the snli study's sf runs).")
        return table

    def table8(self) -> Table:
        title = "CoNLL-2003 named entity recognition, entity-level F1, baseline and +SF."
        if not self.params.has_study("ner"):
            return self._missing_study(8, title, "ner")
        methods = [Method("baseline", "baseline", "ner", "baseline"), Method("+SF", "sf", "ner", "sf")]
        return self.dev_test_table(8, title, "ner", "conll2003", "f1", methods, [(methods[0], methods[1])])


AVERAGE_LABELS = {"avg": "Avg (ours)", "avg-paper-rule": "Avg (paper rule)"}


def _averages(columns: list[Column], runs: dict[str, list[Run]], n_seeds: int) -> dict[str, tuple[list[float], float]]:
    """Per average: its value per seed, and its value over the best runs (each task's best seed)."""
    groups = _average_groups(columns)
    result = {}
    for key, group in groups.items():
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


def _average_gains(columns: list[Column], results: dict[str, BootstrapResult]) -> dict[str, BootstrapResult | None]:
    return {key: mean_of([results[c.key] for c in group]) if group else None
            for key, group in _average_groups(columns).items()}


def _gain_fields(result: BootstrapResult | None) -> dict:
    if result is None:
        return {"gain_pct": None, "ci_low_pct": None, "ci_high_pct": None, "p_value": None, "p_at_floor": None,
                "resamples": None, "interval": None}
    return {"gain_pct": _number(result.gain), "ci_low_pct": _number(result.low), "ci_high_pct": _number(result.high),
            "p_value": _number(result.p_value, 1.0), "p_at_floor": result.p_at_floor, "resamples": result.resamples,
            "interval": interval_level(result)}


def _side(favours: str) -> str:
    return {"sf": "SF", "baseline": "baseline", "neither": "tie"}[favours]


def _first_gold(path: Path) -> str:
    with open(path, encoding="utf-8") as handle:
        handle.readline()
        fields = handle.readline().rstrip("\n").split("\t")
    return fields[1] if len(fields) > 1 else ""


def _difference(ours: float, paper: float) -> str:
    return DASH if math.isnan(ours) or math.isnan(paper) else f"{ours - paper:+.1f}"


def _mean_or_nan(values: list[float]) -> float:
    return math.nan if not values or any(math.isnan(v) for v in values) else sum(values) / len(values)


def _float(run: Run, key: str) -> float:
    value = run.get(key)
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpanftError(f"{run.path / 'metrics.json'}: {key} must be a number, found {value!r}")
    return float(value)


def _fixed(value: float, decimals: int) -> str:
    return DASH if value is None or math.isnan(value) else f"{value:.{decimals}f}"
