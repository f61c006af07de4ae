"""``spanft fanout``: the head's stale fine-tuning stages as jobs, their progress, and the join.

1. The head's upstream stages (task data, segmentations, backbones) run here, with ``dvc repro``.
2. DVC names the fine-tuning stages still to run (:func:`spanft.cluster.stages.stale_finetune_stages`).
3. Each is submitted through submitit's ``AutoExecutor``: one SLURM job array (``cluster.max_parallel`` at
   once), or local processes, ``--jobs`` at a time, each with ``cores / jobs`` torch threads.
4. A line reports each change (done / running / failed); each failed job is named by its stage and log.
5. When every job finished, the head's ``dvc repro`` restores each run from the run-cache and builds the
   reports. A failure stops before the join; the finished runs stay in the run-cache, so the next call
   submits only what is still stale.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import submitit
from filelock import FileLock, Timeout

from spanft.cluster.job import StageJob
from spanft.cluster.stages import StaleStage, finetune_upstream, stage_paths, stale_finetune_stages
from spanft.cluster.workspace import cache_dir, head_state, snapshot
from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings

log = logging.getLogger("spanft")

POLL_SECONDS = 2.0
ENDED_WITHOUT_RESULT = ("CANCELLED", "TIMEOUT", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
                        "PREEMPTED", "COMPLETED", "INTERRUPTED", "FINISHED", "NO PROCESS AND NO RESULT")
CLEAN_EXIT = ("COMPLETED", "FINISHED")  # ended well: its result file may still be on its way (a network filesystem)
RESULT_GRACE_SECONDS = 30.0


@dataclass
class Submitted:
    stage: str
    job: submitit.Job
    slot: int = 0  # local: which of the --jobs places it runs in
    outcome: str = ""  # '' while queued or running, then 'done' or why it failed
    exited_at: float | None = None  # when the scheduler first said it exited well (waiting for its result file)


def executor_name(settings: ClusterSettings) -> str:
    """slurm or local: as set, or slurm where ``sbatch`` is on the PATH (auto)."""
    found = shutil.which("sbatch") is not None
    if settings.executor == "slurm" and not found:
        raise SpanftError("cluster.executor slurm: sbatch is not on the PATH (run on a login node, or use --executor local)")
    if settings.executor != "auto":
        return settings.executor
    return "slurm" if found else "local"


def job_threads(settings: ClusterSettings, executor: str, jobs: int) -> int:
    """Torch threads per job: the job's CPUs on SLURM; this machine's cores shared by the jobs at once locally."""
    if executor == "slurm":
        return settings.cpus_per_job
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def slurm_executor(settings: ClusterSettings, folder: Path, parallel: int) -> submitit.AutoExecutor:
    ex = submitit.AutoExecutor(folder=folder / "jobs" / "%j", cluster="slurm")
    extra = {"account": settings.account} if settings.account else {}
    ex.update_parameters(timeout_min=settings.time_min, name="spanft-fanout", cpus_per_task=settings.cpus_per_job,
                         mem_gb=settings.mem_gb, gpus_per_node=settings.gpus_per_job,
                         slurm_array_parallelism=parallel, slurm_partition=settings.partition or None,
                         slurm_setup=list(settings.setup), slurm_additional_parameters=extra)
    return ex


def local_executor(settings: ClusterSettings, folder: Path, slot: int) -> submitit.LocalExecutor:
    """A local process in slot ``slot`` of ``--jobs``: with GPUs, the slot's own ``gpus_per_job`` of them."""
    ex = submitit.LocalExecutor(folder=folder / "jobs" / "%j")
    gpus = settings.gpus_per_job
    ex.update_parameters(timeout_min=settings.time_min, gpus_per_node=gpus,
                         visible_gpus=tuple(range(slot * gpus, (slot + 1) * gpus)))
    return ex


def run_dvc(root: Path, *args: str) -> None:
    """``dvc ARGS`` in the head, its output shown as it comes; a failure is one error line."""
    done = subprocess.run(["dvc", *args], cwd=root, stdin=subprocess.DEVNULL,
                          env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    if done.returncode != 0:
        raise SpanftError(f"{root}: dvc {' '.join(args[:3])}{' ...' if len(args) > 3 else ''} failed "
                          f"(exit {done.returncode}); its output is above")


def fanout(root: Path, settings: ClusterSettings, jobs: int | None, allow_dirty: bool, join: bool) -> int:
    """Run the head's graph with its fine-tuning stages sent as jobs; 0 when every job and the join succeeded."""
    executor = executor_name(settings)
    folder = settings.folder_path(root)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(folder / "fanout.lock", timeout=0):
            return _fanout(root, settings, executor, jobs or settings.max_parallel, allow_dirty, join)
    except Timeout:
        raise SpanftError(f"{folder / 'fanout.lock'}: another spanft fanout is running for this head; "
                          f"wait for it to end (or stop it) first") from None


def _fanout(root: Path, settings: ClusterSettings, executor: str, parallel: int, allow_dirty: bool,
            join: bool) -> int:
    head = head_state(root, *stage_paths(root), allow_dirty)
    upstream = finetune_upstream(root)
    if upstream:
        log.info("fanout: the stages the fine-tuning runs read, here in the head (%d)", len(upstream))
        run_dvc(root, "repro", *upstream)
    stale, fresh, cached = stale_finetune_stages(root)
    log.info("fanout: %d fine-tuning stages to send, %d up to date, %d in the cache already (the join restores them)",
             len(stale), fresh, cached)
    if stale:
        failed = send(root, head, stale, settings, executor, parallel)
        if failed:
            log.info("fanout: %d of %d jobs failed (above); the %d finished runs are kept in the run-cache: "
                     "run `spanft fanout` again to send only what is still stale", failed, len(stale),
                     len(stale) - failed)
            return 1
    if join:
        log.info("fanout: joining: `dvc repro` restores the runs from the run-cache and builds the reports")
        if settings.remote:
            run_dvc(root, "pull", "--run-cache", "--remote", settings.remote)
        run_dvc(root, "repro")
    return 0


def send(root: Path, head, stale: list[StaleStage], settings: ClusterSettings, executor: str, parallel: int) -> int:
    """Submit every stale stage, report as jobs end, and return how many failed."""
    folder = settings.folder_path(root)
    threads = job_threads(settings, executor, parallel)
    shared_cache = cache_dir(root)
    snap = snapshot(head, folder)
    calls = [StageJob(stage.name, stage.upstream, str(root), head.commit, str(snap),
                      str(folder / "workspaces" / stage.name), shared_cache, threads, settings.remote)
             for stage in stale]
    log.info("fanout: %d jobs through %s (%d at once, %d torch threads each); logs under %s",
             len(calls), executor, min(parallel, len(calls)), threads, folder / "jobs")
    logging.getLogger("submitit").setLevel(logging.ERROR)  # its "sacct not found" warnings: we fall back on squeue
    if executor == "slurm":
        ex = slurm_executor(settings, folder, parallel)
        with ex.batch():
            jobs = [ex.submit(call) for call in calls]
        submitted = [Submitted(call.stage, job) for call, job in zip(calls, jobs)]
        write_manifest(folder, submitted)
        watch(submitted, lambda: None)
    else:
        submitted = []
        waiting = list(calls)

        def top_up() -> None:  # local processes: at most `parallel` at a time, each in a free slot
            busy = {s.slot for s in submitted if not s.outcome}
            free = [slot for slot in range(parallel) if slot not in busy]
            while waiting and free:
                slot = free.pop(0)
                call = waiting.pop(0)
                submitted.append(Submitted(call.stage, local_executor(settings, folder, slot).submit(call), slot))
                write_manifest(folder, submitted)

        top_up()
        watch(submitted, top_up, total=len(calls))
    return sum(1 for s in submitted if s.outcome != "done")


def write_manifest(folder: Path, submitted: list[Submitted]) -> None:
    """``<folder>/jobs.tsv``: each stage of this submission, its job id and its log (which job is which)."""
    rows = "".join(f"{s.stage}\t{s.job.job_id}\t{s.job.paths.stderr}\n" for s in submitted)
    (folder / "jobs.tsv").write_text("stage\tjob\tlog\n" + rows, encoding="utf-8")


def watch(submitted: list[Submitted], top_up, total: int | None = None) -> None:
    """Poll until every job ended, one line per change of the counts, one line per failed job."""
    total = total or len(submitted)
    last = None
    try:
        while True:
            states = scheduler_states(submitted)
            for entry in submitted:
                if not entry.outcome:
                    entry.outcome = outcome(entry, states)
                    if entry.outcome and entry.outcome != "done":
                        log.info("fanout: FAILED %s: %s; log %s", entry.stage, entry.outcome, entry.job.paths.stderr)
            top_up()
            done = sum(1 for s in submitted if s.outcome == "done")
            failed = sum(1 for s in submitted if s.outcome and s.outcome != "done")
            running = sum(1 for s in submitted if not s.outcome and states.get(s.job.job_id, "RUNNING") == "RUNNING")
            counts = (done, running, failed)
            if counts != last:
                log.info("fanout: %d/%d done, %d running, %d failed", done, total, running, failed)
                last = counts
            if done + failed == total:
                return
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        for entry in submitted:
            if not entry.outcome:
                entry.job.cancel(check=False)
        raise


def outcome(entry: Submitted, states: dict[str, str]) -> str:
    """'' while the job is queued or running; 'done'; or why it failed (its error, or the state it ended in)."""
    job = entry.job
    if job.paths.result_pickle.exists():
        error = job.exception()
        return "done" if error is None else _last_line(str(error))
    state = (states.get(job.job_id) or job.state).upper()
    if state in CLEAN_EXIT:
        entry.exited_at = entry.exited_at or time.monotonic()
        if time.monotonic() - entry.exited_at < RESULT_GRACE_SECONDS:
            return ""
    if state in ENDED_WITHOUT_RESULT:
        return f"ended without a result ({state.lower()}: cancelled, killed or out of time)"
    return ""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "failed"


def scheduler_states(submitted: list[Submitted]) -> dict[str, str]:
    """SLURM's state of each unfinished job, from squeue (sacct may be missing); {} for local jobs."""
    ids = [s.job.job_id for s in submitted if not s.outcome and isinstance(s.job, submitit.SlurmJob)]
    if not ids:
        return {}
    done = subprocess.run(["squeue", "--noheader", "--array", "--states=all", "--format=%i %T",
                           "--jobs=" + ",".join(sorted({i.split("_")[0] for i in ids}))],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    states = dict(line.split(maxsplit=1) for line in done.stdout.splitlines() if len(line.split()) == 2)
    if done.returncode == 0:  # squeue forgets a job some minutes after it ended (MinJobAge)
        states.update({i: "COMPLETED" for i in ids if i not in states})
    return states
