"""Runs no better than a constant predictor, and runs that predict a constant: the flags of the report index.

A run's trivial score on a dev split is the best score any constant prediction reaches on that split's gold
labels, with the column's own metric: the majority class's accuracy, the all-positive F1 (MRPC, QQP), MCC 0
(CoLA: a constant has no correlation), Pearson 0 (STS-B: a constant's correlation is undefined; 0 here), and
the F1 of tagging every word ``O`` (CoNLL-2003: 0). Both the score and the trivial score come from the run's
own ``predictions/<split>.tsv``: its predictions and its gold column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from spanft.data.metrics import compute_metrics
from spanft.data.registry import TaskSpec
from spanft.report.runs import Run, decode
from spanft.report.stats import read_prediction_table

TOLERANCE = 1e-9  # a score equal to the trivial one up to float rounding counts as "at"


@dataclass(frozen=True)
class RunCheck:
    """One run's dev split against the constant predictors."""

    run: Run
    split: str
    metric: str
    score: float
    trivial: float
    trivial_by: str  # the constant predictor that reaches the trivial score
    constant: str  # "" or how the run's predictions are constant

    @property
    def at_or_below_trivial(self) -> bool:
        return math.isnan(self.score) or self.score <= self.trivial + TOLERANCE

    @property
    def flagged(self) -> bool:
        return self.at_or_below_trivial or bool(self.constant)

    def describe(self) -> str:
        run = self.run
        where = f"{run.study}/{run.backbone}/{run.task}/{run.variant}/seed{run.seed} {self.split}"
        score = "undefined" if math.isnan(self.score) else f"{100 * self.score:.1f}"
        parts = []
        if self.at_or_below_trivial:
            parts.append(f"{self.metric} {score} ≤ {100 * self.trivial:.1f}, the score of {self.trivial_by}")
        if self.constant:
            parts.append(f"constant predictor: {self.constant}")
        return f"{where}: {'; '.join(parts)}"


def trivial_score(task: TaskSpec, metric: str, gold: list) -> tuple[float, str]:
    """The best ``metric`` a constant prediction reaches on ``gold``, and that predictor in words."""
    if task.is_regression:
        return 0.0, "a constant output (correlation undefined, counted as 0)"
    if task.is_tagging:
        outside = task.label_id("O")
        blank = [[outside] * len(row) for row in gold]
        return compute_metrics(task, blank, gold)[metric], "tagging every word 'O'"
    scores = [(compute_metrics(task, [k] * len(gold), gold)[metric], k) for k in range(task.num_labels)]
    best, label = max(scores, key=lambda pair: (pair[0], -pair[1]))
    return best, f"predicting '{task.label_names[label]}' for every example"


def constant_prediction(task: TaskSpec, pred: list) -> str:
    """How the predictions are constant ('' when they are not)."""
    if task.is_regression:
        values = np.asarray(pred, dtype=np.float64)
        return f"the same output {values[0]:g} for every example" if values.size and np.ptp(values) == 0 else ""
    if task.is_tagging:
        tags = {tag for row in pred for tag in row}
        return f"tag '{task.label_names[tags.pop()]}' for every word" if len(tags) == 1 else ""
    labels = set(pred)
    return f"class '{task.label_names[labels.pop()]}' for every example" if len(labels) == 1 else ""


def check_run(run: Run, split: str, metric: str) -> RunCheck | None:
    """The run's ``split`` against the constant predictors; None when it has no labeled predictions there."""
    path = run.predictions(split)
    if not path.is_file():
        return None
    frame = read_prediction_table(path)
    frame = frame[frame["gold"] != ""]
    if frame.empty:
        return None
    task = run.spec
    gold = decode(task, frame["gold"].to_numpy(), path)
    pred = decode(task, frame["pred"].to_numpy(), path)
    score = compute_metrics(task, pred, gold)[metric]
    trivial, trivial_by = trivial_score(task, metric, gold)
    return RunCheck(run, split, metric, score, trivial, trivial_by, constant_prediction(task, pred))


def check_runs(runs: list[Run]) -> list[RunCheck]:
    """Every dev split of every run (test splits left out), with the task's main metric."""
    checks = []
    for run in runs:
        for split in run.spec.eval_splits:
            if split != "test":
                check = check_run(run, split, run.spec.main_metric)
                if check is not None:
                    checks.append(check)
    return checks
