"""The partition as ``sinfo`` describes it: its time limit (MaxTime) and its nodes' sizes in any state.

``sbatch --test-only`` refuses a job for a drained or down node just as for one no node could hold; a plain
``sbatch`` of the first would queue until the node returns. The pre-flight tells them apart by the nodes'
sizes (:func:`held_nodes_that_fit`). A ``time_min`` above the partition's MaxTime is accepted by sbatch and then
pends ``PartitionTimeLimit`` for ever: it is refused here first (:func:`check_max_time`). A ``sinfo`` that fails
decides nothing: sbatch's own test still runs.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from spanft.cluster.timelimit import slurm_duration_s
from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings

SINFO_TIMEOUT_S = 20
USABLE = ("idle", "mixed", "allocated", "completing", "planned")  # states a node takes jobs in (now or soon)
GPUS = re.compile(r"gpu(?::[^:,()]+)?:(\d+)")


@dataclass(frozen=True)
class Node:
    name: str
    cpus: int
    mem_mb: int
    gpus: int
    state: str  # sinfo's %T: idle, mixed, drained, down*, ...
    partitions: tuple[str, ...]  # without the default's '*'

    @property
    def usable(self) -> bool:
        return self.state.rstrip("*~#!%$@^-+").lower() in USABLE

    def fits(self, settings: ClusterSettings) -> bool:
        return (self.cpus >= settings.cpus_per_job and self.mem_mb >= settings.mem_gb * 1024
                and self.gpus >= settings.gpus_per_job)


def _sinfo(*args: str) -> list[str] | None:
    """sinfo's lines, or None when it is missing, fails or does not answer in time."""
    try:
        done = subprocess.run(["sinfo", "--noheader", *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=SINFO_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.splitlines() if done.returncode == 0 else None


def partitions() -> dict[str, float | None] | None:
    """Partition -> its MaxTime in seconds (None: unlimited); the default partition also as ''."""
    lines = _sinfo("--format=%P|%l")
    if lines is None:
        return None
    found: dict[str, float | None] = {}
    for line in lines:
        name, _, limit = line.strip().partition("|")
        seconds = slurm_duration_s(limit)
        found[name.rstrip("*")] = seconds
        if name.endswith("*"):
            found[""] = seconds
    return found


def nodes() -> list[Node] | None:
    """Every node in any state (drained and down ones too), with its partitions merged."""
    lines = _sinfo("--Node", "--format=%N|%c|%m|%G|%T|%P")
    if lines is None:
        return None
    merged: dict[str, Node] = {}
    for line in lines:
        fields = line.strip().split("|")
        if len(fields) != 6 or not fields[1].isdigit() or not fields[2].isdigit():
            continue
        name, cpus, mem, gres, state, part = fields
        gpus = sum(int(count) for count in GPUS.findall(gres))
        before = merged.get(name)
        parts = (*(before.partitions if before else ()), part.rstrip("*"), *(("",) if part.endswith("*") else ()))
        merged[name] = Node(name, int(cpus), int(mem), gpus, state, parts)
    return list(merged.values())


def check_max_time(settings: ClusterSettings) -> None:
    """``time_min`` within the partition's MaxTime (refused now: SLURM would hold the jobs pending for ever)."""
    known = partitions()
    if not known or settings.partition not in known:
        return  # sinfo silent, or a partition sbatch's own test will name
    limit = known[settings.partition]
    if limit is not None and settings.time_min * 60 > limit:
        name = settings.partition or "(the default)"
        raise SpanftError(f"cluster.time_min {settings.time_min}: partition {name}'s MaxTime is {_minutes(limit)}; "
                          f"SLURM would hold the jobs pending (PartitionTimeLimit) for ever: lower --time-min "
                          f"(cluster.time_min) or set --partition; nothing was run or sent")


def held_nodes_that_fit(settings: ClusterSettings) -> list[Node] | None:
    """When no node that fits takes jobs now but some in the partition would (drained, down): those nodes;
    [] when a usable one fits or none fits at all; None when sinfo cannot tell."""
    found = nodes()
    if found is None:
        return None
    fitting = [node for node in found if settings.partition in node.partitions and node.fits(settings)]
    if any(node.usable for node in fitting):
        return []
    return fitting


def largest(settings: ClusterSettings) -> str:
    """What the partition's nodes offer at most (in any state), for a refusal; '' when sinfo cannot tell."""
    found = [node for node in nodes() or [] if settings.partition in node.partitions]
    if not found:
        return ""
    return (f"; the partition's nodes offer at most {max(n.cpus for n in found)} CPUs, "
            f"{max(n.mem_mb for n in found) / 1024:.0f} GB, {max(n.gpus for n in found)} GPUs")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min"
