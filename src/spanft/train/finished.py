"""A finished run whose checkpoints are kept until something else has saved it (a fan-out job: DVC's commit).

By default a run clears its checkpoints once its run directory is written. Under ``spanft fanout`` that is too
early: DVC has not yet hashed the run directory nor written its run-cache entry, and a time limit, a pre-emption
or a commit error in that window would mean training from epoch 1 again. With :data:`KEEP_ENV` set the run keeps
its checkpoint directory and writes :data:`FINISHED_FILE` into it (the run directory and its ``metrics.json``'s
digest); the job clears the directory only once DVC has saved the run. No torch here: the job reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from spanft.fileio import atomic_open

KEEP_ENV = "SPANFT_KEEP_CHECKPOINTS"  # set (to 1): keep the checkpoints of a finished run and mark it finished
CHECKPOINT_EVERY_ENV = "SPANFT_CHECKPOINT_EVERY_S"  # seconds of training between checkpoints, mid-epoch too
FINISHED_FILE = "spanft_finished.json"


def keep_finished_checkpoints() -> bool:
    return os.environ.get(KEEP_ENV, "") not in ("", "0")


def checkpoint_every_s() -> float:
    """Seconds of training between wall-clock checkpoints; 0 (the default): at epoch ends only."""
    value = os.environ.get(CHECKPOINT_EVERY_ENV, "").strip()
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mark_finished(checkpoint_dir: Path, out: Path) -> None:
    """Record in the checkpoint directory that ``out`` holds the finished run (written last, atomically)."""
    with atomic_open(checkpoint_dir / FINISHED_FILE) as handle:
        handle.write(json.dumps({"out": str(out), "metrics_sha256": _digest(out / "metrics.json")}))


def finished_run(checkpoint_dir: Path, root: Path) -> Path | None:
    """The run directory a finished mark in ``checkpoint_dir`` names, if it still holds that very run
    (``metrics.json`` unchanged); relative run paths are taken from ``root``."""
    try:
        mark = json.loads((checkpoint_dir / FINISHED_FILE).read_text(encoding="utf-8"))
        out = root / mark["out"]
        return out if _digest(out / "metrics.json") == mark["metrics_sha256"] else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
