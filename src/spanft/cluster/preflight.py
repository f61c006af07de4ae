"""What ``spanft fanout`` checks before it spends anything: each check takes a moment and refuses in one line that
names the cause and the fix, before the upstream stages run and before a job is sent.

- the scheduler answers (``squeue --me``);
- SLURM takes jobs of these resources, within the partition's MaxTime (a drained node is no mismatch);
- the job folder and the shared DVC cache (its files and its run-cache) can be written from here; each job checks
  the cache again before it trains (:func:`check_writable`), so an unwritable cache never costs a training;
- the job folder has room for the checkpoints of the jobs that run at once (from the backbones' sizes);
- the jobs get this shell's environment: a site's ``SBATCH_EXPORT=NONE`` is lifted for the submission
  (:func:`submission_environment`), and every job checks that it got it;
- the time limit leaves time to train: time limit - signal lead (with SLURM's ~30 s slack) - start-up >= one
  checkpoint interval, the start-up being the slowest the job folder's recent jobs showed where that is longer
  than ``cluster.startup_s`` (:mod:`spanft.cluster.startups`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import yaml

from spanft.cluster import partition, startups
from spanft.cluster.timelimit import SIGNAL_SLACK_S
from spanft.errors import Context, SpanftError, parts
from spanft.params.cluster import ClusterSettings

log = logging.getLogger("spanft")

SCHEDULER_TIMEOUT_S = 20
CHECKPOINTS_PER_RUN = 2  # the best epoch's and the last one (save_total_limit=1 keeps the best besides)
COPIES_PER_CHECKPOINT = 3  # the weights, and the optimizer's two moments (Adam)
ENVIRONMENT_TOKEN = "SPANFT_FANOUT_SUBMISSION"  # set here, checked by each job: it got this shell's environment
EXPORT_VARIABLES = ("SBATCH_EXPORT", "SLURM_EXPORT_ENV")  # site defaults that would keep the environment from jobs


@dataclass(frozen=True)
class TimeBudget:
    """A job's time limit, spent: the signal's lead, the start-up, and what is left to train."""

    lead_s: int  # the signal's lead, with SLURM's slack
    startup_s: int  # cluster.startup_s, or the slowest start-up recorded here where that is longer
    startup_words: str  # where the start-up comes from
    left_s: int  # time to train before the signal
    minimum_min: int  # the smallest time limit that leaves one checkpoint interval


def time_budget(settings: ClusterSettings, executor: str, folder: Path | None = None) -> TimeBudget:
    """How a job's time limit is spent. The start-up is the larger of ``cluster.startup_s`` and the slowest of
    the recent allocations recorded in the job folder (:mod:`spanft.cluster.startups`)."""
    lead = settings.signal_delay_s + SIGNAL_SLACK_S if executor == "slurm" else 0  # SLURM signals up to 30 s early
    found = startups.learned(folder / startups.RECORD, executor) if folder is not None else None
    if found is not None and found.seconds > settings.startup_s:
        startup, words = found.seconds, f"{found.words()}; cluster.startup_s {settings.startup_s}"
    else:
        startup, words = settings.startup_s, "cluster.startup_s"
    minimum = -(-(lead + startup + settings.checkpoint_every_s) // 60)
    return TimeBudget(lead, startup, words, settings.time_min * 60 - lead - startup, max(1, minimum))


def check_time_limit(settings: ClusterSettings, executor: str, folder: Path | None = None) -> TimeBudget:
    """A job must have time to train past its start-up (the one this cluster showed, where jobs ran already)
    and reach a checkpoint before its time-limit signal."""
    if executor == "slurm" and settings.signal_delay_s < 1:
        raise SpanftError("cluster.signal_delay_s 0: SLURM would stop a job at its limit without the signal that "
                          "lets it checkpoint and requeue; give it a lead (90 s by default)")
    budget = time_budget(settings, executor, folder)
    if budget.left_s < settings.checkpoint_every_s:
        raise SpanftError(parts(
            f"cluster.time_min {settings.time_min}: {settings.time_min * 60} s less the signal's lead "
            f"({budget.lead_s} s, signal_delay_s{_slack(executor)}) and the start-up (~{budget.startup_s} s, ",
            Context(budget.startup_words),
            f") leaves {budget.left_s} s to train, under one checkpoint interval ({settings.checkpoint_every_s} s, "
            f"checkpoint_every_s): --time-min {budget.minimum_min} leaves one (or lower checkpoint_every_s)"))
    return budget


def _slack(executor: str) -> str:
    return f" + {SIGNAL_SLACK_S} s of SLURM's cycle" if executor == "slurm" else ""


def _slurm(command: list[str]) -> str | None:
    """Run a SLURM client command within seconds: None when it succeeded, else the last line it said. A missing
    client or a controller that does not answer in time is refused at once."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=SCHEDULER_TIMEOUT_S)
    except FileNotFoundError:
        raise SpanftError(f"{command[0]} is not on the PATH: run spanft fanout where SLURM's commands are (a login "
                          f"node), or use --executor local") from None
    except subprocess.TimeoutExpired:
        raise SpanftError(f"SLURM does not answer: {' '.join(command[:2])} took over {SCHEDULER_TIMEOUT_S} s; "
                          f"nothing was run or sent: try again when the controller is back (or check SLURM_CONF)") from None
    if done.returncode == 0:
        return None
    said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return said[-1] if said else f"exit {done.returncode}"


def check_scheduler() -> None:
    """SLURM's controller answers ``squeue --me``, within seconds."""
    said = _slurm(["squeue", "--me", "--noheader", "--format=%i"])
    if said is not None:
        raise SpanftError(f"SLURM does not answer: squeue --me failed ({said}); nothing was run or sent: try again "
                          f"when the controller is back (or check SLURM_CONF)")


def check_resources(settings: ClusterSettings) -> None:
    """SLURM would take a job of these resources (``sbatch --test-only``): a partition that does not exist, more
    CPUs, memory or GPUs than any node has, an account not yours, are told now, not after the upstream stages
    (nor as jobs that stay pending for ever). A partition whose MaxTime is under ``time_min`` is refused first;
    a refusal for drained or down nodes that would fit is not: the jobs queue until they return
    (:mod:`spanft.cluster.partition`)."""
    partition.check_max_time(settings)
    said = _slurm(["sbatch", "--test-only", "--nodes=1", f"--cpus-per-task={settings.cpus_per_job}",
                   f"--mem={settings.mem_gb}G", f"--time={settings.time_min}", "--job-name=spanft-fanout-check",
                   *([f"--partition={settings.partition}"] if settings.partition else []),
                   *([f"--account={settings.account}"] if settings.account else []),
                   *([f"--gpus-per-node={settings.gpus_per_job}"] if settings.gpus_per_job else []),
                   "--wrap", "true"])
    if said is None:
        return
    held = partition.held_nodes_that_fit(settings)
    if held:
        log.info("fanout: SLURM cannot start the jobs now (%s): the nodes that fit are %s; the jobs queue until "
                 "they return", said, ", ".join(f"{node.name} {node.state}" for node in held[:3]))
        return
    raise SpanftError(
        f"SLURM would refuse the jobs ({said}): {settings.cpus_per_job} CPUs, {settings.mem_gb} GB, "
        f"{settings.gpus_per_job} GPUs, {settings.time_min} min, partition {settings.partition or '(default)'}"
        f"{partition.largest(settings)}; set --partition, --cpus, --mem-gb, --gpus, --time-min (cluster.*) to "
        f"what `sinfo` offers; nothing was run or sent")


def check_writable(folder: Path, what: str, fix: str) -> None:
    """A file can be created in ``folder`` (or, where it does not exist yet, in its nearest existing parent):
    a real write, which a read-only mount, a full disk or an exhausted quota refuse as they would refuse DVC."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".spanft-write-check-") as handle:
            handle.write(b"x")
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as error:
        raise SpanftError(f"{what} {folder}: cannot be written ({error.strerror or error}); {fix}") from None


def check_cache(cache: str) -> None:
    """The shared DVC cache takes files (the runs' outputs) and run-cache entries (what the join restores)."""
    fix = ("make it writable (or free space), or point the head at a cache of your own: "
           "dvc cache dir --local PATH")
    for part in ("files", "runs"):
        check_writable(Path(cache) / part, "the DVC cache", fix)


def backbone_bytes(root: Path, backbones: set[str]) -> dict[str, int]:
    """Each backbone's size: its folder's files where it is built already, else what dvc.lock records for it."""
    sizes = {}
    try:
        lock = yaml.safe_load((root / "dvc.lock").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        lock = {}
    recorded = {out.get("path"): out.get("size") for stage in (lock.get("stages") or {}).values()
                for out in (stage.get("outs") or []) if isinstance(out, dict)}
    for name in backbones:
        folder = root / "data" / "backbones" / name
        if folder.is_dir():
            sizes[name] = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        elif isinstance(recorded.get(f"data/backbones/{name}"), int):
            sizes[name] = recorded[f"data/backbones/{name}"]
    return sizes


def check_room(folder: Path, per_job: int, parallel: int) -> None:
    """The job folder's disk holds the checkpoints of ``parallel`` jobs of ``per_job`` bytes each."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    free, need = shutil.disk_usage(existing).free, per_job * parallel
    if free < need:
        raise SpanftError(
            f"cluster.folder {folder}: {_gb(free)} free, but {parallel} jobs at once keep checkpoints of about "
            f"{_gb(need)} ({_gb(per_job)} each: {CHECKPOINTS_PER_RUN} of {COPIES_PER_CHECKPOINT}x the backbone); "
            f"free space, lower --jobs (cluster.max_parallel) or move cluster.folder")


def checkpoint_bytes(root: Path, backbones: set[str]) -> int | None:
    """The largest checkpoint directory one job keeps, or None while a backbone's size is unknown."""
    sizes = backbone_bytes(root, backbones)
    if set(sizes) != backbones:
        return None
    return max(sizes.values(), default=0) * CHECKPOINTS_PER_RUN * COPIES_PER_CHECKPOINT


def _gb(size: int) -> str:
    return f"{size / 1e9:.1f} GB" if size >= 1e8 else f"{size / 1e6:.1f} MB"


@contextlib.contextmanager
def submission_environment(token: str) -> Iterator[None]:
    """Submit with this shell's environment for the jobs: a site default ``SBATCH_EXPORT=NONE`` (or
    ``SLURM_EXPORT_ENV``) would start them without the PATH and virtual environment they need. The variables
    are lifted for the submission alone; ``token`` is what each job checks it received."""
    saved = {name: os.environ.pop(name) for name in EXPORT_VARIABLES if name in os.environ}
    limited = {name: value for name, value in saved.items() if value.strip().upper() not in ("ALL", "")}
    if limited:
        log.info("fanout: %s in your environment: the jobs are sent with your whole environment all the same "
                 "(they need its PATH and virtual environment)", ", ".join(f"{k}={v}" for k, v in limited.items()))
    os.environ[ENVIRONMENT_TOKEN] = token
    try:
        yield
    finally:
        os.environ.update(saved)


def check_job_environment(token: str) -> None:
    """In the job: it must have got the environment of the shell that sent it."""
    if token and os.environ.get(ENVIRONMENT_TOKEN) != token:
        raise SpanftError("the job did not get your environment (a site default such as SBATCH_EXPORT=NONE, or a "
                          "prolog that resets it): put the lines that set it up (module load ..., source "
                          "VENV/bin/activate) in cluster.setup")
