"""Params ``cluster``: how ``spanft fanout`` sends the fine-tuning stages (with the command line's overrides)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from spanft.errors import SpanftError

EXECUTORS = ("auto", "slurm", "local")


@dataclass(frozen=True)
class ClusterSettings:
    """How the fine-tuning stages are sent: params ``cluster`` (README "Running the paper profile on a cluster")."""

    executor: str = "auto"  # auto: slurm where sbatch is on the PATH, else local processes
    partition: str = ""  # slurm: '' = the cluster's default partition
    account: str = ""  # slurm: '' = the user's default account
    gpus_per_job: int = 0
    cpus_per_job: int = 2  # slurm: CPUs each job asks for (and its torch threads); local: cores / jobs
    mem_gb: int = 16  # slurm: memory each job asks for
    time_min: int = 60  # a job's time limit; a job that reaches it is requeued and resumes from its checkpoint
    max_parallel: int = 64  # jobs running at once (slurm_array_parallelism; local: --jobs)
    folder: str = ".fanout"  # job workspaces, logs and submitit files: on a filesystem every node sees
    remote: str = ""  # a DVC remote the jobs push their runs to (dvc push --run-cache); '' = the shared cache
    setup: tuple[str, ...] = ()  # slurm: shell lines each job runs first (module load ..., source venv/bin/activate)
    signal_delay_s: int = 90  # slurm: the time-limit signal comes this long before the limit (submitit's lead)
    checkpoint_every_s: int = 1200  # a job also checkpoints after this much training, not only at epoch ends
    startup_s: int = 60  # a job's start before training (imports, workspace, dvc checkout): the time check's estimate
    max_timeouts: int = 3  # slurm: requeues after a time limit before the job gives up (submitit's max_num_timeout)
    scheduler_patience_s: int = 600  # slurm: how long squeue may fail in a row before the fan-out stops watching

    def with_overrides(self, **overrides) -> "ClusterSettings":
        """These settings with every override that is not None."""
        return replace(self, **{key: value for key, value in overrides.items() if value is not None})

    def checked(self, source: str) -> "ClusterSettings":
        """Raise :class:`SpanftError` naming the bad setting; ``source`` names where the settings came from."""
        if self.executor not in EXECUTORS:
            raise SpanftError(f"{source}: cluster.executor: {self.executor!r} is not one of {', '.join(EXECUTORS)}")
        for name in ("cpus_per_job", "mem_gb", "time_min", "max_parallel", "checkpoint_every_s",
                     "scheduler_patience_s"):
            if getattr(self, name) < 1:
                raise SpanftError(f"{source}: cluster.{name} must be at least 1, found {getattr(self, name)!r}")
        for name in ("gpus_per_job", "signal_delay_s", "startup_s", "max_timeouts"):
            if getattr(self, name) < 0:
                raise SpanftError(f"{source}: cluster.{name} must be at least 0, found {getattr(self, name)!r}")
        if not self.folder.strip():
            raise SpanftError(f"{source}: cluster.folder is empty: name the folder for job workspaces and logs")
        return self

    def folder_path(self, root: Path) -> Path:
        """The job folder as an absolute path, symbolic links kept: compute nodes may mount the project under
        another name, so the path the user gave is the one every node can follow."""
        return Path(os.path.normpath(root / os.path.expanduser(self.folder)))


def settings_from_params(block: dict, source: str) -> ClusterSettings:
    """The ``cluster`` block of a checked params tree as settings (its types are checked by the schema)."""
    values = {key: tuple(value) if key == "setup" else value for key, value in block.items()}
    return ClusterSettings(**values).checked(source)
