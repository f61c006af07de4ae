"""One job per workspace, on any shared filesystem: a lock file created with ``O_EXCL`` that names its holder.

``flock`` is not honoured across nodes everywhere (NFS without lock support, Lustre mounted with
``localflock``), but an exclusive create is atomic on NFS v3+ and Lustre. The file holds the host, the process id
and start, and the SLURM job. A lock whose holder is gone is taken over: on the same host, when that process no
longer runs; a SLURM job's, when the job is no longer queued or running, or when it is this very job (requeued
after a time limit or a pre-emption: one allocation of a job never runs twice at once).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from pathlib import Path
from typing import Iterator

from spanft.cluster.tracking import ACTIVE, process_start, slurm_states
from spanft.errors import SpanftError


def slurm_job() -> str:
    """This process's SLURM job as squeue names it (``123_4`` for an array element), or ''."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    return f"{array}_{task}" if array and task else os.environ.get("SLURM_JOB_ID", "")


def _holder() -> dict:
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "started": process_start(str(pid)), "slurm_job": slurm_job()}


def holder_gone(found: dict) -> bool:
    """Whether the process or job that wrote a lock file no longer holds it."""
    job = found.get("slurm_job") or ""
    if job:
        if job == slurm_job():
            return True
        try:
            return slurm_states({job}).get(job, "COMPLETED") not in ACTIVE
        except SpanftError:
            return False  # nobody can tell: keep off
    if found.get("host") == socket.gethostname():
        pid = str(found.get("pid", ""))
        return not pid or process_start(pid) != found.get("started")
    return False  # another host, no scheduler: only its owner can tell


@contextlib.contextmanager
def exclusive(path: Path, what: str) -> Iterator[None]:
    """Hold ``path`` as the lock of ``what`` for the block; refuse in one line while a live holder has it."""
    for _ in range(3):
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                found = json.loads(path.read_text(encoding="utf-8") or "{}")
            except (OSError, ValueError):
                found = {}
            if found and not holder_gone(found):
                holder = found.get("slurm_job") or f"pid {found.get('pid')} on {found.get('host')}"
                raise SpanftError(f"{what}: another job ({holder}) holds {path}; this one did nothing (if that job "
                                  f"is gone, remove the file and run spanft fanout again)") from None
            with contextlib.suppress(FileNotFoundError):
                os.replace(path, path.with_name(path.name + ".stale"))
            continue
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(_holder(), handle)
        break
    else:
        raise SpanftError(f"{what}: could not take {path} (another job keeps taking it); this one did nothing")
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
                path.unlink()
