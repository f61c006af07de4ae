"""The paper's published numbers (``paper_values.yaml``): typed rows, their checks, the paper's averaging rule,
the paper's tables as printed, and footnotes on the paper's inconsistencies, derived from its own numbers.

The paper's GLUE average is the mean of nine columns: CoLA, SST-2, MNLI-m, MNLI-mm (counted separately), QNLI,
RTE, MRPC, QQP and STS-B; WNLI is left out. That rule reproduces the printed averages to within
:data:`AVERAGE_TOLERANCE` (every number is rounded to one decimal) except where a footnote says otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

import pandas as pd
import yaml

from spanft.english import signed
from spanft.errors import SpanftError

PAPER_AVERAGE_COLUMNS = ("cola", "sst2", "mnli-m", "mnli-mm", "qnli", "rte", "mrpc", "qqp", "stsb")
AVERAGE_TOLERANCE = 0.1
COLUMN_NAMES = {"cola": "CoLA", "sst2": "SST-2", "mnli-m": "MNLI-m", "mnli-mm": "MNLI-mm", "qnli": "QNLI",
                "rte": "RTE", "mrpc": "MRPC", "qqp": "QQP", "stsb": "STS-B", "wnli": "WNLI", "avg": "Avg",
                "gain": "Gain", "dev": "Dev", "test": "Test", "days": "days", "hours_max": "hours (max)",
                "gpus": "GPUs", "extra_parameters_percent": "extra parameters %"}
METRIC_NAMES = {"mcc": "MCC", "accuracy": "Acc", "f1": "F1", "pearson": "Pearson", "spearman": "Spearman"}
SPLITS = ("dev", "test", "none")
ORIGINS = ("paper", "literature")
ROW_KEYS = {"row", "origin", "backbone", "method", "values", "gain_over", "device"}
TABLE_KEYS = {"caption", "split", "columns", "rows"}
SCORE_METRICS = {"mcc", "accuracy", "f1", "pearson", "average"}
CONLL_TEST_IS_HARDER = "on CoNLL-2003 the test set is usually the harder one (lower F1 than dev)"


@dataclass(frozen=True)
class PaperRow:
    """One printed row of a paper table."""

    table: int
    label: str
    origin: str  # paper | literature
    backbone: str | None
    method: str | None
    values: dict[str, float | None]
    gain_over: str | None = None
    device: str | None = None

    def value(self, column: str) -> float:
        """The printed number, NaN where the paper prints none."""
        value = self.values.get(column)
        return math.nan if value is None else float(value)

    @property
    def name(self) -> str:
        return self.label if self.origin == "paper" else f"{self.label} (literature)"


@dataclass(frozen=True)
class PaperColumn:
    key: str
    metric: str
    split: str  # dev | test | none


@dataclass(frozen=True)
class PaperTable:
    number: int
    caption: str
    columns: dict[str, PaperColumn]
    rows: list[PaperRow]

    @property
    def splits(self) -> list[str]:
        return list(dict.fromkeys(column.split for column in self.columns.values()))

    @property
    def is_glue(self) -> bool:
        return any(key in PAPER_AVERAGE_COLUMNS for key in self.columns)

    def split_of(self, column: str) -> str:
        return self.columns[column].split

    def metric_of(self, column: str) -> str | None:
        return self.columns[column].metric if column in self.columns else None

    def own_rows(self) -> list[PaperRow]:
        return [row for row in self.rows if row.origin == "paper"]

    def row_named(self, label: str, origin: str) -> PaperRow:
        for row in self.rows:
            if row.label == label and row.origin == origin:
                return row
        raise SpanftError(f"paper table {self.number}: no {origin} row {label!r}")

    def find(self, backbone: str | None, method: str) -> PaperRow | None:
        """The paper's own row of ``method`` for ``backbone`` (rows with no stated backbone match any)."""
        for row in self.own_rows():
            if row.method == method and (row.backbone is None or same_backbone(row.backbone, backbone)):
                return row
        return None

    def backbones(self) -> list[str]:
        return list(dict.fromkeys(row.backbone for row in self.own_rows() if row.backbone))

    def stand_in(self, backbone: str | None) -> str | None:
        """The paper backbone whose rows sit beside ours: ours' own, else the table's first (or None = unstated)."""
        names = self.backbones()
        for name in names:
            if same_backbone(name, backbone):
                return name
        return names[0] if names else None


def same_backbone(a: str | None, b: str | None) -> bool:
    """Backbone names equal up to a hub owner (``google-bert/bert-base-uncased`` = ``bert-base-uncased``)."""
    if a is None or b is None:
        return False
    return a.rsplit("/", 1)[-1].lower() == b.rsplit("/", 1)[-1].lower()


def paper_rule_average(values: dict[str, float]) -> float:
    """The paper's GLUE average: the mean of its nine columns; NaN unless all nine are numbers."""
    numbers = [values.get(column, math.nan) for column in PAPER_AVERAGE_COLUMNS]
    numbers = [math.nan if v is None else float(v) for v in numbers]
    return math.nan if any(math.isnan(v) for v in numbers) else sum(numbers) / len(numbers)


def printed_columns_average(row: PaperRow) -> tuple[float, list[str]]:
    """Mean of the row's printed nine-column scores, and the nine-rule columns it leaves empty."""
    present = [row.value(c) for c in PAPER_AVERAGE_COLUMNS if not math.isnan(row.value(c))]
    missing = [c for c in PAPER_AVERAGE_COLUMNS if math.isnan(row.value(c))]
    return (sum(present) / len(present) if present else math.nan), missing


# ------------------------------------------------------------------------------------------- loading


class Paper:
    """Every table of ``paper_values.yaml``, checked on load."""

    def __init__(self, tables: dict[int, PaperTable], settings: dict[str, Any], where: str):
        self.tables = tables
        self.settings = settings
        self.where = where

    @classmethod
    def load(cls, path: str | Path | None = None) -> Paper:
        if path is None:
            text = resources.files("spanft.report").joinpath("paper_values.yaml").read_text(encoding="utf-8")
            where = "spanft/report/paper_values.yaml"
        else:
            if not Path(path).is_file():
                raise SpanftError(f"{path}: paper values file not found")
            text, where = Path(path).read_text(encoding="utf-8"), str(path)
        try:
            tree = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise SpanftError(f"{where}: not valid YAML: {str(exc).splitlines()[0]}") from None
        if not isinstance(tree, dict):
            raise SpanftError(f"{where}: expected a mapping of tables")
        tables = {}
        for key, node in tree.items():
            if key == "settings":
                continue
            if not (isinstance(key, str) and key.startswith("table") and key[5:].isdigit()):
                raise SpanftError(f"{where}: unknown key {key!r} (expected table<N> or settings)")
            tables[int(key[5:])] = _parse_table(int(key[5:]), node, f"{where}: {key}")
        settings = tree.get("settings") or {}
        return cls(dict(sorted(tables.items())), settings, where)

    def table(self, number: int) -> PaperTable | None:
        return self.tables.get(number)


def _parse_table(number: int, node: Any, where: str) -> PaperTable:
    if not isinstance(node, dict):
        raise SpanftError(f"{where}: expected a mapping")
    unknown = set(node) - TABLE_KEYS
    if unknown:
        raise SpanftError(f"{where}: unknown key {sorted(unknown)[0]!r}; valid keys: {', '.join(sorted(TABLE_KEYS))}")
    split = node.get("split")
    columns = {}
    for key, spec in (node.get("columns") or {}).items():
        metric, column_split = (spec.get("metric"), spec.get("split")) if isinstance(spec, dict) else (spec, split)
        if column_split not in SPLITS:
            raise SpanftError(f"{where}.columns.{key}: split must be one of {', '.join(SPLITS)}, "
                              f"found {column_split!r}")
        columns[str(key)] = PaperColumn(str(key), str(metric), column_split)
    rows = [_parse_row(number, row, columns, f"{where}.rows[{i}]") for i, row in enumerate(node.get("rows") or [])]
    return PaperTable(number, str(node.get("caption", "")), columns, rows)


def _parse_row(number: int, node: Any, columns: dict[str, PaperColumn], where: str) -> PaperRow:
    if not isinstance(node, dict):
        raise SpanftError(f"{where}: expected a mapping")
    unknown = set(node) - ROW_KEYS
    if unknown:
        raise SpanftError(f"{where}: unknown key {sorted(unknown)[0]!r}; valid keys: {', '.join(sorted(ROW_KEYS))}")
    if node.get("origin") not in ORIGINS:
        raise SpanftError(f"{where}.origin must be one of {', '.join(ORIGINS)}, found {node.get('origin')!r}")
    values = {}
    for key, value in (node.get("values") or {}).items():
        if key not in columns:
            raise SpanftError(f"{where}.values.{key}: not a column of the table ({', '.join(columns)})")
        values[key] = _checked_value(value, columns[key].metric, f"{where}.values.{key}")
    return PaperRow(number, str(node.get("row")), node["origin"], node.get("backbone"), node.get("method"), values,
                    node.get("gain_over"), node.get("device"))


def _checked_value(value: Any, metric: str, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise SpanftError(f"{where}: must be a number or null, found {value!r}")
    low, high = _value_range(metric)
    if not low <= value <= high:
        raise SpanftError(f"{where}: {value} is outside [{low}, {high}] for {metric}")
    return float(value)


def _value_range(metric: str) -> tuple[float, float]:
    if metric == "p-value":
        return (0.0, 1.0)
    if metric == "gain":
        return (-100.0, 100.0)
    if metric in SCORE_METRICS or metric.startswith("average"):
        return (0.0, 100.0)
    return (0.0, math.inf)  # counts: days, hours, GPUs, percent of parameters


# ------------------------------------------------------------------------------------------- as printed


def column_label(table: PaperTable, key: str) -> str:
    column = table.columns[key]
    name = COLUMN_NAMES.get(key, key)
    metric = METRIC_NAMES.get(column.metric)
    return f"{name} ({metric})" if metric and key not in ("dev", "test") else name


def printed_table(table: PaperTable) -> pd.DataFrame:
    """The paper's table as printed, one row per printed row, plus the averages and gains its columns give."""
    glue = "avg" in table.columns and any(c in table.columns for c in PAPER_AVERAGE_COLUMNS)
    rows = []
    for row in table.rows:
        cells = {"Row": row.label, "Origin": "literature" if row.origin == "literature" else "paper's own run"}
        if row.device:
            cells["Device"] = row.device
        for key in table.columns:
            cells[column_label(table, key)] = _cell(row.value(key), table.columns[key].metric)
        if glue:
            average, missing = printed_columns_average(row)
            cells["Avg of its columns"] = _cell(average, "average") + (f" ({9 - len(missing)} cols)" if missing else "")
            if "gain" in table.columns:
                cells["Gain of its columns"] = _cell(_recomputed_gain(table, row), "gain")
        rows.append(cells)
    return pd.DataFrame(rows).fillna("")


def _recomputed_gain(table: PaperTable, row: PaperRow) -> float:
    if not row.gain_over:
        return math.nan
    base = table.row_named(row.gain_over, row.origin)
    return printed_columns_average(row)[0] - printed_columns_average(base)[0]


def _cell(value: float, metric: str) -> str:
    if math.isnan(value):
        return "—"
    if metric == "p-value":
        return f"{value:g}"
    if metric == "gain":
        return signed(value)
    return f"{value:.1f}" if metric in SCORE_METRICS or metric.startswith("average") else f"{value:g}"


def tidy_values(paper: Paper) -> pd.DataFrame:
    """Every transcribed number, one row each: table, row, origin, backbone, method, column, metric, split, value."""
    records = []
    for table in paper.tables.values():
        for row in table.rows:
            for key, value in row.values.items():
                column = table.columns[key]
                records.append({"table": table.number, "row": row.label, "origin": row.origin,
                                "backbone": row.backbone or "", "method": row.method or "", "column": key,
                                "metric": column.metric, "split": column.split, "value": value})
    return pd.DataFrame(records)


def split_words(split: str, glue: bool) -> str:
    """How a report names the split of a paper number (GLUE's test labels are private: no like-for-like)."""
    if split == "test" and glue:
        return "GLUE test (leaderboard) — not comparable with our dev scores"
    return {"none": "cost, not scores"}.get(split, split)


# ------------------------------------------------------------------------------------------- footnotes


def footnotes(paper: Paper, number: int) -> list[str]:
    """The paper's inconsistencies that touch table ``number``, each computed from its printed numbers."""
    table = paper.table(number)
    if table is None:
        return []
    notes = []
    if "avg" in table.columns and any(c in table.columns for c in PAPER_AVERAGE_COLUMNS):
        notes += _average_notes(table)
    if number == 1:
        notes += _span_settings_note(paper.settings)
    if number == 2:
        notes.append("The paper does not name the split of its McNemar tests; pairing per example needs gold "
                     "labels, which GLUE publishes for dev only.")
    if number == 4 and paper.table(1) is not None:
        notes += _metric_change_notes(paper.table(1), table)
    if number == 7 and paper.table(5) is not None:
        notes += _encoder_backbone_notes(paper.table(5), table)
    if number == 8:
        notes += _dev_test_order_notes(table)
    return notes


def _average_notes(table: PaperTable) -> list[str]:
    notes = []
    for row in table.rows:
        printed = row.value("avg")
        if math.isnan(printed):
            continue
        average, missing = printed_columns_average(row)
        if missing:
            names = ", ".join(COLUMN_NAMES[c] for c in missing)
            notes.append(f"{row.name}: no {names} score is printed, yet an average ({printed:.1f}) is; its "
                         f"{9 - len(missing)} printed columns average {average:.1f}.")
        elif abs(average - printed) > AVERAGE_TOLERANCE + 1e-9:
            note = f"{row.name}: printed Avg {printed:.1f}, but its nine columns average {average:.2f}"
            gain = _recomputed_gain(table, row)
            if not math.isnan(gain) and not math.isnan(row.value("gain")):
                note += f", so its gain over {row.gain_over} is {gain:.1f}, not the printed {row.value('gain'):.1f}"
            notes.append(note + ".")
    return notes


def _span_settings_note(settings: dict) -> list[str]:
    spans, tokens = settings.get("spans_per_input_r"), settings.get("tokens_per_span_l")
    if spans is None or tokens is None:
        return []
    tokens_text = " or ".join(str(t) for t in tokens) if isinstance(tokens, list) else str(tokens)
    return [f"Section 4.1 sets r = {spans} spans per input of l = {tokens_text} tokens each; the authors' code "
            f"does the opposite ({spans} tokens per span, about max_seq_len / 2 spans per input), and so do our "
            f"runs (max_span_len, max_spans)."]


def _metric_change_notes(table1: PaperTable, table4: PaperTable) -> list[str]:
    changed = [key for key in table4.columns
               if key in table1.columns and table1.metric_of(key) != table4.metric_of(key)]
    notes = []
    for key in changed:
        note = (f"Table 4's {COLUMN_NAMES.get(key, key)} column is {_metric_words(table4.metric_of(key))}; "
                f"Table 1's is {_metric_words(table1.metric_of(key))}.")
        for row in table4.rows:
            twin = _twin_row(table1.rows, row, changed)
            if twin is not None:
                note += (f" Table 4's {row.label} row equals Table 1's {twin.name} row in every other column "
                         f"({row.value(key):.1f} here, {twin.value(key):.1f} there).")
        notes.append(note)
    return notes


def _metric_words(metric: str | None) -> str:
    return {"f1": "F1", "mcc": "MCC", "pearson": "Pearson correlation"}.get(metric or "", metric or "")


def _twin_row(rows: Iterable[PaperRow], row: PaperRow, skip: list[str]) -> PaperRow | None:
    keys = [k for k in PAPER_AVERAGE_COLUMNS if k not in skip]
    for other in rows:
        if all(other.value(k) == row.value(k) for k in keys) and not any(math.isnan(row.value(k)) for k in keys):
            return other
    return None


def _encoder_backbone_notes(table5: PaperTable, table7: PaperTable) -> list[str]:
    if table7.backbones():
        return []
    note = "The paper does not name Table 7's backbone (its caption repeats Table 5's)."
    cnn = table7.find(None, "cnn-cnn")
    sf = next((row for row in table5.own_rows() if row.method == "sf"), None)
    if cnn is not None and sf is not None and cnn.value("dev") != sf.value("dev"):
        note += (f" Its CNN-CNN row, span fine-tuning's own encoder, scores {cnn.value('dev'):.1f} dev while Table 5's "
                 f"{sf.label} scores {sf.value('dev'):.1f}, so Table 7 likely ran on another backbone.")
    return [note]


def _dev_test_order_notes(table: PaperTable) -> list[str]:
    rows = [row for row in table.rows if not math.isnan(row.value("dev")) and not math.isnan(row.value("test"))]
    if not rows or not all(row.value("test") > row.value("dev") for row in rows):
        return []
    margin = sum(row.value("test") - row.value("dev") for row in rows) / len(rows)
    first = rows[0]
    return [f"Every row scores test above dev, by {margin:.1f} points on average ({first.label}: "
            f"{first.value('dev'):.1f} dev, {first.value('test'):.1f} test); {CONLL_TEST_IS_HARDER}, so the "
            f"paper's dev and test rows may be swapped."]
