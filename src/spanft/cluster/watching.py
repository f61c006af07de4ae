"""Watching the jobs: one line per change of the counts, one per failed job, and the jobs an earlier call sent.

:func:`watch` polls the scheduler until every job ended (backing off while nothing changes), names each
failure by its cause (:func:`spanft.cluster.tracking.outcome`), and cancels the jobs it started if the command
itself is stopped. :func:`still_running` finds the stages whose job of an earlier call still runs (never sent
twice), :func:`reattach` watches such a job again.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import submitit

from spanft.cluster.causes import pending_note
from spanft.cluster.stages import StaleStage
from spanft.cluster.tracking import (
    Active,
    Submitted,
    outcome,
    scheduler_states,
    still_active,
)
from spanft.errors import Context, SpanftError, parts
from spanft.params.cluster import ClusterSettings

log = logging.getLogger("spanft")

POLL_SECONDS = 2.0
MAX_POLL_SECONDS = 30.0  # submitit's own monitor polls no more often than this


class SchedulerLost(SpanftError):
    """squeue kept failing past the patience: the fan-out stops watching, and leaves the jobs alone."""


def workspace_of(folder: Path, stage: str) -> str:
    return str(folder / "workspaces" / stage)


def still_running(folder: Path, stale: list[StaleStage], commit: str, snap: str,
                  same_run=None) -> dict[str, Active]:
    """The stale stages whose job of an earlier call is still queued or running: never sent twice. A SLURM job
    that runs this very commit and snapshot is watched again (an earlier call may have stopped watching it),
    and so is one of another commit whose stage that commit did not change (``same_run(stage, run key)``: the
    same command on the same dependencies); one of a changed stage, or a local one (the child of a command that
    still runs), is refused."""
    active = still_active(folder)
    busy = {stage.name: active[stage.name] for stage in stale if stage.name in active}
    local = [(name, entry.job) for name, entry in busy.items() if entry.executor != "slurm"]
    if local:
        raise SpanftError(f"jobs of an earlier spanft fanout are still running here: {_listed(local, 'process')}; "
                          f"wait for that command to end (or stop it), then run spanft fanout again")
    other = [(name, entry) for name, entry in busy.items() if _runs(entry)[:2] != (commit, snap)]
    changed = [(name, entry) for name, entry in other if same_run is None or not same_run(name, _runs(entry)[2])]
    if changed:
        raise ChangedStages(changed)
    return busy


class ChangedStages(SpanftError):
    """Jobs of an earlier call run stages this commit changed: refused (or cancelled when asked)."""

    def __init__(self, changed: list[tuple[str, Active]]) -> None:
        # the jobs and the way out stay whole in a cut line; the rest is context
        super().__init__(parts(f"jobs of an earlier spanft fanout run stages this commit or its files changed: "
                               f"{_listed([(name, entry.job) for name, entry in changed], 'job')}; wait for them to "
                               f"end, or cancel them: spanft fanout --cancel-changed",
                               Context(" (or scancel ID, then spanft fanout again; the jobs of unchanged stages are "
                                       "watched, not sent twice)")))
        self.changed = changed


def _listed(pairs: list[tuple[str, str]], what: str) -> str:
    shown = ", ".join(f"{stage} ({what} {job})" for stage, job in pairs[:3])
    return shown + (f" and {len(pairs) - 3} more" if len(pairs) > 3 else "")


def _runs(entry: Active) -> tuple[str, str, str]:
    """The commit, snapshot and run key an earlier call's job runs (from submitit's record of the call it sent);
    empty ones where the record is unreadable (never taken for this call's job)."""
    try:
        call = submitit.SlurmJob(folder=entry.submission / "%j", job_id=entry.job).submission().function
        return call.commit, call.snapshot, getattr(call, "run_key", "")
    except Exception:
        return "", "", ""


def reattach(stage: str, entry: Active, folder: Path, settings: ClusterSettings) -> Submitted:
    """A SLURM job of an earlier call, to watch again."""
    job = submitit.SlurmJob(folder=entry.submission / "%j", job_id=entry.job)
    return Submitted(stage, job, workspace=workspace_of(folder, stage), max_timeouts=settings.max_timeouts)


def watch(submitted: list[Submitted], top_up, total: int, patience_s: float) -> None:
    """Poll until every job ended, one line per change of the counts, one line per failed job.

    Polls back off from every 2 s to every 30 s while nothing changes. A failing ``squeue`` is no news, but
    after ``patience_s`` seconds of nothing else the watch stops with :class:`SchedulerLost` and leaves the jobs
    running. If the command itself is stopped (Ctrl-C, SIGTERM, an error), it cancels the jobs it started.
    """
    last, delay, failing_since = None, POLL_SECONDS, None
    try:
        while True:
            states = scheduler_states(submitted)
            if states is None:
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since > patience_s:
                    raise SchedulerLost(
                        f"squeue has failed for {patience_s:.0f} s (cluster.scheduler_patience_s): stopped watching; "
                        f"the jobs may still run: run spanft fanout again to watch them again (nothing is sent "
                        f"twice)")
                states = {}
            else:
                failing_since = None
            pending_note(getattr(states, "reasons", {}))  # jobs waiting on a drained node, a partition down
            for entry in submitted:
                if not entry.outcome:
                    claimed = getattr(entry.job, "outcome", None)  # a run another head's claim holds
                    entry.outcome = claimed() if callable(claimed) else outcome(entry, states)
                    if entry.outcome and entry.outcome != "done":
                        log.info("fanout: FAILED %s: %s; log %s", entry.stage, entry.outcome, entry.job.paths.stderr)
            top_up()
            done = sum(1 for s in submitted if s.outcome == "done")
            failed = sum(1 for s in submitted if s.outcome and s.outcome != "done")
            running = sum(1 for s in submitted if not s.outcome and states.get(s.job.job_id, "RUNNING") == "RUNNING")
            delay = POLL_SECONDS if (done, running, failed) != last else min(delay * 1.5, MAX_POLL_SECONDS)
            if (done, running, failed) != last:
                log.info("fanout: %d/%d done, %d running, %d failed", done, total, running, failed)
                last = (done, running, failed)
            if done + failed == total:
                return
            time.sleep(delay if failing_since is None else min(delay, max(0.1, patience_s / 4)))
    except SchedulerLost:
        raise
    except BaseException:
        for entry in submitted:
            if not entry.outcome:
                entry.job.cancel(check=False)
        raise
