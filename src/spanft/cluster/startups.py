"""A job's start-up, learned from the jobs already run: the time from an allocation's start to its training's
first step (clone or refresh of the workspace, checkout, DVC, the stage's imports, its data and model).

``cluster.startup_s`` is a guess; on a busy cluster, or a slow shared filesystem, the real start-up can take the
whole of a short time limit, so that every allocation ends before it trains (nothing to save at the signal,
requeue after requeue). So each allocation of a fine-tuning job measures its own start-up: it starts a watch
(:func:`watch`) that waits for its training to say, in the workspace's signal file, when it began
(``began``, :mod:`spanft.train.saves`), and appends one line to ``<cluster.folder>/startups.tsv``. An allocation
whose time-limit signal came before its training began records the time it had as a lower bound (``cut``).

The pre-flight (:func:`spanft.cluster.preflight.check_time_limit`) takes the slowest of the last
:data:`RECENT` records of the executor, or ``cluster.startup_s`` where that is larger: a limit it accepts leaves
one checkpoint interval of training after the start-up this cluster really showed.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

RECORD = "startups.tsv"  # in cluster.folder: one line per allocation of a fine-tuning job
RECENT = 20  # the records the pre-flight weighs: the latest ones of the executor
POLL_S = 1.0
COLUMNS = ("time", "executor", "stage", "job", "host", "seconds", "kind")  # kind: trained | cut


@dataclass(frozen=True)
class Startup:
    """The slowest recent start-up: its seconds, of which of how many records, and whether it is a lower bound."""

    seconds: int
    stage: str
    records: int
    cut: bool  # the allocation's signal came before its training began: the start-up is longer still
    path: Path

    def words(self) -> str:
        more = "or more: " if self.cut else ""
        return f"{more}the slowest of the last {self.records} job start-ups in {self.path}"


def allocation_start() -> float:
    """When this allocation started (epoch seconds): SLURM's start time of the job (requeued: the new one), else
    this process's start."""
    job = os.environ.get("SLURM_JOB_ID")
    if job:
        given = os.environ.get("SLURM_JOB_START_TIME", "")
        if given.isdigit():
            return float(given)
        started = _squeue_start(job)
        if started is not None:
            return started
    return psutil.Process().create_time()


def _squeue_start(job: str) -> float | None:
    try:
        said = subprocess.run(["squeue", "--noheader", "--jobs", job, "--format=%S"], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=10, check=False).stdout.strip()
        return datetime.datetime.fromisoformat(said).timestamp()  # local time, as squeue prints it
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def record(path: Path, executor: str, stage: str, job: str, seconds: float, cut: bool) -> None:
    """Append one allocation's start-up (one short line in one write: concurrent jobs do not mix their lines)."""
    fields = (f"{time.time():.0f}", executor, stage, job, socket.gethostname(), f"{seconds:.0f}",
              "cut" if cut else "trained")
    line = "\t".join(field.replace("\t", " ") for field in fields) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        pass  # a record is advice for the next pre-flight: never a reason for the job to fail


def learned(path: Path, executor: str, recent: int = RECENT) -> Startup | None:
    """The slowest of the last ``recent`` start-ups of ``executor`` recorded in ``path``; None without any."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    rows = []
    for line in lines:
        fields = line.split("\t")
        if len(fields) == len(COLUMNS) and fields[1] == executor and fields[5].isdigit():
            rows.append((int(fields[5]), fields[2], fields[6] == "cut"))
    rows = rows[-recent:]
    if not rows:
        return None
    seconds, stage, cut = max(rows, key=lambda row: (row[0], row[2]))
    return Startup(seconds, stage, len(rows), cut, path)


class Watch:
    """Waits, in a thread of the job, for its training to begin; records the start-up once (or, at the signal,
    the time the allocation had, as a lower bound)."""

    def __init__(self, signal_file: Path, path: Path, executor: str, stage: str, job: str,
                 started: float | None = None):
        self.signal_file, self.path, self.executor, self.stage, self.job = signal_file, path, executor, stage, job
        self.started = started  # the allocation's start; found by the thread (squeue may take a moment)
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._wait, name="spanft-startup", daemon=True)

    def start(self) -> "Watch":
        self._thread.start()
        return self

    def _start(self) -> float:
        if self.started is None:
            self.started = allocation_start()
        return self.started

    def _wait(self) -> None:
        started = self._start()
        while not self._done.wait(POLL_S):
            began = training_began(self.signal_file)
            if began is not None and began >= started - 1:  # an earlier allocation's training began before
                self._record(began - started, cut=False)

    def _record(self, seconds: float, cut: bool) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self._done.set()
            record(self.path, self.executor, self.stage, self.job, max(0.0, seconds), cut)

    def signalled(self) -> None:
        """The time-limit signal: a training that has not begun yet had the whole allocation as its start-up."""
        started, began = self._start(), training_began(self.signal_file)
        if began is not None and began >= started - 1:
            self._record(began - started, cut=False)
        else:
            self._record(time.time() - started, cut=True)

    def stop(self) -> None:
        self._done.set()

    def timeline(self) -> str:
        """Where the allocation stands, for the job's log: its time so far, and when its training began."""
        started, began = self._start(), training_began(self.signal_file)
        trained = f", its training began at {began - started:.0f} s" if began is not None and began >= started - 1 \
            else ", its training not begun"
        return f"{time.time() - started:.0f} s into the allocation{trained}"


def training_began(signal_file: Path) -> float | None:
    """When the training that listens in ``signal_file`` began (epoch seconds), or None."""
    try:
        said = json.loads(signal_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    began = said.get("began") if isinstance(said, dict) else None
    return float(began) if isinstance(began, (int, float)) else None


_current: Watch | None = None  # the job's watch (module-level: submitit pickles the job itself at a requeue)


def watch(signal_file: Path, path: Path, executor: str, stage: str, job: str) -> Watch:
    """Start this allocation's watch (one per process)."""
    global _current
    if _current is not None:
        _current.stop()
    _current = Watch(signal_file, path, executor, stage, job).start()
    return _current


def current() -> Watch | None:
    return _current


def fanout_startup(plan: Any, root: Path) -> tuple[int, str]:
    """A job's start-up for ``spanft plan``: the slowest the job folder's recent allocations recorded where that
    is longer than ``cluster.startup_s`` (``plan``: a :class:`spanft.params.plan.Plan`); and where it comes from."""
    path = plan.cluster.folder_path(root) / RECORD
    found = [seen for seen in (learned(path, executor) for executor in ("slurm", "local")) if seen]
    slowest = max(found, key=lambda seen: seen.seconds, default=None)
    if slowest is not None and slowest.seconds > plan.cluster.startup_s:
        return slowest.seconds, f"the slowest of the jobs' recent start-ups in {plan.cluster.folder}/{RECORD}"
    return plan.cluster.startup_s, "cluster.startup_s"
