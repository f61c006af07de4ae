"""One training per run, whoever sends it: a claim per run in the shared DVC cache.

Two heads (clones of one commit, a colleague's clone) that share ``dvc cache dir`` would each send the same
stale runs. Before a head sends a stage it claims the run in ``<cache>/spanft-claims/<run key>.json``, the run
key being DVC's own run-cache key of the stage (its command, dependencies' hashes and params: the name of the
run-cache entry the job will write), so a run is one claim whichever commit or head sends it. The claim is
created with ``O_CREAT | O_EXCL`` (atomic on NFS v3+ and Lustre, where ``flock`` may not hold across nodes) and
names the host, the sending process, the commit, and then the job (executor, id, submission folder).

A head that finds a live claim watches the claimed job instead of sending its own; a claim whose job is no
longer queued or running (``squeue``), whose local process is gone, or whose sender died before sending, is
taken over. The job deletes its claim once DVC has saved its run; a sender deletes the claims of what it did not
send. DVC ignores the folder: ``dvc gc`` and ``dvc status`` read only the cache's ``files/`` and ``runs/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from spanft.cluster.tracking import (
    ACTIVE,
    Submitted,
    local_job_alive,
    process_start,
    slurm_states,
)
from spanft.errors import SpanftError

CLAIMS_DIR = "spanft-claims"
WRITE_GRACE_S = 30.0  # a claim file without its record yet: its creator is writing it this long
SENDING_GRACE_S = 600.0  # a claim of another host with no job yet: its sender is taken as alive this long


def claims_dir(cache_dir: str | Path) -> Path:
    return Path(cache_dir) / CLAIMS_DIR


def run_saved(cache_dir: str | Path, key: str) -> bool:
    """Whether the run-cache holds a run of this key (DVC's ``<cache>/runs/<key[:2]>/<key>/``)."""
    entry = Path(cache_dir) / "runs" / key[:2] / key
    return entry.is_dir() and any(entry.iterdir())


@dataclass
class Claim:
    """A claim file and what it says."""

    path: Path
    record: dict

    @property
    def mine(self) -> bool:
        return self.record.get("pid") == os.getpid() and self.record.get("host") == socket.gethostname()


def _sender(stage: str, key: str, commit: str, head: str) -> dict:
    pid = os.getpid()
    return {"stage": stage, "key": key, "commit": commit, "head": head, "host": socket.gethostname(), "pid": pid,
            "started": process_start(str(pid)), "time": time.time(), "executor": "", "job": "", "job_started": "",
            "submission": ""}


def claim(cache_dir: str | Path, stage: str, key: str, commit: str, head: str) -> Claim:
    """Claim the run ``key``: this process's claim, or the live claim of whoever holds it (``.mine`` tells)."""
    folder = claims_dir(cache_dir)
    folder.mkdir(exist_ok=True)
    path = folder / f"{key}.json"
    takeovers, deadline = 0, time.monotonic() + 10.0
    while takeovers < 3 and time.monotonic() < deadline:
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            found = read(path)
            if found is None and _age(path) < WRITE_GRACE_S:  # created this instant, its record on its way
                time.sleep(0.05)
                continue
            if found is not None and holder_alive(found.record):
                return found
            with contextlib.suppress(FileNotFoundError):  # a dead holder's claim: taken over
                os.replace(path, path.with_name(path.name + ".stale"))
            takeovers += 1
            continue
        record = _sender(stage, key, commit, head)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
        return Claim(path, record)
    raise SpanftError(f"{stage}: could not claim its run ({path}): other heads keep taking it; run spanft fanout "
                      f"again")


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return 0.0


def read(path: Path) -> Claim | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # gone, being written, or half-written by a sender that died between create and write
    return Claim(path, record) if isinstance(record, dict) and record else None


def record_job(found: Claim, entry: Submitted, submission: Path) -> None:
    """The job this process sent for the claimed run: others watch it from now on."""
    found.record.update(executor=entry.executor, job=entry.job.job_id, job_started=entry.started,
                        submission=str(submission))
    partial = found.path.with_name(f"{found.path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(found.record), encoding="utf-8")
    os.replace(partial, found.path)


def release(found: Claim) -> None:
    """Delete the claim, if it is still the one this process (or job) holds."""
    now = read(found.path)
    if now is not None and now.record.get("pid") == found.record.get("pid") \
            and now.record.get("host") == found.record.get("host"):
        found.path.unlink(missing_ok=True)


def release_key(cache_dir: str | Path, key: str) -> None:
    """The run ``key`` is saved: its claim goes, whoever wrote it (called by the job that saved it)."""
    if key:
        (claims_dir(cache_dir) / f"{key}.json").unlink(missing_ok=True)


def holder_alive(record: dict) -> bool:
    """Whether the claimed run is still being sent, queued or run."""
    job, here = record.get("job") or "", record.get("host") == socket.gethostname()
    if job and record.get("executor") == "slurm":
        try:
            return slurm_states({job}).get(job, "COMPLETED") in ACTIVE
        except SpanftError:
            return True  # nobody can tell: keep off
    if job:  # a local job: its controller process, on its host
        return local_job_alive(job, record.get("job_started") or "") if here else True
    if here:  # still sending: its sender process
        return process_start(str(record.get("pid", ""))) == record.get("started") and bool(record.get("started"))
    return time.time() - float(record.get("time", 0)) < SENDING_GRACE_S


@dataclass
class ClaimPaths:
    stderr: Path  # what a failure line names as the log


class ClaimedJob:
    """The job another sender holds the claim of, watched through its claim (never cancelled from here)."""

    def __init__(self, found: Claim, cache_dir: str) -> None:
        self.found, self.cache_dir = found, cache_dir
        record = found.record
        self.job_id = f"claim:{record.get('job') or 'sending'}@{record.get('host')}"
        logs = Path(record["submission"]) / record["job"] if record.get("job") and record.get("submission") else None
        self.paths = ClaimPaths(next(iter(sorted(logs.glob("*.err"))), found.path) if logs else found.path)

    def cancel(self, check: bool = False) -> None:
        """Not this head's job: left to its sender."""

    def outcome(self) -> str:
        """'done' once the run is saved, '' while its claim is held, else why it ended without the run."""
        if run_saved(self.cache_dir, self.found.record.get("key", "")):
            return "done"
        now = read(self.found.path)
        if now is not None and holder_alive(now.record):
            if now.record != self.found.record:
                self.__init__(now, self.cache_dir)  # its sender sent it, or another head took it over
            return ""
        record = self.found.record
        sender = f"{record.get('host')}'s spanft fanout (pid {record.get('pid')}, head {record.get('head')})"
        what = f"its job {record['job']}" if record.get("job") else "its sender, before sending a job"
        return (f"claimed by {sender}; {what} ended without saving the run: run spanft fanout again to take it "
                f"over")


def watched(found: Claim, cache_dir: str, workspace: str, max_timeouts: int) -> Submitted:
    """The run another sender claimed, to watch until it is saved (or its holder is gone)."""
    return Submitted(found.record.get("stage", ""), ClaimedJob(found, cache_dir), started="claim",
                     workspace=workspace, max_timeouts=max_timeouts)
