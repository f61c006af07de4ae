"""A run's training curves: DVCLive's files in ``<run>/dvclive/``, written while the run trains
(:mod:`spanft.train.curves`) and gathered by the report stage (:mod:`spanft.report.curves`).

DVCLive keeps one TSV per metric, ``plots/metrics/<name>.tsv``, with the columns ``step`` (here the optimizer
step) and the name's last part, and the latest values in ``metrics.json``. The names: ``train/loss`` (the mean
training loss since the previous log), ``train/grad_norm``, ``train/learning_rate`` and ``epoch`` from each
training log; ``eval/loss`` and ``eval/<metric>`` (the selection split's) from each evaluation. The Trainer logs
the training values every ``log_every_steps`` optimizer steps (a hyper-parameter) and at each epoch's end, and
evaluates once per epoch, so the ``train/`` files have a row per log and the ``eval/`` files a row per epoch. No
torch here: the report reads these.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from spanft.errors import SpanftError

CURVES_DIR = "dvclive"  # in the run directory (and, while the run trains, in its checkpoint directory)
METRICS_SUBDIR = Path("plots") / "metrics"  # DVCLive's place for metric histories, under its directory


def metric_file(curves: Path, name: str) -> Path:
    """The TSV of metric ``name`` (``eval/loss``) in a DVCLive directory."""
    return Path(curves) / METRICS_SUBDIR / f"{name}.tsv"


def read_curves(curves: Path) -> pd.DataFrame | None:
    """Every metric of a DVCLive directory by step: a ``step`` column, then one column per metric name
    (``train/loss``, ...), empty where a metric was not logged at that step; None when there is no such directory.
    A file that is not DVCLive's TSV is a SpanftError naming it."""
    folder = Path(curves) / METRICS_SUBDIR
    if not folder.is_dir():
        return None
    merged = pd.DataFrame({"step": pd.Series([], dtype="int64")})
    for path in sorted(folder.rglob("*.tsv")):
        name = path.relative_to(folder).with_suffix("").as_posix()
        merged = merged.merge(_read_metric(path, name), on="step", how="outer")
    return merged.sort_values("step", kind="stable").reset_index(drop=True)


def _read_metric(path: Path, name: str) -> pd.DataFrame:
    column = name.rsplit("/", 1)[-1]
    try:
        frame = pd.read_csv(path, sep="\t")
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise SpanftError(f"{path}: not a readable DVCLive metric file ({exc})") from None
    if list(frame.columns) != ["step", column] or frame["step"].duplicated().any():
        raise SpanftError(f"{path}: expected the columns step and {column}, one row per step "
                          f"(found {', '.join(map(str, frame.columns))}, {len(frame)} rows)")
    return frame.rename(columns={column: name}).astype({"step": "int64"})
