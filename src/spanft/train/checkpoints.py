"""Per-epoch checkpoints of a run: which one to resume from, their completion mark, and their removal.

A rerun with the same settings, data, backbone files, spanft code, number of processes and torch threads resumes
from the last complete checkpoint; checkpoints of anything else are cleared (a run killed, then re-run after a commit
changed its backbone or the training code, starts over rather than mixing the two). Only the main process of a distributed run changes the directory.
A checkpoint directory is ours only when it holds the run marker: a directory of the user's (files but no
marker) is refused, never cleared, and a directory that existed before the run is never removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from pathlib import Path

import torch.distributed as dist
from transformers import TrainerCallback

from spanft.data.curves import CURVES_DIR
from spanft.data.registry import TaskSpec
from spanft.fileio import atomic_open
from spanft.train.finished import FINISHED_FILE
from spanft.train.options import FinetuneOptions
from spanft.train.preflight import RUN_MARKER, check_checkpoint_dir

log = logging.getLogger("spanft")


_MATCHED = ("settings", "data", "backbone", "code", "processes", "threads")  # the marker keys a resumable checkpoint must share
CREATED = "created_directory"  # marker key: the run made the directory itself (then it may remove it)


# In each checkpoint: training seconds spent up to it. Written last, once every process has saved its part,
# so it also marks the checkpoint as complete (a kill while saving leaves a checkpoint without it).
ELAPSED_FILE = "spanft_elapsed.json"


class ElapsedCallback(TrainerCallback):
    """Writes the training seconds spent so far into each checkpoint (a resumed run adds them up).

    The file is the checkpoint's completion mark: every process first finishes its part of the checkpoint
    (each writes its own RNG state), then the main process writes the file atomically.
    """

    def __init__(self, start: float, offset: float):
        self.start, self.offset = start, offset

    def on_save(self, args, state, control, **kwargs):
        barrier()
        checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and checkpoint.is_dir():
            seconds = self.offset + time.perf_counter() - self.start
            with atomic_open(checkpoint / ELAPSED_FILE) as handle:
                handle.write(json.dumps({"seconds": seconds}))


def barrier() -> None:
    """Wait for every process of a distributed run (nothing to wait for in a single process)."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


def elapsed_seconds(checkpoint: str | None) -> float:
    if not checkpoint:
        return 0.0
    return float(json.loads((Path(checkpoint) / ELAPSED_FILE).read_text(encoding="utf-8"))["seconds"])


def _data_digest(data: Path, splits: list[str]) -> str:
    digest = hashlib.sha256()
    for split in splits:
        path = data / f"{split}.parquet"
        if path.is_file():  # an absent test split is no part of the run
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _tree_digest(root: Path, pattern: str = "*") -> str:
    """The content of the files under ``root`` that match ``pattern``, with their relative paths."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _backbone_digest(backbone: str) -> str:
    """A local backbone's files (a hub id and its revision are in the settings already)."""
    path = Path(backbone)
    return _tree_digest(path) if path.is_dir() else backbone


def _code_digest() -> str:
    """The spanft package's source: what trains the checkpoint."""
    return _tree_digest(Path(__file__).resolve().parents[1], "*.py")


def prepare_checkpoint_dir(options: FinetuneOptions, task: TaskSpec, *, main: bool = True,
                           processes: int = 1, threads: int = 1) -> str | None:
    """The checkpoint to resume from, or None; checkpoints of other settings, data, backbone, code, process
    count or torch thread count are cleared.

    Only the main process (``main``) changes the directory: it clears foreign and incomplete checkpoints and
    writes the marker; the other processes of a distributed run call this after it, read only, and find the
    same checkpoint. A checkpoint of a different number of processes is not resumed: the effective batch
    size and the data order would differ. Nor is one of another thread count: CPU kernels sum in per-thread
    chunks, so the continued run would not equal an uninterrupted one.
    """
    directory = options.checkpoint_path()
    marker = {"settings": options.fingerprint(), "data": _data_digest(Path(options.data), task.all_splits),
              "backbone": _backbone_digest(options.backbone), "code": _code_digest(), "processes": processes,
              "threads": threads}
    found = _read_marker(directory / RUN_MARKER)
    matches = found is not None and all(found.get(key) == marker[key] for key in _MATCHED)
    if not main:
        return last_complete_checkpoint(directory) if matches else None
    check_checkpoint_dir(directory)
    ours = (directory / RUN_MARKER).is_file()
    created = not directory.exists() or bool(found and found.get(CREATED))
    if ours:
        if matches:
            last = last_complete_checkpoint(directory)
            _remove_incomplete_checkpoints(directory, keep=last)
            if last:
                log.info("resuming from %s", last)
                return last
        else:
            log.warning("%s: checkpoints removed, the run starts over: %s", directory, _differences(found, marker))
        _remove_our_files(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_open(directory / RUN_MARKER) as handle:
        handle.write(json.dumps({**marker, CREATED: created}, sort_keys=True))
    return None


def _differences(found: dict | None, marker: dict) -> str:
    """What differs between a checkpoint's marker and this run's: a count with both values, else its name."""
    if not found:
        return "their marker is missing or unreadable"
    parts = []
    for key in _MATCHED:
        if found.get(key) == marker[key]:
            continue
        counted = key in ("processes", "threads")
        parts.append(f"{key} {found.get(key, 'not recorded')} (this run: {marker[key]})" if counted else f"other {key}")
    return "made with " + ", ".join(parts)


def _read_marker(path: Path) -> dict | None:
    """The marker's content; None when absent or unreadable (then its checkpoints are not trusted)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _checkpoints(directory: Path) -> list[Path]:
    """``checkpoint-<step>`` directories, latest step first."""
    found = [p for p in directory.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]), reverse=True)


def last_complete_checkpoint(directory: Path) -> str | None:
    """The latest checkpoint that holds its completion mark (a kill while saving leaves one without)."""
    if not directory.is_dir():
        return None
    for checkpoint in _checkpoints(directory):
        if (checkpoint / ELAPSED_FILE).is_file():
            return str(checkpoint)
    return None


def _remove_incomplete_checkpoints(directory: Path, keep: str | None) -> None:
    for checkpoint in _checkpoints(directory):
        if not (checkpoint / ELAPSED_FILE).is_file() and str(checkpoint) != keep:
            log.warning("%s: incomplete checkpoint (interrupted while saving): removed", checkpoint)
            shutil.rmtree(checkpoint, ignore_errors=True)


def clear_checkpoints(directory: Path) -> None:
    """Remove what a run put in its checkpoint directory, and the directory if the run created it and
    nothing else is left. A directory without the run marker is not ours: it is left alone."""
    if not (directory / RUN_MARKER).is_file():
        return
    created = bool((_read_marker(directory / RUN_MARKER) or {}).get(CREATED))
    _remove_our_files(directory)
    if created and directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()


def _remove_our_files(directory: Path) -> None:
    """The run's checkpoints, its training curves, tensorboard leftovers of older transformers, then the marker
    (last)."""
    for child in [*directory.glob("checkpoint-*"), *directory.glob(CURVES_DIR), *directory.glob("runs")]:
        shutil.rmtree(child, ignore_errors=True)
    (directory / FINISHED_FILE).unlink(missing_ok=True)
    (directory / RUN_MARKER).unlink(missing_ok=True)
