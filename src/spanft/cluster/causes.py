"""Why a job failed, by its real cause: SLURM's job states and words, with the setting to change.

One cause has one wording, however the race between the job's result file and ``squeue`` falls: a job killed
by a signal (scancel, the memory limit, a file-size limit) writes its result ("dvc repro exited with -15")
before SLURM's last word (the state ``CANCELLED``, slurmstepd's ``CANCELLED AT`` or ``oom-kill`` lines); the
fan-out names the cause from the state and the logs, and waits for them a little while they may still come
(:func:`killed_by_signal`).

A job SLURM holds pending for a reason that never clears (``PartitionTimeLimit``, an invalid account, a
QOS limit per job) is cancelled and named (:func:`never_starts`); one pending for a reason that may clear
(a drained node, a partition down, a hold) is told once per reason (:func:`pending_note`).
"""

from __future__ import annotations

import logging
import re
import signal

log = logging.getLogger("spanft")

MEMORY = "out of memory: the job used more than its cluster.mem_gb{limit}: raise cluster.mem_gb (--mem-gb)"
TIMEOUT = "its time limit, before it could requeue: raise cluster.signal_delay_s or cluster.time_min"
PREEMPTED = ("pre-empted, before it could requeue: pick a cluster.partition (or QOS) without pre-emption, or raise "
             "cluster.signal_delay_s; run spanft fanout again")
NODE_FAIL = ("its node failed (NODE_FAIL): nothing to change; run spanft fanout again (tell the administrators if "
             "it repeats)")
CANCELLED = "cancelled (scancel, or an administrator)"
GPU_MEMORY = "out of GPU memory: a GPU with more memory (cluster.partition) or a smaller hparams batch_size"
FILE_SIZE = ("a file-size limit on the node (ulimit -f): add `ulimit -f unlimited` to cluster.setup, or ask for a "
             "higher limit")
READ_ONLY = "a read-only file system: cluster.folder and the DVC cache must be writable from the nodes"
CAUSES: tuple[tuple[tuple[str, ...], str], ...] = (  # (what SLURM or the system says, the cause); first match wins
    (("DUE TO TIME LIMIT",), TIMEOUT),
    (("DUE TO PREEMPTION",), PREEMPTED),
    (("DUE TO NODE FAILURE", "NODE_FAIL"), NODE_FAIL),
    # GPU memory before host memory: torch's OutOfMemoryError holds "MemoryError"
    (("CUDA out of memory", "OutOfMemoryError"), GPU_MEMORY),
    (("exceeded memory limit", "Exceeded job memory limit", "Exceeded step memory limit", "oom-kill", "oom_kill",
      "Out Of Memory", "OUT_OF_MEMORY", "MemoryError"), MEMORY),
    (("File size limit exceeded", "SIGXFSZ", "File too large"), FILE_SIZE),
    (("No space left on device",), "no space left on device: free space in cluster.folder or the DVC cache"),
    (("Disk quota exceeded",), "disk quota exceeded: free space in cluster.folder or the DVC cache"),
    (("Read-only file system",), READ_ONLY),
    (("CANCELLED AT",), CANCELLED),
)
STATES = {"OUT_OF_MEMORY": MEMORY, "NODE_FAIL": NODE_FAIL, "PREEMPTED": PREEMPTED, "TIMEOUT": TIMEOUT,
          "CANCELLED": CANCELLED, "BOOT_FAIL": "its node failed to boot (BOOT_FAIL): run spanft fanout again",
          "DEADLINE": "its deadline passed (DEADLINE): run spanft fanout again"}
LIMIT = re.compile(r"exceeded (?:job |step )?memory limit \(\d+ > (\d+)\)", re.IGNORECASE)

NEVER_STARTS = {  # pending reasons that never clear by themselves: the job is cancelled, and the setting named
    "PartitionTimeLimit": "cluster.time_min is above the partition's MaxTime: lower it (--time-min), or pick "
                          "another cluster.partition",
    "QOSMaxWallDurationPerJobLimit": "cluster.time_min is above your QOS's limit: lower it (--time-min)",
    "AssocMaxWallDurationPerJobLimit": "cluster.time_min is above your account's limit: lower it (--time-min)",
    "PartitionNodeLimit": "the job asks for more than the partition allows: check cluster.partition",
    "PartitionConfig": "the job does not fit the partition's configuration: check cluster.partition, "
                       "cpus_per_job, mem_gb, gpus_per_job",
    "BadConstraints": "no node has what the job asks for: lower cluster.cpus_per_job, mem_gb or gpus_per_job",
    "InvalidAccount": "cluster.account is not an account of yours: fix it (--account) or leave it empty",
    "InvalidQOS": "the QOS is not yours: check your account's QOS",
    "DependencyNeverSatisfied": "a dependency failed",
    "launch failed requeued held": "SLURM could not launch it on its node and held it: see the node's slurmd log",
}
PER_JOB_LIMIT = re.compile(r"^(QOS|Assoc)Max\w+PerJob(Limit)?$")  # QOSMaxCpuPerJobLimit, QOSMaxMemoryPerJob, ...
MAY_CLEAR = {  # pending reasons a user should hear of (the watch would otherwise show 0 running, nothing else)
    "ReqNodeNotAvail": "the nodes it may use are down, drained or reserved",
    "NodeDown": "a node it needs is down",
    "PartitionDown": "the partition is down",
    "PartitionInactive": "the partition is inactive",
    "Reservation": "it waits for a reservation",
    "JobHeldUser": "held by you: scontrol release ID",
    "JobHeldAdmin": "held by an administrator",
}


def cause_in(lines: list[str]) -> str | None:
    """The cause the lines name (log tails, the job's error), with its memory limit where SLURM said it."""
    for needles, cause in CAUSES:
        for line in lines:
            if any(needle in line for needle in needles):
                return _with_limit(cause, lines)
    return None


def _with_limit(cause: str, lines: list[str]) -> str:
    if cause != MEMORY:
        return cause
    limits = [int(found.group(1)) for line in lines for found in [LIMIT.search(line)] if found]
    return cause.format(limit=f" ({limits[-1] / 2**30:.1f} GiB, SLURM said)" if limits else "")


def named(state: str, lines: list[str]) -> str | None:
    """The system's cause of a job's end: from its logs, else from its final state; None when neither says."""
    found = cause_in(lines)
    if found:
        return found
    cause = STATES.get(state.upper())
    return _with_limit(cause, lines) if cause else None


def killed_by_signal(error: str) -> bool:
    """The job's own error says a command died of a signal (negative exit status): SLURM's word may follow."""
    return re.search(r"exited with -\d+|died with <Signals\.", error) is not None


def exit_words(code: int) -> str:
    """An exit status as said in a job's error: ``-25 (SIGXFSZ)`` for a signal's death."""
    if code < 0:
        try:
            return f"{code} ({signal.Signals(-code).name})"
        except ValueError:
            return str(code)
    return str(code)


def timed_out(stage: str, times: int, progress: str, checkpointed: bool) -> str:
    """A job out of requeues: what to raise; "it resumes" only for a stage that keeps checkpoints."""
    if checkpointed and "no checkpoint" in progress:  # each allocation's start-up ate its time
        return (f"timed out {times} times{progress}: raise cluster.time_min past the start-up; spanft fanout "
                f"counts the start-up these allocations recorded now and names the smallest limit that fits")
    if checkpointed:
        return (f"timed out {times} times{progress}: raise cluster.time_min (or cluster.max_timeouts), then run "
                f"spanft fanout again (it resumes)")
    return (f"timed out {times} times: {stage} keeps no checkpoint, so each allocation starts it over: raise "
            f"cluster.time_min above its whole run, then run spanft fanout again")


def never_starts(reason: str) -> str | None:
    """The cause of a job held pending for ``reason`` for good, or None when the reason may clear."""
    if reason in NEVER_STARTS:
        return f"never starts: SLURM holds it pending ({reason}): {NEVER_STARTS[reason]}; it was cancelled"
    if PER_JOB_LIMIT.match(reason):
        return (f"never starts: SLURM holds it pending ({reason}): it asks for more than a job may have: lower "
                f"cluster.time_min, cpus_per_job, mem_gb or gpus_per_job; it was cancelled")
    return None


_said: set[str] = set()


def pending_note(reasons: dict[str, str]) -> None:
    """A line, once per reason, for jobs pending for a reason that may clear (and would leave the watch mute)."""
    counts: dict[str, int] = {}
    for reason in reasons.values():
        key = next((name for name in MAY_CLEAR if reason.startswith(name)), None)
        if key:
            counts[key] = counts.get(key, 0) + 1
    for key, count in counts.items():
        if key not in _said:
            _said.add(key)
            log.info("fanout: %d job%s pending (%s): %s; they start when it clears", count, "s" if count > 1 else "",
                     key, MAY_CLEAR[key])
