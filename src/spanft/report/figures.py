"""Figures 2-4 of the paper and the CSVs behind them (DVC plots).

- Figure 2 (Markdown): a few dev sentences shown as bracketed word spans, for n-gram (main dictionary),
  random and chunker segmentation where those segmented directories exist.
- Figure 3: mean spans per sentence vs dictionary size (0 = no segmentation = mean words), from the
  dictionary sweep's ``segmentation.json`` (n-gram method), on the training split.
- Figure 4: dev main metric vs dictionary size, n-gram vs random segmentation, one panel per task.

Rendering is deterministic: the Agg canvas, matplotlib's default style, no timestamps in PNG or PDF metadata.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import matplotlib as mpl
import pandas as pd
from matplotlib.backends.backend_agg import (
    FigureCanvasAgg,  # a Figure drawn on its own canvas: no pyplot, no GUI
)
from matplotlib.figure import Figure

from spanft.data.columns import read_table
from spanft.data.registry import get_task
from spanft.errors import SpanftError
from spanft.params.plan import CHANGED, Plan, sweep_variant
from spanft.report.cells import profile_line
from spanft.report.paper import METRIC_NAMES
from spanft.report.runs import load_runs, summarize

SPANS_SPLIT = "train"  # Figure 3's statistics: the largest split
SEGMENTATIONS = [("ngram", "n-gram (main dictionary)"), ("random", "random"), ("chunker", "chunker")]
PNG_METADATA = {"Software": None}
PDF_METADATA = {"CreationDate": None, "ModDate": None}


# ------------------------------------------------------------------------------------------- Figure 2


def bracketed(words, spans) -> str:
    """``[w1 w2] [w3]`` from words and span lengths; the spans must cover the words exactly."""
    words, spans = list(words), [int(n) for n in spans]
    if sum(spans) != len(words) or any(n < 1 for n in spans):
        raise SpanftError(f"span lengths {spans} do not cover {len(words)} words")
    parts, start = [], 0
    for length in spans:
        parts.append("[" + " ".join(str(w) for w in words[start:start + length]) + "]")
        start += length
    return " ".join(parts)


def _read_split(directory: Path, split: str) -> pd.DataFrame:
    path = directory / f"{split}.parquet"
    if not path.is_file():
        raise SpanftError(f"{path}: segmented split not found")
    return read_table(path).to_pandas()


def _segmenter_label(directory: Path, label: str) -> str:
    path = directory / "segmentation.json"
    if not path.is_file():
        return label
    try:
        segmenter = json.loads(path.read_text(encoding="utf-8")).get("segmenter", {})
    except json.JSONDecodeError as exc:
        raise SpanftError(f"{path}: not valid JSON ({exc})") from None
    if segmenter.get("method") == "ngram" and "dictionary_entries" in segmenter:
        return f"{label}, {segmenter['dictionary_entries']} entries"
    if segmenter.get("method") == "chunker" and segmenter.get("tagger"):
        return f"{label}, tagger {segmenter['tagger']}"
    return label


def figure2_markdown(plan: Plan, segmented_dir: Path) -> str:
    tasks = plan.reports.figure2_tasks
    examples = plan.reports.figure2_examples
    lines = [profile_line(plan.profile_label), "", "# Figure 2: segmentation examples", "",
             "Dev sentences (the first by idx) with their word spans in brackets, per segmentation method.", ""]
    for name in tasks:
        task = get_task(name)
        split = task.selection_split
        methods = [(method, label, segmented_dir / method / name) for method, label in SEGMENTATIONS]
        present = [(m, label, d) for m, label, d in methods if m == "ngram" or d.is_dir()]
        frames = {m: _read_split(d, split).set_index("idx").sort_index() for m, _, d in present}
        labels = {m: _segmenter_label(d, label) for m, label, d in present}
        lines += [f"## {name} ({split})", ""]
        for idx in frames["ngram"].index[:examples]:
            lines += [f"### idx {int(idx)}", ""]
            for side in ("a", "b"):
                if f"words_{side}" not in frames["ngram"].columns:
                    continue
                prefix = f"sentence {1 if side == 'a' else 2}, " if "words_b" in frames["ngram"].columns else ""
                for method, frame in frames.items():
                    if idx not in frame.index:
                        continue
                    row = frame.loc[idx]
                    lines.append(f"- {prefix}{labels[method]}: `{bracketed(row[f'words_{side}'], row[f'spans_{side}'])}`")
            lines.append("")
    absent = sorted({label for m, label in SEGMENTATIONS for name in tasks
                     if m != "ngram" and not (segmented_dir / m / name).is_dir()})
    if absent:
        lines += [f"Not present for every task (no segmented directory): {', '.join(absent)}.", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- Figure 3


def spans_per_sentence(plan: Plan, segmented_dir: Path) -> pd.DataFrame:
    """(task, dict_size, mean_spans) for the dictsize study's tasks; dict_size 0 = mean words."""
    sizes = plan.dict_sizes
    rows = []
    for task in plan.studies["dictsize"].tasks:
        words = math.nan
        for size in sizes:
            stats = _split_stats(segmented_dir / "sweep" / task / sweep_variant("ngram", size) / "segmentation.json")
            words = _sides_mean(stats, "mean_words")
            rows.append({"task": task, "dict_size": size, "mean_spans": _sides_mean(stats, "mean_spans")})
        rows.append({"task": task, "dict_size": 0, "mean_spans": words})
    frame = pd.DataFrame(rows, columns=["task", "dict_size", "mean_spans"])  # no rows: a study with no tasks
    return frame.sort_values(["task", "dict_size"], kind="stable").reset_index(drop=True)


def _split_stats(path: Path) -> dict:
    if not path.is_file():
        raise SpanftError(f"{path}: segmentation statistics not found (dictionary sweep)")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SpanftError(f"{path}: not valid JSON ({exc})") from None
    stats = info.get("splits", {}).get(SPANS_SPLIT)
    if not isinstance(stats, dict) or "mean_spans_a" not in stats:
        raise SpanftError(f"{path}: no splits.{SPANS_SPLIT}.mean_spans_a")
    return stats


def _sides_mean(stats: dict, prefix: str) -> float:
    """Mean over the sentences of both sides (pairs: every example has one sentence a and one b)."""
    values = [float(stats[f"{prefix}_{side}"]) for side in ("a", "b") if f"{prefix}_{side}" in stats]
    return sum(values) / len(values)


# ------------------------------------------------------------------------------------------- Figure 4


def dictsize_scores(plan: Plan, runs_dir: Path) -> pd.DataFrame:
    """(backbone, task, metric, method, dict_size, score): dev main metric (named) x 100, mean over seeds."""
    columns = ["backbone", "task", "metric", "method", "dict_size", "score"]
    sizes = plan.dict_sizes
    seeds = plan.studies["dictsize"].seeds
    methods = plan.studies["dictsize"].methods
    rows = []
    for backbone in plan.studies["dictsize"].backbones:
        for task in plan.studies["dictsize"].tasks:
            for method in methods:
                for size in sizes:
                    runs = load_runs(runs_dir, "dictsize", backbone, task, sweep_variant(method, size), seeds)
                    mean = summarize(run.dev_main() for run in runs).mean
                    rows.append({"backbone": backbone, "task": task, "metric": METRIC_NAMES[get_task(task).main_metric],
                                 "method": method, "dict_size": size, "score": 100 * mean})
    return pd.DataFrame(rows, columns=columns)


# ------------------------------------------------------------------------------------------- rendering


def _new_figure(panels: int):
    figure = Figure(figsize=(4.2 * max(panels, 1), 3.4), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, max(panels, 1), squeeze=False)[0]
    return figure, axes


def render(figure) -> dict[str, bytes]:
    """PNG and PDF bytes of a figure, without timestamps."""
    outputs = {}
    for fmt, metadata in (("png", PNG_METADATA), ("pdf", PDF_METADATA)):
        buffer = io.BytesIO()
        figure.savefig(buffer, format=fmt, dpi=150, metadata=metadata)
        outputs[fmt] = buffer.getvalue()
    return outputs


def _empty_panel(axis, text: str) -> None:
    axis.text(0.5, 0.5, text, ha="center", va="center", transform=axis.transAxes)
    axis.set_axis_off()


def figure_title(number: int, profile: str) -> str:
    """``Figure N — <profile> profile``, then the params changed from its file (a plan's ``profile_label``),
    wrapped to the figure's width: "Figure 4 — embedded profile; changed: dict_size=100000"."""
    import textwrap

    name, _, changed = profile.partition(CHANGED)
    title = f"Figure {number} — {name} profile" + (f"{CHANGED}{changed}" if changed else "")
    return textwrap.fill(title, width=110)


def figure3(frame: pd.DataFrame, profile: str) -> dict[str, bytes]:
    with mpl.rc_context(mpl.rcParamsDefault):
        figure, (axis,) = _new_figure(1)
        if frame.empty:
            _empty_panel(axis, "no dictsize study in params")
        for task, group in frame.groupby("task", sort=True):
            axis.plot(group["dict_size"], group["mean_spans"], marker="o", label=task)
        if not frame.empty:
            axis.set_xlabel("dictionary size (0 = no segmentation: words)")
            axis.set_ylabel(f"mean spans per sentence ({SPANS_SPLIT})")
            axis.legend()
        figure.suptitle(figure_title(3, profile), fontsize=9)
        return render(figure)


def figure4(frame: pd.DataFrame, profile: str) -> dict[str, bytes]:
    tasks = sorted(frame["task"].unique()) if not frame.empty else []
    with mpl.rc_context(mpl.rcParamsDefault):
        figure, axes = _new_figure(len(tasks))
        if not tasks:
            _empty_panel(axes[0], "no dictsize study in params")
        for axis, task in zip(axes, tasks):
            spec = get_task(task)
            for (backbone, method), group in frame[frame["task"] == task].groupby(["backbone", "method"], sort=True):
                axis.plot(group["dict_size"], group["score"], marker="o", label=f"{method} ({backbone})")
            axis.set_title(task)
            axis.set_xlabel("dictionary size")
            axis.set_ylabel(f"dev {spec.main_metric} x 100 (span vector only)")
            axis.legend()
        figure.suptitle(figure_title(4, profile), fontsize=9)
        return render(figure)


def csv_text(frame: pd.DataFrame) -> str:
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, float_format="%.6f", lineterminator="\n", na_rep="")
    return buffer.getvalue()
