"""Sending the stale training stages as jobs: claimed runs, earlier jobs still running, the new ones.

:func:`send` claims each run in the shared cache (:mod:`spanft.cluster.claims`), watches the runs another head
holds and the jobs of an earlier call that still run the same run (:func:`spanft.cluster.watching.still_running`;
those of changed stages are refused, or cancelled with ``--cancel-changed``), sends the rest (one SLURM array,
or local processes topped up as slots free), pins the commit until the join, and returns how many failed.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import time
from pathlib import Path

import submitit

from spanft.cluster import claims, preflight, startups
from spanft.cluster.executors import (
    at_once,
    job_cores,
    local_executor,
    slot_gpus,
    slurm_executor,
    submit_array,
)
from spanft.cluster.job import StageJob
from spanft.cluster.stages import StaleStage
from spanft.cluster.timelimit import signal_lead
from spanft.cluster.tracking import (
    ACTIVE,
    Submitted,
    new_submission,
    slurm_states,
    write_manifest,
)
from spanft.cluster.watching import (
    ChangedStages,
    reattach,
    still_running,
    watch,
    workspace_of,
)
from spanft.cluster.workspace import HeadState, cache_dir, git, snapshot
from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings

log = logging.getLogger("spanft")

PIN_REFS = "refs/spanft/fanout"  # refs on the commits that sent jobs run, until their runs are saved


def pin(root: Path, commit: str, submission: Path) -> None:
    """A ref on the jobs' commit until the join: a ``git gc --prune`` of the head must not take it from them."""
    git(root, "update-ref", f"{PIN_REFS}/{submission.name}", commit)


def unpin(root: Path) -> None:
    """Every run is saved: the jobs no longer need their commits."""
    refs = git(root, "for-each-ref", "--format=%(refname)", PIN_REFS).split()
    for ref in refs:
        git(root, "update-ref", "-d", ref)


def _listing(folder: Path) -> set[Path]:
    return set(folder.iterdir()) if folder.is_dir() else set()


def _remove_new(folder: Path, before: set[Path]) -> None:
    for made in _listing(folder) - before:
        shutil.rmtree(made, ignore_errors=True)


def earlier_jobs(folder: Path, stale: list[StaleStage], commit: str, snap: str, cancel_changed: bool) -> dict:
    """The jobs of an earlier call to watch again: those running this commit, or a run this commit did not
    change; those of changed stages are refused, or cancelled (``cancel_changed``) and their stages sent anew."""
    keys = {stage.name: stage.key for stage in stale}
    same = lambda name, key: bool(key) and keys.get(name) == key
    try:
        return still_running(folder, stale, commit, snap, same)
    except ChangedStages as refused:
        if not cancel_changed:
            raise
        for name, entry in refused.changed:
            log.info("fanout: cancelling job %s of an earlier call: this commit changed %s", entry.job, name)
            submitit.SlurmJob(folder=entry.submission / "%j", job_id=entry.job).cancel(check=False)
        gone({entry.job for _, entry in refused.changed})
        kept = {name for name, _ in refused.changed}
        return {name: entry for name, entry in still_running(folder, stale, commit, snap, lambda *_: True).items()
                if name not in kept}


def gone(jobs: set[str], patience_s: float = 120.0) -> None:
    """Wait until cancelled jobs have left the queue (their workspaces are the new jobs')."""
    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        if not any(state in ACTIVE for state in slurm_states(jobs).values()):
            return
        time.sleep(1.0)
    raise SpanftError(f"cancelled jobs {', '.join(sorted(jobs))} are still in the queue after {patience_s:.0f} s; "
                      f"run spanft fanout again once squeue no longer lists them")


def claim_runs(root: Path, head: HeadState, stale: list[StaleStage], shared: str, mine: set[str],
               held: dict[str, claims.Claim]) -> tuple[dict[str, claims.Claim], int]:
    """Claim each stage's run: those this call gets go into ``held`` (filled as it goes, so that a failure
    midway can release them); returns the claims others hold (to watch) and how many runs were saved meanwhile
    (by another head's job). ``mine``: stages whose job of this head's earlier call still runs."""
    others, saved = {}, 0
    for stage in stale:
        if not stage.key or stage.name in mine:
            continue
        found = claims.claim(shared, stage.name, stage.key, head.commit, str(root))
        if not found.mine:
            others[stage.name] = found
        elif claims.run_saved(shared, stage.key):  # saved by another head since this one looked
            claims.release(found)
            saved += 1
        else:
            held[stage.name] = found
    return others, saved


def send(root: Path, head: HeadState, stale: list[StaleStage], settings: ClusterSettings, executor: str,
         parallel: int, cancel_changed: bool = False) -> int:
    """Submit every stale stage no one else runs, report as jobs end, and return how many failed."""
    folder = settings.folder_path(root)
    snapshots_before = _listing(folder / "snapshots")
    snap, shared_cache = str(snapshot(head, folder)), cache_dir(root)
    held: dict[str, claims.Claim] = {}
    try:
        running = earlier_jobs(folder, stale, head.commit, snap, cancel_changed)
        others, saved = claim_runs(root, head, stale, shared_cache, set(running), held)
    except SpanftError:
        _release(held)
        _remove_new(folder / "snapshots", snapshots_before)
        raise
    to_send = [stage for stage in stale if stage.name in held or (not stage.key and stage.name not in running)]
    parallel = max(1, min(at_once(settings, executor, parallel), len(to_send)))
    cores = job_cores(settings, executor, parallel)
    processes = parallel if executor == "local" else 1
    submission = new_submission(folder)
    calls = [StageJob(stage.name, stage.upstream, str(root), head.commit, snap, workspace_of(folder, stage.name),
                      shared_cache, processes, settings.remote, checkpoint_every_s=settings.checkpoint_every_s,
                      token=submission.name, run_key=stage.key, **signal_lead(settings, executor),
                      startups=str(folder / startups.RECORD), executor=executor)
             for stage in to_send]
    pin(root, head.commit, submission)
    logging.getLogger("submitit").setLevel(logging.ERROR)  # its "sacct not found" warnings: we ask squeue
    watched = [reattach(name, entry, folder, settings) for name, entry in running.items()]
    watched += [claims.watched(found, shared_cache, workspace_of(folder, name), settings.max_timeouts)
                for name, found in others.items()]
    _say(watched, others, saved, calls, executor, parallel, cores, submission)
    with preflight.submission_environment(submission.name):
        if executor == "slurm":
            try:
                sent = submit_array(slurm_executor(settings, submission, parallel), calls, settings) if calls else []
            except SpanftError:  # nothing was sent: a refused call leaves nothing behind
                _release(held)
                shutil.rmtree(submission, ignore_errors=True)
                _remove_new(folder / "snapshots", snapshots_before)
                git(root, "update-ref", "-d", f"{PIN_REFS}/{submission.name}")
                raise
            for entry in sent:
                if entry.stage in held:
                    claims.record_job(held[entry.stage], entry, submission)
            write_manifest(submission, [s for s in watched + sent if s.executor == "slurm"])
            submitted = watched + sent
            watch(submitted, lambda: None, len(submitted), settings.scheduler_patience_s)
            return sum(1 for s in submitted if s.outcome != "done")
        submitted, waiting, others_ids = list(watched), list(calls), {id(s) for s in watched}

        def top_up() -> None:  # local processes: at most `parallel` at a time, each in a free slot
            busy = {s.slot for s in submitted if not s.outcome and id(s) not in others_ids}
            for slot in [slot for slot in range(parallel) if slot not in busy][:len(waiting)]:
                call = dataclasses.replace(waiting.pop(0), gpus=slot_gpus(settings, slot))
                entry = Submitted(call.stage, local_executor(settings, submission).submit(call), slot,
                                  workspace=call.workspace)
                submitted.append(entry)
                if call.stage in held:
                    claims.record_job(held[call.stage], entry, submission)
                write_manifest(submission, [s for s in submitted if id(s) not in others_ids])

        try:
            watch(submitted, top_up, len(calls) + len(watched), settings.scheduler_patience_s)  # its first round sends
        finally:
            _release({name: found for name, found in held.items() if name in {c.stage for c in waiting}})
        return sum(1 for s in submitted if s.outcome != "done")


def _release(held: dict[str, claims.Claim]) -> None:
    for found in held.values():
        claims.release(found)


def _say(watched: list[Submitted], others: dict, saved: int, calls: list, executor: str, parallel: int,
         cores: int, submission: Path) -> None:
    if others:
        log.info("fanout: %d runs are claimed by another head sharing this cache (watched, not sent twice): %s",
                 len(others), ", ".join(sorted(others)[:3]) + (" ..." if len(others) > 3 else ""))
    if len(watched) > len(others):
        names = [s.stage for s in watched if s.stage not in others]
        log.info("fanout: watching again %d jobs of an earlier call that still run (not sent twice): %s",
                 len(names), ", ".join(names[:3]) + (" ..." if len(names) > 3 else ""))
    if saved:
        log.info("fanout: %d runs were saved by another head meanwhile: not sent", saved)
    if calls:
        log.info("fanout: %d jobs through %s (%d at once, %d cores each: params threads, or 0 for all of them); "
                 "logs under %s", len(calls), executor, parallel, cores, submission)
