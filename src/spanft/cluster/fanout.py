"""``spanft fanout``: the head's stale training stages as jobs, their progress, and the join.

1. The head's upstream stages (task data, segmentations, backbones) run here, with ``dvc repro``.
2. DVC names the training stages still to run (:func:`spanft.cluster.stages.stale_training_stages`).
3. Each is submitted through submitit: one SLURM job array (``cluster.max_parallel`` at once), or local
   processes, ``--jobs`` at a time, each on ``cores / jobs`` cores (its torch threads follow params
   ``threads``: :mod:`spanft.threads`, which the job tells how many jobs share the cores).
4. A line reports each change (done / running / failed); each failed job is named by its stage, its error
   and its log (:mod:`spanft.cluster.tracking`).
5. When every job finished, the head's ``dvc repro`` restores each run from the run-cache and builds the
   reports (dvc.lock records of runs this cache lacks, made elsewhere, are dropped first: DVC looks in the
   run-cache only for a stage without an applicable record). A failure stops before the join; the finished
   runs stay in the run-cache, so the next call submits only what is still stale. A stage whose job of an earlier call still runs is never sent twice.
"""

from __future__ import annotations

import contextlib

import dataclasses
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

import submitit
from filelock import FileLock, Timeout
from submitit.core.utils import FailedJobError

from spanft.cluster import preflight
from spanft.cluster.causes import pending_note
from spanft.cluster.job import StageJob
from spanft.cluster.processes import run_group
from spanft.cluster.stages import (
    StaleStage,
    finetune_upstream,
    forget_uncached_records,
    open_repo,
    stage_paths,
    stale_training_stages,
)
from spanft.cluster.timelimit import signal_lead
from spanft.cluster.tracking import (
    Active,
    Submitted,
    new_submission,
    outcome,
    scheduler_states,
    still_active,
    write_manifest,
)
from spanft.cluster.workspace import HeadState, cache_dir, git, head_state, same_contents, snapshot
from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings
from spanft.params.dvc_room import check_dvc_room
from spanft.params.plan import load_plan
from spanft.threads import SHARING_ENV, thread_count

log = logging.getLogger("spanft")

POLL_SECONDS = 2.0
MAX_POLL_SECONDS = 30.0  # submitit's own monitor polls no more often than this
PIN_REFS = "refs/spanft/fanout"  # refs on the commits that sent jobs run, until their runs are saved


def executor_name(settings: ClusterSettings) -> str:
    """slurm or local: as set, or slurm where ``sbatch`` is on the PATH (auto)."""
    found = shutil.which("sbatch") is not None
    if settings.executor == "slurm" and not found:
        raise SpanftError("cluster.executor slurm: sbatch is not on the PATH (run on a login node, or use --executor local)")
    if settings.executor != "auto":
        return settings.executor
    return "slurm" if found else "local"


def job_cores(settings: ClusterSettings, executor: str, jobs: int) -> int:
    """Cores per job: the job's CPUs on SLURM; locally the cores this process may use, shared by the jobs at
    once (its CPU affinity: what a cgroup or ``taskset`` leaves it, not every core of the machine)."""
    if executor == "slurm":
        return settings.cpus_per_job
    return thread_count(0, {SHARING_ENV: str(jobs)})


def local_gpus() -> list[str]:
    """The GPUs local jobs may share: those of ``CUDA_VISIBLE_DEVICES`` when set, else every one torch sees."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [gpu.strip() for gpu in visible.split(",") if gpu.strip()]
    import torch  # only with cluster.gpus_per_job > 0

    return [str(index) for index in range(torch.cuda.device_count())]


def local_slots(settings: ClusterSettings, parallel: int) -> int:
    """How many local jobs run at once: ``parallel``, fewer when the GPUs do not go round."""
    if settings.gpus_per_job == 0:
        return parallel
    gpus = len(local_gpus())
    fit = gpus // settings.gpus_per_job
    if fit == 0:
        raise SpanftError(f"cluster.gpus_per_job {settings.gpus_per_job}: this machine shows "
                          f"{gpus} GPU(s) (CUDA_VISIBLE_DEVICES, torch)")
    if fit < parallel:
        log.info("fanout: %d jobs at once, not %d: %d GPU(s), %d per job", fit, parallel, gpus,
                 settings.gpus_per_job)
    return min(parallel, fit)


def slurm_executor(settings: ClusterSettings, submission: Path, parallel: int) -> submitit.AutoExecutor:
    ex = submitit.AutoExecutor(folder=submission / "%j", cluster="slurm", slurm_max_num_timeout=settings.max_timeouts)
    extra = {"account": settings.account} if settings.account else {}
    ex.update_parameters(timeout_min=settings.time_min, name="spanft-fanout", cpus_per_task=settings.cpus_per_job,
                         mem_gb=settings.mem_gb, gpus_per_node=settings.gpus_per_job,
                         slurm_array_parallelism=parallel, slurm_partition=settings.partition or None,
                         slurm_setup=list(settings.setup), slurm_additional_parameters=extra,
                         slurm_signal_delay_s=settings.signal_delay_s)
    return ex


def local_executor(settings: ClusterSettings, submission: Path) -> submitit.LocalExecutor:
    """A local process; its GPUs are set by the job itself (:func:`slot_gpus`), so submitit gives it none."""
    ex = submitit.LocalExecutor(folder=submission / "%j", max_num_timeout=settings.max_timeouts)
    ex.update_parameters(timeout_min=settings.time_min, gpus_per_node=0)
    return ex


def slot_gpus(settings: ClusterSettings, slot: int) -> str:
    """``CUDA_VISIBLE_DEVICES`` of the local job in slot ``slot``: its own ``gpus_per_job`` of the caller's GPUs,
    in the caller's numbering (indices or UUIDs); empty (no GPU) without ``gpus_per_job``."""
    gpus = settings.gpus_per_job
    return ",".join(local_gpus()[slot * gpus:(slot + 1) * gpus]) if gpus else ""


def run_dvc(root: Path, *args: str) -> None:
    """``dvc ARGS`` in the head, its output shown as it comes; a failure is one error line."""
    code = run_group(["dvc", *args], root, {**os.environ, "DVC_NO_ANALYTICS": "1"})
    if code != 0:
        raise SpanftError(f"{root}: dvc {' '.join(args[:3])}{' ...' if len(args) > 3 else ''} failed "
                          f"(exit {code}); its output is above")


def fanout(root: Path, settings: ClusterSettings, jobs: int | None, allow_dirty: bool, join: bool) -> int:
    """Run the head's graph with its training stages sent as jobs; 0 when every job and the join succeeded."""
    executor = executor_name(settings)
    folder = settings.folder_path(root)
    check_folder(root, folder)
    if settings.remote:
        check_remote(root, settings.remote)
    preflight.check_time_limit(settings, executor)
    made = [path for path in (*reversed([folder, *folder.parents]), folder / ".gitignore", folder / "fanout.lock")
            if not os.path.lexists(path)]  # what this call creates: removed again if it is refused
    preflight.check_writable(folder, "cluster.folder",
                             "make it writable (or free space), or set cluster.folder to a shared folder you own")
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / ".gitignore").exists():  # job workspaces are git clones: never add them
        (folder / ".gitignore").write_text("*\n", encoding="utf-8")
    lock = FileLock(folder / "fanout.lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        _remove_made(made)
        raise SpanftError(f"{folder / 'fanout.lock'}: another spanft fanout is using this job folder (this head's, "
                          f"or another head's with the same cluster.folder); wait for it to end (or stop it), or "
                          f"give each head a cluster.folder of its own") from None
    try:
        check_before_spending(root, settings, executor, jobs or settings.max_parallel)
        return _fanout(root, settings, executor, jobs or settings.max_parallel, allow_dirty, join)
    except SpanftError:
        lock.release()
        _remove_made(made)
        raise
    finally:
        lock.release()


def check_before_spending(root: Path, settings: ClusterSettings, executor: str, parallel: int) -> None:
    """Everything that would make the jobs' work lost, told in one line before the upstream stages run: the time
    limit, the scheduler, the job folder and the shared cache, the job folder's room (:mod:`preflight`)."""
    started = time.perf_counter()
    preflight.check_time_limit(settings, executor)
    if executor == "slurm":
        preflight.check_scheduler()
        preflight.check_resources(settings)
    preflight.check_cache(cache_dir(root))
    check_dvc_room(root)  # DVC's index and cache need room in the head (after the cache's write: the better cause)
    log.info("fanout: checked the time limit, %s, the job folder and the DVC cache (%.1f s)",
             "the scheduler and the jobs' resources" if executor == "slurm" else "local processes",
             time.perf_counter() - started)


def check_room(root: Path, settings: ClusterSettings, parallel: int) -> bool:
    """The job folder's room for the checkpoints of ``parallel`` jobs at once (once the backbones are built,
    before any is sent); False while a backbone's size is unknown."""
    runs = load_plan(root / "params.yaml").runs()
    per_job = preflight.checkpoint_bytes(root, {run.backbone for run in runs})
    if per_job is None:
        return False
    preflight.check_room(settings.folder_path(root), per_job, max(1, parallel))
    return True


def _remove_made(made: list[Path]) -> None:
    """A refused fan-out leaves nothing behind: the files and folders it created go, while they hold nothing
    else (a folder where jobs already left their workspaces stays)."""
    for path in reversed(made):
        with contextlib.suppress(OSError):
            path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()


def check_folder(root: Path, folder: Path) -> None:
    """The job folder must be a folder of its own: not the repo, not above it, holding no file git tracks."""
    if folder == root or folder in root.parents:
        raise SpanftError(f"cluster.folder {folder}: that is the repo or a folder above it; name a folder of the "
                          f"fan-out's own (default .fanout)")
    if root in folder.parents and _tracked(root, folder):
        raise SpanftError(f"cluster.folder {folder}: it holds files git tracks; name a folder of the fan-out's "
                          f"own (default .fanout)")


def _tracked(root: Path, folder: Path) -> bool:
    try:
        return bool(git(root, "ls-files", "--", str(folder.relative_to(root))).strip())
    except SpanftError:  # not a git repo: head_state says so, in its own words
        return False


def check_remote(root: Path, remote: str) -> None:
    """A remote the jobs can push to: one the head's DVC config names (its local config travels with the jobs)."""
    with open_repo(root) as repo:
        known = sorted(repo.config.get("remote", {}))
    if remote not in known:
        raise SpanftError(f"cluster.remote {remote!r}: no such DVC remote in {root} (dvc remote list: "
                          f"{', '.join(known) or 'none'}); add it with `dvc remote add` or leave cluster.remote empty")


def _fanout(root: Path, settings: ClusterSettings, executor: str, parallel: int, allow_dirty: bool,
            join: bool) -> int:
    head = head_state(root, *stage_paths(root), allow_dirty)
    upstream = finetune_upstream(root)
    if upstream:
        log.info("fanout: the stages the fine-tuning runs read, here in the head (%d)", len(upstream))
        run_dvc(root, "repro", *upstream)
    stale, fresh, cached = stale_training_stages(root)
    log.info("fanout: %d training stages to send, %d up to date, %d in the cache already (the join restores them)",
             len(stale), fresh, cached)
    if stale:
        if not check_room(root, settings, min(parallel if executor == "slurm" else local_slots(settings, parallel),
                                              len(stale))):
            log.info("fanout: a backbone's size is unknown: the job folder's room was not checked")
        failed = send(root, head, stale, settings, executor, parallel)
        if failed:
            log.info("fanout: %d of %d jobs failed (above); the %d finished runs are kept in the run-cache: "
                     "run `spanft fanout` again to send only what is still stale", failed, len(stale),
                     len(stale) - failed)
            return 1
    if settings.remote:
        run_dvc(root, "pull", "--run-cache", "--allow-missing", "--remote", settings.remote)
    left, _, _ = stale_training_stages(root)
    if left:  # every job succeeded, yet runs are missing (jobs of another commit, a cache another head cleaned)
        log.info("fanout: %d training stages are still stale after the jobs (%s): run spanft fanout again to "
                 "send them", len(left), ", ".join(stage.name for stage in left[:3]) + (" ..." if len(left) > 3 else ""))
        return 1
    dropped = forget_uncached_records(root)
    if dropped:
        log.info("fanout: %d dvc.lock records name outputs this cache lacks (runs made elsewhere): dropped, "
                 "so that `dvc repro` restores the jobs' runs instead of running them again", len(dropped))
    unpin(root)
    if not join:
        log.info("fanout: every run is in the cache: `dvc repro` (or spanft fanout) restores them and builds the "
                 "reports; nothing trains again")
        return 0
    log.info("fanout: joining: `dvc repro` restores the runs from the run-cache and builds the reports")
    refuse_stale_join(root, head)
    run_dvc(root, "repro")
    return 0


def refuse_stale_join(root: Path, head: HeadState) -> None:
    """Never fine-tune on the head: if the jobs' runs no longer match it (its code or params changed while they
    ran), stop instead of letting the join's ``dvc repro`` run the stages here."""
    now = head_state(root, *stage_paths(root), allow_dirty=True)
    stale, _, _ = stale_training_stages(root)
    if stale or not same_contents(root, now.commit, head.commit) or now.changed != head.changed:
        what = f"{len(stale)} training stages are stale" if stale else "the head's commit or files changed"
        raise SpanftError(f"{root}: {what} after the jobs ended (did the code or params change while they ran?); "
                          f"the join would fine-tune here: run spanft fanout again")


def still_running(folder: Path, stale: list[StaleStage], commit: str, snap: str) -> dict[str, Active]:
    """The stale stages whose job of an earlier call is still queued or running: never sent twice. A SLURM job
    that runs this very commit and snapshot is watched again (an earlier call may have stopped watching it);
    one of another commit, or a local one (the child of a command that still runs), is refused."""
    active = still_active(folder)
    busy = {stage.name: active[stage.name] for stage in stale if stage.name in active}
    local = [(name, entry.job) for name, entry in busy.items() if entry.executor != "slurm"]
    if local:
        raise SpanftError(f"jobs of an earlier spanft fanout are still running here: {_listed(local, 'process')}; "
                          f"wait for that command to end (or stop it), then run spanft fanout again")
    other = [(name, entry.job) for name, entry in busy.items() if _runs(entry) != (commit, snap)]
    if other:
        raise SpanftError(f"jobs of an earlier spanft fanout still run another commit or other files: "
                          f"{_listed(other, 'job')}; wait for them to end or cancel them (scancel ID), then run "
                          f"spanft fanout again")
    return busy


def _listed(pairs: list[tuple[str, str]], what: str) -> str:
    shown = ", ".join(f"{stage} ({what} {job})" for stage, job in pairs[:3])
    return shown + (f" and {len(pairs) - 3} more" if len(pairs) > 3 else "")


def _runs(entry: Active) -> tuple[str, str] | None:
    """The commit and snapshot an earlier call's job runs (from submitit's record of the call it sent)."""
    try:
        call = submitit.SlurmJob(folder=entry.submission / "%j", job_id=entry.job).submission().function
        return call.commit, call.snapshot
    except Exception:  # an unreadable record: never taken for this call's job
        return None


def pin(root: Path, commit: str, submission: Path) -> None:
    """A ref on the jobs' commit until the join: a ``git gc --prune`` of the head must not take it from them."""
    git(root, "update-ref", f"{PIN_REFS}/{submission.name}", commit)


def unpin(root: Path) -> None:
    """Every run is saved: the jobs no longer need their commits."""
    refs = git(root, "for-each-ref", "--format=%(refname)", PIN_REFS).split()
    for ref in refs:
        git(root, "update-ref", "-d", ref)


def send(root: Path, head: HeadState, stale: list[StaleStage], settings: ClusterSettings, executor: str,
         parallel: int) -> int:
    """Submit every stale stage, report as jobs end, and return how many failed."""
    folder = settings.folder_path(root)
    snapshots_before = _listing(folder / "snapshots")
    snap, shared_cache = str(snapshot(head, folder)), cache_dir(root)
    try:
        running = still_running(folder, stale, head.commit, snap)
    except SpanftError:
        _remove_new(folder / "snapshots", snapshots_before)
        raise
    to_send = [stage for stage in stale if stage.name not in running]
    parallel = max(1, min(parallel if executor == "slurm" else local_slots(settings, parallel), len(to_send)))
    cores = job_cores(settings, executor, parallel)
    processes = parallel if executor == "local" else 1
    submission = new_submission(folder)
    calls = [StageJob(stage.name, stage.upstream, str(root), head.commit, snap, workspace_of(folder, stage.name),
                      shared_cache, processes, settings.remote, checkpoint_every_s=settings.checkpoint_every_s,
                      token=submission.name, **signal_lead(settings, executor))
             for stage in to_send]
    pin(root, head.commit, submission)
    logging.getLogger("submitit").setLevel(logging.ERROR)  # its "sacct not found" warnings: we ask squeue
    watched = [reattach(name, entry, folder, settings) for name, entry in running.items()]
    if watched:
        log.info("fanout: watching again %d jobs of an earlier call that still run (not sent twice): %s",
                 len(watched), ", ".join(s.stage for s in watched[:3]) + (" ..." if len(watched) > 3 else ""))
    if calls:
        log.info("fanout: %d jobs through %s (%d at once, %d cores each: params threads, or 0 for all of them); "
                 "logs under %s", len(calls), executor, parallel, cores, submission)
    with preflight.submission_environment(submission.name):
        if executor == "slurm":
            try:
                submitted = watched + (submit_array(slurm_executor(settings, submission, parallel), calls, settings)
                                       if calls else [])
            except SpanftError:  # nothing was sent: a refused call leaves nothing behind
                shutil.rmtree(submission, ignore_errors=True)
                _remove_new(folder / "snapshots", snapshots_before)
                git(root, "update-ref", "-d", f"{PIN_REFS}/{submission.name}")
                raise
            write_manifest(submission, submitted)
            watch(submitted, lambda: None, len(submitted), settings.scheduler_patience_s)
            return sum(1 for s in submitted if s.outcome != "done")
        submitted = []
        waiting = list(calls)

        def top_up() -> None:  # local processes: at most `parallel` at a time, each in a free slot
            busy = {s.slot for s in submitted if not s.outcome}
            for slot in [slot for slot in range(parallel) if slot not in busy][:len(waiting)]:
                call = dataclasses.replace(waiting.pop(0), gpus=slot_gpus(settings, slot))
                submitted.append(Submitted(call.stage, local_executor(settings, submission).submit(call), slot,
                                           workspace=call.workspace))
                write_manifest(submission, submitted)

        watch(submitted, top_up, len(calls), settings.scheduler_patience_s)  # its first round submits
        return sum(1 for s in submitted if s.outcome != "done")


def _listing(folder: Path) -> set[Path]:
    return set(folder.iterdir()) if folder.is_dir() else set()


def _remove_new(folder: Path, before: set[Path]) -> None:
    for made in _listing(folder) - before:
        shutil.rmtree(made, ignore_errors=True)


def workspace_of(folder: Path, stage: str) -> str:
    return str(folder / "workspaces" / stage)


def reattach(stage: str, entry: Active, folder: Path, settings: ClusterSettings) -> Submitted:
    """A SLURM job of an earlier call, to watch again."""
    job = submitit.SlurmJob(folder=entry.submission / "%j", job_id=entry.job)
    return Submitted(stage, job, workspace=workspace_of(folder, stage), max_timeouts=settings.max_timeouts)


def submit_array(ex: submitit.AutoExecutor, calls: list[StageJob], settings: ClusterSettings) -> list[Submitted]:
    """One SLURM job array; sbatch's refusal (partition, memory, account, no controller) as one line."""
    try:
        with ex.batch():
            jobs = [ex.submit(call) for call in calls]
    except (FailedJobError, subprocess.CalledProcessError) as error:
        said = [line for line in str(error).splitlines() if line.strip()]
        raise SpanftError(f"sbatch refused the job array: {said[-1] if said else error} (check the partition, "
                          f"memory, account, or SLURM_CONF)") from None
    return [Submitted(call.stage, job, workspace=call.workspace, max_timeouts=settings.max_timeouts)
            for call, job in zip(calls, jobs)]


class SchedulerLost(SpanftError):
    """squeue kept failing past the patience: the fan-out stops watching, and leaves the jobs alone."""


def watch(submitted: list[Submitted], top_up, total: int, patience_s: float) -> None:
    """Poll until every job ended, one line per change of the counts, one line per failed job.

    Polls back off from every 2 s to every 30 s while nothing changes. A failing ``squeue`` is no news, but
    after ``patience_s`` seconds of nothing else the watch stops with :class:`SchedulerLost` and leaves the jobs
    running. If the command itself is stopped (Ctrl-C, SIGTERM, an error), it cancels the jobs it started.
    """
    last, delay, failing_since, said = None, POLL_SECONDS, None, ""
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
                    entry.outcome = outcome(entry, states)
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
