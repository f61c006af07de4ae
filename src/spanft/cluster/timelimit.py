"""A job's time limit: no allocation ends with nothing.

SLURM sends the time-limit signal (``--signal``) on its own ~30 s cycle: the real lead is the configured one
plus up to :data:`SIGNAL_SLACK_S` (36-39 s were seen for a configured 20 s). The pre-flight counts that slack
against the training time (:func:`spanft.cluster.preflight.check_time_limit`).

When the signal comes, submitit calls the job's ``checkpoint``; before it requeues, the job has the training
save at its next optimizer step (:func:`save_before_requeue`): it forwards the signal to the training process
that its signal file names (:mod:`spanft.train.saves`) and waits for the save, at most until a few seconds
before the limit, so that the requeue still happens in time. A stage with no checkpoint (``step_cost``) has no
signal file: nothing to wait for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

SIGNAL_SLACK_S = 30  # SLURM checks time limits (and sends --signal) about every 30 s: the lead may be that much longer
REQUEUE_MARGIN_S = 8  # kept for submitit's requeue (scontrol requeue) after the save, before the limit
LOCAL_SIGNAL_DELAY_S = 30  # submitit's local executor signals this long before a local job's limit
SIGNAL_FILE = ".spanft-signal.json"  # in a workspace: the training that listens for the signal, and its saves
POLL_S = 0.2


def signal_lead(settings, executor: str) -> dict[str, int]:
    """The job's ``signal_delay_s``: the configured lead on SLURM, submitit's fixed one for local processes."""
    return {"signal_delay_s": settings.signal_delay_s if executor == "slurm" else LOCAL_SIGNAL_DELAY_S}


def time_left_s() -> float | None:
    """Seconds SLURM still gives this job (``squeue -o %L``), or None outside SLURM or when squeue fails."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return None
    try:
        said = subprocess.run(["squeue", "--noheader", "--jobs", job, "--format=%L"], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=5, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return slurm_duration_s(said)


def slurm_duration_s(text: str) -> float | None:
    """SLURM's ``[D-]HH:MM:SS`` / ``MM:SS`` / ``SS`` as seconds; None for anything else (``INVALID``, ``UNLIMITED``)."""
    days, _, clock = text.strip().rpartition("-")
    parts = clock.split(":")
    if not clock or len(parts) > 3 or not all(part.isdigit() for part in parts) or (days and not days.isdigit()):
        return None
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return seconds + int(days or 0) * 86400


def wait_budget_s(lead_s: int, left_s: float | None) -> float:
    """How long the job may wait for the save: the time left (at least the configured lead) less the requeue's
    margin."""
    return max(0.0, max(float(lead_s), left_s or 0.0) - REQUEUE_MARGIN_S)


def _read(path: Path) -> dict | None:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("pid"), int) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def save_before_requeue(signal_file: Path, signum: signal.Signals, budget_s: float) -> str:
    """Have the listening training save a checkpoint now; what happened, in a line for the job's log."""
    told = _read(signal_file)
    if told is None:
        return "no training listening for the signal (not started yet, over, or a stage without checkpoints)"
    pid, before = told["pid"], told.get("saves", 0)
    if not _alive(pid):
        return f"the training (process {pid}) has ended: nothing to save"
    os.kill(pid, signum)
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        now = _read(signal_file)
        if now is None or not _alive(pid):
            return "the training ended before it saved"
        if now.get("saves", 0) > before:
            return f"the training saved {now.get('checkpoint') or 'a checkpoint'}"
        time.sleep(POLL_S)
    return f"the training did not save within {budget_s:.0f} s (a step or a save longer than the signal's lead)"
