"""The fine-tuning runs a report reads: where the params expect them, loading, best-run choice, mean ± sd.

Run directories follow the layout of :mod:`spanft.params.plan`,
``<runs>/<study>/<backbone>/<task>/<variant>/seed<N>/``, with ``metrics.json`` and ``predictions/<split>.tsv``.
Only the runs the params plan are read; any other directory is ignored. A missing expected run is a
SpanftError naming its path.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from spanft.data.metrics import compute_metrics
from spanft.data.registry import TaskSpec, get_task
from spanft.errors import SpanftError
from spanft.params.plan import run_dir
from spanft.report.stats import read_prediction_table

_REQUIRED_KEYS = ("task", "main_metric", "metrics")


@dataclass(frozen=True)
class Run:
    """One finished fine-tuning run (its metrics.json)."""

    study: str
    backbone: str
    task: str
    variant: str
    seed: int
    path: Path
    summary: dict[str, Any]

    @property
    def spec(self) -> TaskSpec:
        return get_task(self.task)

    def metric(self, split: str, metric: str) -> float:
        """A dev/test metric from metrics.json; NaN when the split or metric is absent or null."""
        value = self.summary["metrics"].get(split, {}).get(metric)
        return math.nan if value is None else float(value)

    def dev_main(self) -> float:
        """The main metric on the split that selects the best epoch (MNLI: matched)."""
        return self.metric(self.spec.selection_split, self.spec.main_metric)

    def predictions(self, split: str) -> Path:
        return self.path / "predictions" / f"{split}.tsv"

    def get(self, key: str, default: Any = None) -> Any:
        return self.summary.get(key, default)


def load_run(runs_dir: Path, study: str, backbone: str, task: str, variant: str, seed: int) -> Run:
    """Read one expected run; a missing or malformed metrics.json is a SpanftError naming the path."""
    return read_run(run_dir(runs_dir, study, backbone, task, variant, seed), study, backbone, task, variant,
                    seed)


def read_run(path: Path, study: str, backbone: str, task: str, variant: str, seed: int) -> Run:
    """The run in directory ``path`` (see :func:`load_run`)."""
    metrics_file = path / "metrics.json"
    if not metrics_file.is_file():
        raise SpanftError(f"{path}: expected run missing (no metrics.json)")
    try:
        summary = json.loads(metrics_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpanftError(f"{metrics_file}: not valid JSON ({exc})") from None
    if not isinstance(summary, dict):
        raise SpanftError(f"{metrics_file}: expected a JSON object")
    for key in _REQUIRED_KEYS:
        if key not in summary:
            raise SpanftError(f"{metrics_file}: key {key!r} missing")
    if summary["task"] != task:
        raise SpanftError(f"{metrics_file}: task is {summary['task']!r}, the directory says {task!r}")
    if not isinstance(summary["metrics"], dict):
        raise SpanftError(f"{metrics_file}: 'metrics' must be an object of split -> metrics")
    return Run(study, backbone, task, variant, seed, path, summary)


def load_runs(runs_dir: Path, study: str, backbone: str, task: str, variant: str, seeds: Iterable[int]) -> list[Run]:
    return [load_run(runs_dir, study, backbone, task, variant, seed) for seed in seeds]


def best_run(runs: list[Run]) -> Run:
    """The run with the highest dev main metric; ties and NaN scores go to the lowest seed."""
    if not runs:
        raise SpanftError("no runs to choose the best from")

    def key(run: Run) -> tuple[float, int]:
        score = run.dev_main()
        return (-score if not math.isnan(score) else math.inf, run.seed)

    return min(runs, key=key)


@dataclass(frozen=True)
class Summary:
    """Mean and sample standard deviation (ddof = 1) of a metric over seeds; sd is NaN for one seed."""

    n: int
    mean: float
    sd: float


def summarize(values: Iterable[float]) -> Summary:
    array = np.asarray([v for v in values if not math.isnan(v)], dtype=np.float64)
    if array.size == 0:
        return Summary(0, math.nan, math.nan)
    sd = float(np.std(array, ddof=1)) if array.size > 1 else math.nan
    return Summary(int(array.size), float(np.mean(array)), sd)


def split_score(run: Run, split: str, metric: str) -> float:
    """A metric of one split: metrics.json when it has it, else scored from the split's predictions TSV
    when that file carries gold labels, else NaN (an unlabeled split)."""
    value = run.metric(split, metric)
    if not math.isnan(value) or split in run.summary["metrics"]:
        return value
    path = run.predictions(split)
    if not path.is_file():
        return math.nan
    return score_predictions(run.spec, path).get(metric, math.nan)


def score_predictions(task: TaskSpec, path: Path) -> dict[str, float]:
    """Every metric of ``task`` on a predictions TSV's labeled rows (empty when no row has gold)."""
    frame = read_prediction_table(path)
    frame = frame[frame["gold"] != ""]
    if frame.empty:
        return {}
    if task.is_tagging:
        try:
            gold = [[task.label_id(t) for t in row.split()] for row in frame["gold"]]
            pred = [[task.label_id(t) for t in row.split()] for row in frame["pred"]]
        except SpanftError as exc:
            raise SpanftError(f"{path}: {exc}") from None
        return compute_metrics(task, pred, gold)
    if task.is_regression:
        return compute_metrics(task, frame["pred"].astype(float), frame["gold"].astype(float))
    try:
        gold = [task.label_id(name) for name in frame["gold"]]
        pred = [task.label_id(name) for name in frame["pred"]]
    except SpanftError as exc:
        raise SpanftError(f"{path}: {exc}") from None
    return compute_metrics(task, pred, gold)


def decode(task: TaskSpec, column: np.ndarray, where: Path) -> list:
    """Label ids (classification), floats (regression) or tag-id lists (tagging) from TSV strings."""
    try:
        if task.is_tagging:
            return [[task.label_id(tag) for tag in row.split()] for row in column]
        if task.is_regression:
            return [float(value) for value in column]
        return [task.label_id(name) for name in column]
    except (SpanftError, ValueError) as exc:
        raise SpanftError(f"{where}: {exc}") from None


_STEP_COST_NUMBERS = ("baseline_step_seconds", "sf_step_seconds", "ratio")


def read_step_costs(path: Path) -> dict[str, Any] | None:
    """The step_cost stage's file: ``{"device": ..., "backbones": {backbone: {task: step costs}}}``; None when
    there is no file (a report built without that stage). A file that is there but malformed is a SpanftError
    naming it and the bad key."""
    if not path.exists():
        return None
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpanftError(f"{path}: not a readable JSON file ({exc})") from None
    backbones = content.get("backbones") if isinstance(content, dict) else None
    if not isinstance(backbones, dict):
        raise SpanftError(f"{path}: expected an object with 'backbones' (backbone -> task -> step costs)")
    for backbone, tasks in backbones.items():
        if not isinstance(tasks, dict):
            raise SpanftError(f"{path}: backbones.{backbone} must be an object of task -> step costs, found {tasks!r}")
        for task, cost in tasks.items():
            _check_step_cost(path, f"backbones.{backbone}.{task}", cost)
    return {"device": str(content.get("device", "?")), "backbones": backbones}


def _check_step_cost(path: Path, where: str, cost: Any) -> None:
    if not isinstance(cost, dict):
        raise SpanftError(f"{path}: {where} must be an object of step costs, found {cost!r}")
    for key in _STEP_COST_NUMBERS:
        value = cost.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
            raise SpanftError(f"{path}: {where}.{key} must be a positive finite number, found {value!r}")
    if cost.get("contended") not in (True, False, None):
        raise SpanftError(f"{path}: {where}.contended must be true, false or null, found {cost.get('contended')!r}")
