"""``spanft fanout``: the fine-tuning stages as a SLURM job array (or local processes), joined by DVC."""

from __future__ import annotations

import argparse
import os
import sqlite3
from pathlib import Path

from spanft.errors import SpanftError


def add_fanout(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fanout", help="run the graph with every stale fine-tuning stage as a SLURM array job "
                                      "(or a local process); the head's dvc repro then joins them")
    p.add_argument("--root", default=".", help="the head repo (its params.yaml holds the cluster block)")
    p.add_argument("--executor", choices=["auto", "slurm", "local"], default=None,
                   help="slurm, local processes, or auto: slurm where sbatch is found (default: cluster.executor)")
    p.add_argument("--jobs", type=int, default=None,
                   help="jobs at once (default cluster.max_parallel); local: they share the cores (torch threads: params threads, 0 = cores / jobs)")
    p.add_argument("--partition", default=None, help="slurm partition (default cluster.partition)")
    p.add_argument("--account", default=None, help="slurm account (default cluster.account)")
    p.add_argument("--gpus", dest="gpus_per_job", type=int, default=None, help="GPUs per job (cluster.gpus_per_job)")
    p.add_argument("--cpus", dest="cpus_per_job", type=int, default=None, help="CPUs per job (cluster.cpus_per_job)")
    p.add_argument("--mem-gb", type=int, default=None, help="memory per job in GB (cluster.mem_gb)")
    p.add_argument("--time-min", type=int, default=None,
                   help="time limit per job in minutes; a job that reaches it is requeued and resumes (cluster.time_min)")
    p.add_argument("--folder", default=None, help="job workspaces and logs, seen by every node (cluster.folder)")
    p.add_argument("--remote", default=None, help="DVC remote the jobs push their runs to (cluster.remote)")
    p.add_argument("--allow-dirty", action="store_true",
                   help="send the head's uncommitted code and params with the jobs (default: refuse them)")
    p.add_argument("--no-join", dest="join", action="store_false",
                   help="stop when the jobs are done (default: then `dvc repro` in the head)")
    p.add_argument("--cancel-changed", action="store_true",
                   help="cancel the jobs of an earlier call whose stages this commit changed, and send them anew "
                        "(default: refuse; the jobs of unchanged stages are watched either way)")
    p.set_defaults(run=fanout)


def logical_path(path: str) -> Path:
    """``path`` made absolute the way the shell shows it (``pwd -L``): symbolic links are kept, because the jobs
    get these paths and compute nodes may reach the project only through the name the user gave it."""
    cwd = os.environ.get("PWD", "")
    try:
        base = cwd if cwd and os.path.isabs(cwd) and os.path.samefile(cwd, ".") else os.getcwd()
    except OSError:
        base = os.getcwd()
    return Path(os.path.normpath(os.path.join(base, os.path.expanduser(path))))


def fanout(args: argparse.Namespace) -> int:
    from dvc.exceptions import DvcException

    from spanft.cluster.fanout import fanout
    from spanft.params.plan import load_plan
    from spanft.stage.dvc_room import index_failed

    root = logical_path(args.root)
    settings = load_plan(root / "params.yaml").cluster
    overrides = {key: getattr(args, key) for key in ("executor", "partition", "account", "gpus_per_job",
                                                     "cpus_per_job", "mem_gb", "time_min", "folder", "remote")}
    settings = settings.with_overrides(**overrides).checked("command line")
    if args.jobs is not None and args.jobs < 1:
        raise SpanftError(f"--jobs must be at least 1, found {args.jobs}")
    try:
        return fanout(root, settings, args.jobs, args.allow_dirty, args.join, args.cancel_changed)
    except DvcException as error:  # not a DVC project, a dvc.yaml or dvc.lock DVC cannot read, ...
        said = [line for line in str(error).splitlines() if line.strip()]
        raise SpanftError(f"{root}: dvc: {said[0] if said else type(error).__name__}") from None
    except sqlite3.Error as error:  # DVC's index and state databases: a full, limited or lock-less disk
        raise SpanftError(index_failed(root, error)) from None
