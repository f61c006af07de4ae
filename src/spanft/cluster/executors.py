"""Where the fan-out's jobs run: SLURM through submitit (one job array) or local processes, and their shares.

:func:`executor_name` picks SLURM or local, :func:`job_cores` and :func:`local_slots` size the jobs (cores,
GPUs, how many at once), and :func:`slurm_executor` / :func:`local_executor` / :func:`submit_array` hand them to
submitit; sbatch's refusal is one line.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

import submitit
from submitit.core.utils import FailedJobError

from spanft.cluster.job import StageJob
from spanft.cluster.tracking import Submitted
from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings
from spanft.threads import SHARING_ENV, thread_count

log = logging.getLogger("spanft")


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


def at_once(settings: ClusterSettings, executor: str, parallel: int) -> int:
    """How many jobs run at once: ``parallel`` on SLURM, what the local GPUs allow locally."""
    return parallel if executor == "slurm" else local_slots(settings, parallel)


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
