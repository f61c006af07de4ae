"""``plots/training_curves.csv``: every planned run's training curves in one table, drawn by ``dvc plots show``.

Each run logs its curves with DVCLive while it trains (``<run>/dvclive/``, :mod:`spanft.data.curves`); this
gathers them, one row per run and logged step: the run's key, the optimizer step and the epoch, the training
loss, the selection split's loss and its main metric (named, x 100 like the tables). A run directory without
curves (written before runs logged them) contributes no rows, and the log says how many.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from spanft.data.curves import CURVES_DIR, read_curves
from spanft.data.registry import get_task
from spanft.english import count_of
from spanft.params.plan import Plan, run_dir
from spanft.report.paper import METRIC_NAMES

log = logging.getLogger("spanft")

KEYS = ["study", "backbone", "task", "variant", "seed"]
COLUMNS = [*KEYS, "run", "step", "epoch", "train_loss", "dev_loss", "metric", "dev_score"]


def training_curves(plan: Plan, runs_dir: Path) -> pd.DataFrame:
    """The curves of every run ``plan`` plans, in the plan's order (the columns: :data:`COLUMNS`)."""
    frames, missing = [], 0
    for run in plan.runs():
        key = [run.study, run.backbone, run.task, run.variant, run.seed]
        curves = read_curves(run_dir(runs_dir, *key) / CURVES_DIR)
        if curves is None:
            missing += 1
            continue
        frames.append(_run_rows(key, curves))
    if missing:
        log.warning("report: %s without training curves (%s/): not in plots/training_curves.csv",
                    count_of(missing, "run"), CURVES_DIR)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def _run_rows(key: list, curves: pd.DataFrame) -> pd.DataFrame:
    metric = get_task(key[2]).main_metric
    frame = pd.DataFrame({name: [value] * len(curves) for name, value in zip(KEYS, key)})
    frame["run"] = "/".join(map(str, key[:4])) + f"/seed{key[4]}"
    frame["step"] = curves["step"]
    for column, name, scale in (("epoch", "epoch", 1), ("train_loss", "train/loss", 1),
                                ("dev_loss", "eval/loss", 1), ("dev_score", f"eval/{metric}", 100)):
        frame[column] = scale * curves[name] if name in curves else float("nan")
    frame["metric"] = METRIC_NAMES.get(metric, metric)
    return frame[COLUMNS]
