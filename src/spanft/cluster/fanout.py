"""``spanft fanout``: the head's stale training stages as jobs, their progress, and the join.

1. The head's upstream stages (task data, segmentations, backbones) run here, with ``dvc repro``.
2. DVC names the training stages still to run (:func:`spanft.cluster.stages.stale_training_stages`).
3. Each is claimed in the shared cache (:mod:`spanft.cluster.claims`: a run another head sends is watched,
   not sent twice) and submitted through submitit (:mod:`spanft.cluster.sending`,
   :mod:`spanft.cluster.executors`): one SLURM job array (``cluster.max_parallel`` at once), or local
   processes, ``--jobs`` at a time, each on ``cores / jobs`` cores (its torch threads follow params
   ``threads``: :mod:`spanft.threads`, which the job tells how many jobs share the cores).
4. A line reports each change (done / running / failed); each failed job is named by its stage, its error
   and its log (:mod:`spanft.cluster.watching`, :mod:`spanft.cluster.tracking`).
5. When every job finished, the head's ``dvc repro`` restores each run from the run-cache and builds the
   reports (dvc.lock records of runs this cache lacks, made elsewhere, are dropped first: DVC looks in the
   run-cache only for a stage without an applicable record). A failure stops before the join; the finished
   runs stay in the run-cache, so the next call submits only what is still stale. A stage whose job of an earlier call still runs is never sent twice.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from filelock import FileLock, Timeout

from spanft.cluster import preflight
from spanft.cluster.executors import at_once, executor_name
from spanft.cluster.processes import run_group
from spanft.cluster.sending import send, unpin
from spanft.cluster.stages import (
    finetune_upstream,
    forget_uncached_records,
    open_repo,
    stage_paths,
    stale_training_stages,
)
from spanft.cluster.workspace import (
    HeadState,
    cache_dir,
    git,
    head_state,
    same_contents,
)
from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings
from spanft.params.plan import load_plan
from spanft.stage.dvc_room import check_dvc_room

log = logging.getLogger("spanft")


def run_dvc(root: Path, *args: str) -> None:
    """``dvc ARGS`` in the head, its output shown as it comes; a failure is one error line."""
    code = run_group(["dvc", *args], root, {**os.environ, "DVC_NO_ANALYTICS": "1"})
    if code != 0:
        raise SpanftError(f"{root}: dvc {' '.join(args[:3])}{' ...' if len(args) > 3 else ''} failed "
                          f"(exit {code}); its output is above")


def fanout(root: Path, settings: ClusterSettings, jobs: int | None, allow_dirty: bool, join: bool,
           cancel_changed: bool = False) -> int:
    """Run the head's graph with its training stages sent as jobs; 0 when every job and the join succeeded."""
    executor = executor_name(settings)
    folder = settings.folder_path(root)
    check_folder(root, folder)
    if settings.remote:
        check_remote(root, settings.remote)
    preflight.check_time_limit(settings, executor, folder)
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
        return _fanout(root, settings, executor, jobs or settings.max_parallel, allow_dirty, join, cancel_changed)
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
    budget = preflight.check_time_limit(settings, executor, settings.folder_path(root))
    if executor == "slurm":
        preflight.check_scheduler()
        preflight.check_resources(settings)
    preflight.check_cache(cache_dir(root))
    check_dvc_room(root)  # DVC's index and cache need room in the head (after the cache's write: the better cause)
    log.info("fanout: checked the time limit, %s, the job folder and the DVC cache (%.1f s)",
             "the scheduler and the jobs' resources" if executor == "slurm" else "local processes",
             time.perf_counter() - started)
    log.info("fanout: a job's %d min: %d s of signal lead, ~%d s of start-up (%s), %d s to train (a checkpoint "
             "every %d s); the smallest limit that leaves one checkpoint interval: --time-min %d", settings.time_min,
             budget.lead_s, budget.startup_s, budget.startup_words, budget.left_s, settings.checkpoint_every_s,
             budget.minimum_min)


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
            join: bool, cancel_changed: bool = False) -> int:
    head = head_state(root, *stage_paths(root), allow_dirty)
    upstream = finetune_upstream(root)
    if upstream:
        log.info("fanout: the stages the fine-tuning runs read, here in the head (%d)", len(upstream))
        run_dvc(root, "repro", *upstream)
    stale, fresh, cached = stale_training_stages(root)
    log.info("fanout: %d training stages to send, %d up to date, %d in the cache already (the join restores them)",
             len(stale), fresh, cached)
    if stale:
        if not check_room(root, settings, min(at_once(settings, executor, parallel), len(stale))):
            log.info("fanout: a backbone's size is unknown: the job folder's room was not checked")
        failed = send(root, head, stale, settings, executor, parallel, cancel_changed)
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
