"""Tables 1-8 of the paper from the fine-tuning runs: a display table (Markdown, LaTeX) and a tidy CSV each.

Scores are shown in percent (metric x 100), one decimal, as the paper prints them; "mean ± sd" is the mean
and the sample standard deviation (ddof = 1) over seeds (the sd is left out with a single seed). The CSVs
hold the same numbers unrounded (6 decimals) with one row per cell.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from spanft.data.registry import get_task
from spanft.errors import SpanftError
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

DASH = "—"
NOT_TRANSCRIBED = "—: paper value not transcribed (see src/spanft/report/paper_values.yaml)."
METRIC_NAMES = {"mcc": "MCC", "accuracy": "Acc", "f1": "F1", "pearson": "Pearson", "spearman": "Spearman"}
ENCODERS = [("cnn-max", "CNN-Max"), ("cnn-cnn", "CNN-CNN"), ("attention-max", "Attention-Max"),
            ("attention-attention", "Attention-Attention")]
INTEGER_COLUMNS = {"n_seeds", "best_seed", "baseline_seed", "sf_seed", "n", "both_correct", "only_a_correct",
                   "only_b_correct", "both_wrong"}
PROFILE_LINES = {
    "embedded": "Profile: embedded — synthetic data, tiny local backbones, CPU — not paper numbers.",
    "paper": "Profile: paper — the paper's tasks and backbones.",
    "small": "Profile: small — real task data, a small local encoder, a laptop's budget — not the paper's backbones.",
}


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


def _number(value: float, scale: float = 100.0) -> float | None:
    return None if value is None or math.isnan(value) else scale * value


# ------------------------------------------------------------------------------------------- paper values


class PaperValues:
    """The published numbers of ``paper_values.yaml``: ``get(table, backbone, key, ...)`` or NaN."""

    def __init__(self, path: str | Path | None = None):
        import yaml

        if path is None:
            text = resources.files("spanft.report").joinpath("paper_values.yaml").read_text(encoding="utf-8")
            where = "spanft/report/paper_values.yaml"
        else:
            if not Path(path).is_file():
                raise SpanftError(f"{path}: paper values file not found")
            text, where = Path(path).read_text(encoding="utf-8"), str(path)
        try:
            self.tree = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise SpanftError(f"{where}: not valid YAML: {str(exc).splitlines()[0]}") from None
        self.where = where

    def get(self, table: str, backbone: str, *keys: str) -> float:
        node: Any = self.tree.get(table, {})
        for key in (_backbone_key(node, backbone), *keys):
            if not isinstance(node, dict) or key not in node:
                return math.nan
            node = node[key]
        if node is None:
            return math.nan
        if isinstance(node, bool) or not isinstance(node, (int, float)):
            raise SpanftError(f"{self.where}: {table}.{backbone}.{'.'.join(keys)} must be a number or null")
        return float(node)


def _backbone_key(node: Any, backbone: str) -> str:
    """The paper backbone's key: its name, or the part after a hub owner (SpanBERT/spanbert-large-cased)."""
    if isinstance(node, dict) and backbone not in node and "/" in backbone:
        return backbone.rsplit("/", 1)[1]
    return backbone


# ------------------------------------------------------------------------------------------- tables


@dataclass
class Table:
    number: int
    title: str
    display: pd.DataFrame  # formatted strings
    data: pd.DataFrame  # tidy numbers
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if _paper_value_missing(self.display):
            self.notes.append(NOT_TRANSCRIBED)

    def markdown(self, profile: str) -> str:
        notes = "".join(f"- {note}\n" for note in self.notes)
        # disable_numparse: cells are formatted strings already ("14.0" must not become "14")
        body = self.display.to_markdown(index=False, disable_numparse=True) if len(self.display) else "(no rows)"
        return f"{profile_line(profile)}\n\n**Table {self.number}.** {self.title}\n\n{body}\n\n{notes}"

    def latex(self, profile: str) -> str:
        header = f"% {profile_line(profile)}\n% Table {self.number}. {self.title}\n"
        header += "".join(f"% {note}\n" for note in self.notes)
        if not len(self.display):
            return header
        tabular = self.display.to_latex(index=False, escape=True)
        return header + tabular.replace("±", r"$\pm$").replace(DASH, "--")

    def csv(self, profile: str) -> str:
        frame = self.data.copy()
        for column in INTEGER_COLUMNS.intersection(frame.columns):
            frame[column] = frame[column].astype("Int64")
        frame.insert(0, "profile", profile)
        buffer = io.StringIO()
        frame.to_csv(buffer, index=False, float_format="%.6f", lineterminator="\n")
        return buffer.getvalue()


@dataclass(frozen=True)
class Column:
    """One score column of a GLUE-style table."""

    label: str  # CoLA (MCC)
    key: str  # paper_values key: cola, mnli-m, ...
    task: str
    split: str
    metric: str


def glue_columns(tasks: list[str]) -> list[Column]:
    columns = []
    for name in tasks:
        task = get_task(name)
        metric_name = METRIC_NAMES.get(task.main_metric, task.main_metric)
        if name == "mnli":
            for split, suffix in zip(task.eval_splits, ["m", "mm"]):
                columns.append(Column(f"MNLI-{suffix} ({metric_name})", f"mnli-{suffix}", name, split, task.main_metric))
            continue
        stem = task.splits[task.test_splits[0]].submission_stem if task.test_splits else name.upper()
        columns.append(Column(f"{stem} ({metric_name})", name, name, task.selection_split, task.main_metric))
    return columns


@dataclass(frozen=True)
class Method:
    """A table row group: a label and where its runs live (study, variant)."""

    label: str
    key: str  # paper_values key
    study: str
    variant: str


class TableBuilder:
    """Builds every table from the params and the run directories."""

    def __init__(self, params: Params, runs_dir: Path, segmented_dir: Path, paper: PaperValues):
        self.params = params
        self.runs_dir = Path(runs_dir)
        self.segmented_dir = Path(segmented_dir)
        self.paper = paper
        self._cache: dict[tuple, list[Run]] = {}

    def runs(self, study: str, backbone: str, task: str, variant: str, seeds: list[int]) -> list[Run]:
        key = (study, backbone, task, variant, tuple(seeds))
        if key not in self._cache:
            self._cache[key] = load_runs(self.runs_dir, study, backbone, task, variant, seeds)
        return self._cache[key]

    def backbone_label(self, backbone: str) -> str:
        paper = self.params.paper_name(backbone)
        return backbone if paper == backbone else f"{backbone} (for {paper})"

    def all_tables(self) -> list[Table]:
        builders: list[Callable[[], Table]] = [self.table1, self.table2, self.table3, self.table4, self.table5,
                                               self.table6, self.table7, self.table8]
        return [build() for build in builders]

    def _missing_study(self, number: int, title: str, study: str) -> Table:
        empty = pd.DataFrame()
        return Table(number, title, empty, empty, [f"Study `{study}` is not in params.studies: no runs."])

    # ---- GLUE-style tables (1, 4, 6)

    def glue_table(self, number: int, title: str, study: str, paper_table: str, methods: list[Method],
                   include_best: bool) -> Table:
        """Rows per backbone and method, a column per task score and Avg; tasks, seeds and backbones of ``study``."""
        tasks = self.params.study_tasks(study)
        seeds = self.params.seeds(study)
        columns = glue_columns(tasks)
        rows, data = [], []
        for backbone in self.params.backbones(study):
            paper_backbone = self.params.paper_name(backbone)
            for method in methods:
                runs = {task: self.runs(method.study, backbone, task, method.variant, seeds) for task in tasks}
                row_mean, row_best = self._glue_rows(columns, runs, seeds, data, backbone, method)
                paper_row = {c.label: paper_cell(self.paper.get(paper_table, paper_backbone, method.key, c.key))
                             for c in columns}
                paper_row["Avg"] = paper_cell(self.paper.get(paper_table, paper_backbone, method.key, "avg"))
                self._add_paper_data(data, backbone, method, columns, paper_table, paper_backbone)
                label = {"Backbone": self.backbone_label(backbone), "Method": method.label}
                rows.append({**label, "Statistic": f"mean ± sd ({len(seeds)} seed{'' if len(seeds) == 1 else 's'})", **row_mean})
                if include_best:
                    rows.append({**label, "Statistic": "best run (seed)", **row_best})
                rows.append({**label, "Statistic": "paper", **paper_row})
        notes = [
            "Scores are dev-set metrics x 100; mean ± sd over seeds (sample sd, ddof = 1).",
            "Avg: mean over the table's tasks of each task's main dev metric (MNLI: matched), per seed.",
        ]
        if include_best:
            notes.append("Best run: the seed with the highest dev main metric (MNLI: matched); its scores.")
        notes += self.training_caps(tasks)
        return Table(number, title, pd.DataFrame(rows), pd.DataFrame(data), notes)

    def training_caps(self, tasks: list[str]) -> list[str]:
        """A note per task and cut split set (params ``hparams.<task>.max_train_examples`` / ``max_eval_examples``)."""
        notes = []
        for task in tasks:
            for key, what in (("max_train_examples", "training set"), ("max_eval_examples", "dev and test sets")):
                cap = self.params.optional(f"hparams.{task}.{key}")
                if cap:
                    notes.append(f"{task}: {what} capped at the first {int(cap):,} examples (hparams.{task}.{key}).")
        return notes

    def _glue_rows(self, columns: list[Column], runs: dict[str, list[Run]], seeds: list[int], data: list[dict],
                   backbone: str, method: Method) -> tuple[dict, dict]:
        mean_row, best_row = {}, {}
        for column in columns:
            column_runs = runs[column.task]
            summary = summarize(run.metric(column.split, column.metric) for run in column_runs)
            best = best_run(column_runs)
            best_value = best.metric(column.split, column.metric)
            mean_row[column.label] = mean_sd(summary)
            best_row[column.label] = f"{pct(best_value)} (s{best.seed})"
            data.append(self._datum(backbone, method, column.key, column.split, column.metric, summary,
                                    best_value, best.seed))
        per_seed = [_mean_or_nan([runs[t][i].dev_main() for t in runs]) for i in range(len(seeds))]
        average = summarize(per_seed)
        best_average = _mean_or_nan([best_run(task_runs).dev_main() for task_runs in runs.values()])
        mean_row["Avg"] = mean_sd(average)
        best_row["Avg"] = pct(best_average)
        data.append(self._datum(backbone, method, "avg", "dev", "main", average, best_average, None))
        return mean_row, best_row

    def _datum(self, backbone: str, method: Method, column: str, split: str, metric: str, summary: Summary,
               best: float, best_seed: int | None) -> dict:
        return {"backbone": backbone, "paper_backbone": self.params.paper_name(backbone), "method": method.key,
                "study": method.study, "variant": method.variant, "column": column, "split": split,
                "metric": metric, "statistic": "ours", "n_seeds": summary.n, "mean_pct": _number(summary.mean),
                "sd_pct": _number(summary.sd), "best_pct": _number(best),
                "best_seed": best_seed}

    def _add_paper_data(self, data: list[dict], backbone: str, method: Method, columns: list[Column],
                        paper_table: str, paper_backbone: str) -> None:
        for key in [c.key for c in columns] + ["avg"]:
            value = self.paper.get(paper_table, paper_backbone, method.key, key)
            data.append({"backbone": backbone, "paper_backbone": paper_backbone, "method": method.key,
                         "study": "paper", "variant": method.variant, "column": key, "split": "dev",
                         "metric": "", "statistic": "paper", "n_seeds": None, "mean_pct": _number(value, 1.0),
                         "sd_pct": None, "best_pct": None, "best_seed": None})

    def table1(self) -> Table:
        title = "GLUE dev results, baseline and span fine-tuning (+SF), per backbone."
        if not self.params.has_study("glue"):
            return self._missing_study(1, title, "glue")
        methods = [Method("baseline", "baseline", "glue", "baseline"), Method("+SF", "sf", "glue", "sf")]
        return self.glue_table(1, title, "glue", "table1", methods, include_best=True)

    def table4(self) -> Table:
        title = "Other backbones (paper: SpanBERT-large, RoBERTa-large), baseline and +SF, GLUE dev."
        if not self.params.has_study("backbones"):
            return self._missing_study(4, title, "backbones")
        methods = [Method("baseline", "baseline", "backbones", "baseline"), Method("+SF", "sf", "backbones", "sf")]
        return self.glue_table(4, title, "backbones", "table4", methods, include_best=False)

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
        table = self.glue_table(6, title, "ablation", "table6", methods, include_best=False)
        table.notes.insert(0, "Baseline and +SF rows are the glue study's runs of the same backbone, task and seed.")
        table.notes.insert(1, self.chunker_note())
        return table

    def chunker_note(self) -> str:
        """Which tagger produced the chunker row: params ``chunker.source`` (else ``chunker.tagger``: '' = NLTK's
        pretrained tagger; the contract's ``chunker.trained`` is read too), and what the segmented data recorded
        (the tagger file's training data and held-out POS accuracy)."""
        tagger_file = self.params.optional("chunker.tagger")
        source = self.params.optional("chunker.source")
        if source is None:
            trained = bool(tagger_file) if tagger_file is not None else bool(self.params.optional("chunker.trained", True))
            source = "synthetic" if trained else "nltk"
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

    # ---- Table 2: McNemar

    def table2(self) -> Table:
        title = "McNemar's test, baseline vs +SF, on the dev sets (best run of each, paired per example)."
        if not self.params.has_study("glue"):
            return self._missing_study(2, title, "glue")
        wanted = self.params.optional("reports.mcnemar_tasks", []) or []
        tasks = [task for task in self.params.study_tasks("glue") if task in wanted]
        seeds = self.params.seeds("glue")
        rows, data = [], []
        for backbone in self.params.backbones("glue"):
            for task in tasks:
                base = best_run(self.runs("glue", backbone, task, "baseline", seeds))
                span = best_run(self.runs("glue", backbone, task, "sf", seeds))
                split = base.spec.selection_split
                result = mcnemar_files(base.predictions(split), span.predictions(split))
                paper = self.paper.get("table2", self.params.paper_name(backbone), task)
                rows.append({
                    "Backbone": self.backbone_label(backbone), "Task": task, "Split": split,
                    "Seeds (baseline vs SF)": f"{base.seed} vs {span.seed}", "n": result.n,
                    "both correct": result.both_correct, "only baseline": result.only_a_correct,
                    "only SF": result.only_b_correct, "both wrong": result.both_wrong, "test": result.method,
                    "statistic": f"{result.statistic:.3f}", "p": p_value_cell(result.p_value),
                    "p (paper)": p_value_cell(paper),
                })
                data.append({"backbone": backbone, "paper_backbone": self.params.paper_name(backbone),
                             "task": task, "split": split, "baseline_seed": base.seed, "sf_seed": span.seed,
                             **result.as_dict(), "paper_p_value": None if math.isnan(paper) else paper})
        skipped = [task for task in wanted if task not in tasks]
        notes = [] if not skipped else [f"reports.mcnemar_tasks not in the glue study: {', '.join(skipped)}."]
        notes += [
            "Pairs each task's best baseline run with its best +SF run (best = highest dev main metric; seeds shown).",
            "Exact binomial test when the discordant pairs (only baseline + only SF) are fewer than 25, "
            "else chi-square with continuity correction (statsmodels mcnemar).",
        ]
        return Table(2, title, pd.DataFrame(rows), pd.DataFrame(data), notes)

    # ---- Table 3: cost

    def table3(self) -> Table:
        title = "Cost of span fine-tuning: measured fine-tuning time and extra parameters."
        if not self.params.has_study("glue"):
            return self._missing_study(3, title, "glue")
        seeds = self.params.seeds("glue")
        rows, data = [], []
        for backbone in self.params.backbones("glue"):
            paper = self.paper.get("table3", self.params.paper_name(backbone), "extra_parameters_percent")
            for task in self.params.study_tasks("glue"):
                base = self.runs("glue", backbone, task, "baseline", seeds)
                span = self.runs("glue", backbone, task, "sf", seeds)
                base_s = summarize(_float(run, "train_seconds") for run in base).mean
                span_s = summarize(_float(run, "train_seconds") for run in span).mean
                ratio = span_s / base_s if base_s and not math.isnan(base_s) else math.nan
                devices = "; ".join(sorted({str(run.get("device", "?")) for run in base + span}))
                extra = summarize(_float(run, "extra_parameters_percent") for run in span).mean
                rows.append({"Backbone": self.backbone_label(backbone), "Task": task,
                             "baseline s": _fixed(base_s, 1), "+SF s": _fixed(span_s, 1),
                             "SF / baseline": _fixed(ratio, 2), "device": devices,
                             "extra params %": _fixed(extra, 2), "extra params % (paper)": _fixed(paper, 2)})
                data.append({"backbone": backbone, "paper_backbone": self.params.paper_name(backbone), "task": task,
                             "baseline_seconds": base_s, "sf_seconds": span_s, "ratio": ratio, "device": devices,
                             "extra_parameters_percent": extra,
                             "paper_extra_parameters_percent": None if math.isnan(paper) else paper})
        notes = [
            "Mean fine-tuning wall time over seeds (metrics.json train_seconds): measured, so it varies run to run.",
            "Extra parameters: the span module and its classifier input, as % of the backbone's parameters.",
        ]
        return Table(3, title, pd.DataFrame(rows), pd.DataFrame(data), notes)

    # ---- dev/test tables (5, 7, 8)

    def dev_test_table(self, number: int, title: str, study: str, task: str, metric: str, paper_table: str,
                       methods: list[Method]) -> Table:
        spec = get_task(task)
        dev_split, test_split = spec.eval_splits[0], "test"
        seeds = self.params.seeds(study)
        rows, data = [], []
        for backbone in self.params.backbones(study):
            paper_backbone = self.params.paper_name(backbone)
            for method in methods:
                runs = self.runs(method.study, backbone, task, method.variant, seeds)
                row = {"Backbone": self.backbone_label(backbone), "Method": method.label}
                for name, split in (("dev", dev_split), ("test", test_split)):
                    summary = summarize(split_score(run, split, metric) for run in runs)
                    paper = self.paper.get(paper_table, paper_backbone, method.key, name)
                    row[f"{name.capitalize()} {METRIC_NAMES[metric]}"] = mean_sd(summary)
                    row[f"{name.capitalize()} (paper)"] = paper_cell(paper)
                    data.append({"backbone": backbone, "paper_backbone": paper_backbone, "method": method.key,
                                 "variant": method.variant, "split": split, "metric": metric,
                                 "n_seeds": summary.n, "mean_pct": _number(summary.mean),
                                 "sd_pct": _number(summary.sd), "paper_pct": _number(paper, 1.0)})
                rows.append(row)
        notes = [f"{spec.name} {METRIC_NAMES[metric]} x 100 on the {dev_split} (dev) and {test_split} splits; "
                 f"mean ± sd over {len(seeds)} seeds (sample sd).",
                 "Test: metrics.json when it scores the split, else the test predictions scored when they carry "
                 "gold labels, else —."]
        return Table(number, title, pd.DataFrame(rows), pd.DataFrame(data), notes)

    def table5(self) -> Table:
        title = "SNLI accuracy, baseline and +SF."
        if not self.params.has_study("snli"):
            return self._missing_study(5, title, "snli")
        methods = [Method("baseline", "baseline", "snli", "baseline"), Method("+SF", "sf", "snli", "sf")]
        return self.dev_test_table(5, title, "snli", "snli", "accuracy", "table5", methods)

    def table7(self) -> Table:
        title = "Span encoders on SNLI (within-span / across-span pooling)."
        if not self.params.has_study("snli"):
            return self._missing_study(7, title, "snli")
        listed = set(self.params.optional("studies.snli.encoders", []) or []) | {"cnn-cnn"}
        methods = [Method(label, key, "snli", "sf" if key == "cnn-cnn" else f"sf-{key}")
                   for key, label in ENCODERS if key in listed]
        table = self.dev_test_table(7, title, "snli", "snli", "accuracy", "table7", methods)
        table.notes.insert(0, "CNN-CNN is the default span fine-tuning encoder (the snli study's sf runs).")
        return table

    def table8(self) -> Table:
        title = "CoNLL-2003 named entity recognition, entity-level F1, baseline and +SF."
        if not self.params.has_study("ner"):
            return self._missing_study(8, title, "ner")
        methods = [Method("baseline", "baseline", "ner", "baseline"), Method("+SF", "sf", "ner", "sf")]
        return self.dev_test_table(8, title, "ner", "conll2003", "f1", "table8", methods)


def _paper_value_missing(display: pd.DataFrame) -> bool:
    """Whether a paper cell (a "paper" column or a "paper" row) shows no value."""
    if display.empty:
        return False
    paper_rows = display["Statistic"] == "paper" if "Statistic" in display.columns else False
    for column in display.columns:
        cells = display[column]
        if "paper" in column and (cells == DASH).any():
            return True
        if isinstance(paper_rows, pd.Series) and (cells[paper_rows] == DASH).any():
            return True
    return False


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
