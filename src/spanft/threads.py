"""How many torch threads a training process uses: one rule for every stage, test worker, fan-out job and
distributed process.

A process trains with ``threads`` (params ``threads``; ``spanft finetune --threads``) when that is above 0.
With 0 (auto) it takes the cores it may use (its CPU affinity, capped by a SLURM allocation's
``SLURM_CPUS_PER_TASK``) divided by the training processes that share them: the processes of one
``torchrun``/``accelerate`` launch (``LOCAL_WORLD_SIZE``), the pytest-xdist workers
(``PYTEST_XDIST_WORKER_COUNT``), the local jobs of ``spanft fanout`` (:data:`SHARING_ENV`, which it sets)
and the workers of ``dvc queue start -j N`` (counted from their processes). ``OMP_NUM_THREADS`` does not
change it: two processes given the same params train with the same thread count whatever the shell exports,
so a resumed run can continue the one it resumes (the count is part of every checkpoint's marker).

Why divide: OpenMP threads that outnumber the free cores spin while they wait for one. On 2 cores beside a
CPU-bound process, an embedded fine-tuning stage took 9x the wall time with 2 threads as with 1
(``benchmarks/bench_threads.py``).
"""

from __future__ import annotations

import os
from typing import Mapping

SHARING_ENV = "SPANFT_PROCESSES"  # set by whoever starts N training processes that share this machine's cores
_SHARING_VARIABLES = ("LOCAL_WORLD_SIZE", "PYTEST_XDIST_WORKER_COUNT", SHARING_ENV)
_QUEUE_WORKER = ("exp", "queue-worker")  # dvc exp queue-worker dvc-exp-<wdir hash>-<n>@localhost


def usable_cores(environ: Mapping[str, str] = os.environ) -> int:
    """The cores this process may run on: its CPU affinity (a cgroup, ``taskset``, a SLURM step), capped by
    ``SLURM_CPUS_PER_TASK`` where a SLURM job does not pin its tasks."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    allocated = _positive_int(environ.get("SLURM_CPUS_PER_TASK"))
    return max(1, min(cores, allocated) if allocated else cores)


def processes_sharing(environ: Mapping[str, str] = os.environ) -> int:
    """How many training processes share this process's cores (itself included)."""
    counts = [_positive_int(environ.get(name)) or 1 for name in _SHARING_VARIABLES]
    return max([*counts, queue_workers()])


def thread_count(requested: int = 0, environ: Mapping[str, str] = os.environ) -> int:
    """``requested`` when above 0, else the usable cores divided by the processes sharing them (at least 1)."""
    if requested > 0:
        return requested
    return max(1, usable_cores(environ) // processes_sharing(environ))


def use_threads(requested: int = 0) -> int:
    """Set torch's intra-op thread count by :func:`thread_count`; return it."""
    import torch  # here, not at the top: stages that train nothing import this module without torch

    count = thread_count(requested)
    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
    return count


def queue_workers() -> int:
    """The ``dvc exp queue-worker`` processes of this process's queue, when one of them is its ancestor; else 1."""
    try:
        import psutil

        node = next((_queue_node(p) for p in psutil.Process().parents() if _queue_node(p)), None)
        if node is None:
            return 1
        prefix = node.rpartition("-")[0]  # dvc-exp-<wdir hash>: the workers of one queue
        return max(1, sum(1 for p in psutil.process_iter() if (_queue_node(p) or "").startswith(prefix + "-")))
    except Exception:  # a process vanished or may not be read: nothing to count
        return 1


def _queue_node(process) -> str | None:
    try:
        command = process.cmdline()
    except Exception:
        return None
    for i in range(len(command) - 2):
        if tuple(command[i:i + 2]) == _QUEUE_WORKER:
            return command[i + 2]
    return None


def _positive_int(value: str | None) -> int | None:
    try:
        number = int(str(value).strip())
    except ValueError:
        return None
    return number if number > 0 else None
