"""Which job is which, and where each stands: the submission manifests, the scheduler's states, outcomes.

Each submission has its own folder, ``<folder>/jobs/<submission>/``: submitit's files of its jobs and a
``jobs.tsv`` (stage, executor, job id, log, and a local job's start time); ``<folder>/jobs.tsv`` is a copy of
the latest. Job ids are not
unique over time (local ids are process ids; a new SLURM controller counts from 1 again), so a job's files are
only ever read from its own submission's folder. SLURM states come from ``squeue`` (``sacct`` needs an
accounting database that small clusters lack); a job squeue no longer lists has ended.
"""

from __future__ import annotations

import getpass
import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import submitit

from spanft.cluster import causes
from spanft.errors import SpanftError
from spanft.params.plan import GROUPS as FINETUNE_GROUPS

MANIFEST = "jobs.tsv"
ACTIVE = ("PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "COMPLETING",
          "SUSPENDED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED")
ALLOCATION_MARKS = ("Starting with JobEnvironment", "spanft fanout job: started")  # submitit's (.out), the job's (.err)
CLEAN_EXIT = ("COMPLETED", "FINISHED")  # ended well: its result file may still be on its way (a network filesystem)
RESULT_GRACE_SECONDS = 30.0


@dataclass
class Submitted:
    stage: str
    job: submitit.Job
    slot: int = 0  # local: which of the --jobs places it runs in
    outcome: str = ""  # '' while queued or running, then 'done' or why it failed
    exited_at: float | None = None  # when the scheduler first said it exited well (waiting for its result file)
    started: str = ""  # local: its controller process's start time, which with the pid names that process alone
    workspace: str = ""  # the stage's workspace (where its checkpoints tell how far it got)
    max_timeouts: int = 3  # requeues after a time limit that the job was allowed

    def __post_init__(self) -> None:
        if self.executor == "local" and not self.started:
            self.started = process_start(self.job.job_id)

    @property
    def executor(self) -> str:
        return "slurm" if isinstance(self.job, submitit.SlurmJob) else "local"


def new_submission(folder: Path) -> Path:
    """A fresh folder for one submission's jobs: ``<folder>/jobs/<time>-<pid>``."""
    path = folder / "jobs" / f"{time.strftime('%Y%m%d-%H%M%S')}-{psutil.Process().pid}"
    path.mkdir(parents=True)
    return path


def write_manifest(submission: Path, submitted: list[Submitted]) -> None:
    """The submission's ``jobs.tsv`` (stage, executor, job id, log, start), and a copy as ``<folder>/jobs.tsv``."""
    rows = "".join(f"{s.stage}\t{s.executor}\t{s.job.job_id}\t{s.job.paths.stderr}\t{s.started}\n"
                   for s in submitted)
    text = "stage\texecutor\tjob\tlog\tstarted\n" + rows
    (submission / MANIFEST).write_text(text, encoding="utf-8")
    (submission.parent.parent / MANIFEST).write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class Active:
    """A job of an earlier submission that is still queued or running."""

    job: str
    executor: str
    submission: Path  # its submission's folder (submitit's files of the job are below it)


def still_active(folder: Path) -> dict[str, Active]:
    """Stage -> every job of an earlier submission that is still queued or running."""
    recorded = []
    for manifest in sorted((folder / "jobs").glob(f"*/{MANIFEST}")):
        for line in manifest.read_text(encoding="utf-8").splitlines()[1:]:
            fields = line.split("\t")
            if len(fields) in (4, 5):  # 4: written before local jobs recorded their start
                recorded.append((*fields[:3], fields[4] if len(fields) == 5 else None, manifest.parent))
    slurm = {job for _, executor, job, _, _ in recorded if executor == "slurm"}
    live = slurm_states(slurm) if slurm else {}
    return {stage: Active(job, executor, submission) for stage, executor, job, started, submission in recorded
            if (live.get(job, "") in ACTIVE if executor == "slurm" else local_job_alive(job, started))}


def process_start(job_id: str) -> str:
    """A process's start as the manifest records it ('' when it is gone already): its start in clock ticks after
    boot (``/proc/<pid>/stat``, field 22), which no change of the wall clock moves; elsewhere psutil's start time."""
    try:
        pid = int(job_id)
        stat = Path(f"/proc/{pid}/stat")
        if stat.parent.parent.is_dir() and Path("/proc/self/stat").is_file():
            return "ticks:" + stat.read_text(encoding="ascii").rpartition(")")[2].split()[19]
        return f"{psutil.Process(pid).create_time():.3f}"
    except (ValueError, OSError, IndexError, psutil.Error):
        return ""


def local_job_alive(job_id: str, started: str | None) -> bool:
    """A local job's id is its controller's process id: alive while the process of that id and start time runs.

    The start time tells the controller from a later process that got its id back, from the moment it is
    forked (a command line is its parent's until it execs). A manifest without start times (older ones) falls
    back to the command line, which by then is long exec'd.
    """
    try:
        process = psutil.Process(int(job_id))
        if started is None:
            return process.is_running() and "submitit" in " ".join(process.cmdline())
        return bool(started) and process.is_running() and process_start(job_id) == started
    except (ValueError, psutil.Error):
        return False


def slurm_states(job_ids: set[str]) -> dict[str, str]:
    """squeue's state of each of the user's jobs, array elements one by one (``123_4``).

    Raises :class:`SpanftError` when squeue is missing or fails: then nobody can tell which jobs still run.
    """
    command = ["squeue", "--noheader", "--array", "--states=all", "--format=%i %T %r", f"--user={getpass.getuser()}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SpanftError("squeue is not on the PATH: cannot tell whether the SLURM jobs of spanft fanout still "
                          "run (run it where SLURM's commands are, e.g. a login node)") from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise SpanftError(f"squeue failed ({said}): cannot tell whether the SLURM jobs of spanft fanout still run")
    rows = [line.split(maxsplit=2) for line in done.stdout.splitlines() if len(line.split()) >= 2]
    states = {row[0]: row[1] for row in rows}
    # squeue forgets a job some minutes after it ended (MinJobAge): one it does not list has ended
    return States({job: states.get(job, "COMPLETED") for job in job_ids},
                  {row[0]: row[2] for row in rows if len(row) == 3 and row[0] in job_ids and row[1] == "PENDING"})


class States(dict):
    """Job id -> squeue's state; ``reasons``: job id -> the reason a pending job waits (squeue's ``%r``)."""

    def __init__(self, states: dict[str, str], reasons: dict[str, str] | None = None):
        super().__init__(states)
        self.reasons = reasons or {}


def scheduler_states(submitted: list[Submitted]) -> dict[str, str] | None:
    """The scheduler's state of each unfinished SLURM job of this submission ({} for local jobs); None when
    squeue failed (a busy or lost controller: no news this time, the jobs count as still running)."""
    ids = {s.job.job_id for s in submitted if not s.outcome and s.executor == "slurm"}
    try:
        return slurm_states(ids) if ids else {}
    except SpanftError:
        return None


def outcome(entry: Submitted, states: dict[str, str]) -> str:
    """'' while the job is queued or running; 'done'; or why it failed, in its real cause's words
    (:mod:`spanft.cluster.causes`: one wording per cause, whichever of the result file and squeue comes first)."""
    job = entry.job
    if job.paths.result_pickle.exists():
        state = (states.get(job.job_id) or "").upper()
        error = job.exception()
        if error is None:
            return "done"
        if "timed-out too many times" in str(error):
            return causes.timed_out(entry.stage, entry.max_timeouts + 1, progress(Path(entry.workspace)),
                                    checkpointed(entry.stage))
        said = causes.named(state, [*_last_run(job.paths.stderr), *_last_run(job.paths.stdout), str(error)])
        if said:
            return said
        if causes.killed_by_signal(str(error)) and _awaiting_word(entry, state):
            return ""  # SLURM's own word (the state, slurmstepd's line) may still come
        return log_error(job.paths.stderr) or log_error(job.paths.stdout) or error_line(str(error))
    state = (states.get(job.job_id) or job.state).upper()
    if state == "PENDING":
        return _pending(entry, getattr(states, "reasons", {}).get(job.job_id, ""))
    if state in CLEAN_EXIT:
        entry.exited_at = entry.exited_at or time.monotonic()
        if time.monotonic() - entry.exited_at < RESULT_GRACE_SECONDS:
            return ""
    if state not in ACTIVE and state not in ("UNKNOWN", "READY"):
        return no_result_cause(job.paths.stderr, job.paths.stdout, state)
    return ""


def _awaiting_word(entry: Submitted, state: str) -> bool:
    """Still within the grace for SLURM's last word on a job its scheduler has not called ended."""
    if state not in ACTIVE:
        return False
    entry.exited_at = entry.exited_at or time.monotonic()
    return time.monotonic() - entry.exited_at < RESULT_GRACE_SECONDS


def _pending(entry: Submitted, reason: str) -> str:
    """A job pending for a reason that never clears is cancelled, and named; otherwise still waiting."""
    said = causes.never_starts(reason)
    if said:
        entry.job.cancel(check=False)
        return said
    return ""


def checkpointed(stage: str) -> bool:
    """The stage is a fine-tuning run (its job resumes from checkpoints); step_cost starts over."""
    return stage.split("@")[0] in FINETUNE_GROUPS


CANCELLED = causes.CANCELLED


def no_result_cause(stderr: Path, stdout: Path, state: str) -> str:
    """Why a job that left no result ended: the cause its logs or its state name, else the stage's own error."""
    tails = [_last_run(stderr), _last_run(stdout)]
    said = causes.named(state, [*tails[0], *tails[1]])
    if said:
        return said
    said = log_error(stderr) or log_error(stdout)
    if said:
        return f"ended without a result: {said}"
    if not any(tails):
        room = shutil.disk_usage(_existing(stderr.parent)).free
        if room < 1 << 20:
            return f"ended without a result: no space left on device in {stderr.parent} (its logs are empty)"
        return (f"ended without a result ({state.lower()}) and wrote no log: it could not start, or could not write "
                f"{stderr.parent} (a cluster.folder the compute nodes do not see; a site default such as "
                f"SBATCH_EXPORT=NONE; cluster.setup)")
    return f"ended without a result ({state.lower()}: killed or out of time)"


def _last_run(log: Path) -> list[str]:
    """The log lines of the job's last allocation (a requeued job appends to its logs; the requeue's own
    ``CANCELLED ... DUE TO JOB REQUEUE`` is no cause)."""
    lines = _tail(log)
    starts = [index for index, line in enumerate(lines) if any(mark in line for mark in ALLOCATION_MARKS)]
    return [line for line in lines[starts[-1] if starts else 0:] if "DUE TO JOB REQUEUE" not in line]


def progress(workspace: Path) -> str:
    """How far a run got: its latest checkpoint's epoch and step (``trainer_state.json``), or ''."""
    def step(path: Path) -> int:
        number = path.parent.name.removeprefix("checkpoint-")
        return int(number) if number.isdigit() else -1

    states = sorted(workspace.glob("data/checkpoints/**/checkpoint-*/trainer_state.json"), key=step)
    if not states:
        return ", with no checkpoint written (each allocation ended before the first)"
    try:
        state = json.loads(states[-1].read_text(encoding="utf-8"))
        return (f", last checkpoint epoch {state['epoch']:.2f} of {state['num_train_epochs']} "
                f"(step {state['global_step']} of {state['max_steps']})")
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _tail(log: Path, size: int = 65536) -> list[str]:
    try:
        with log.open("rb") as handle:
            handle.seek(max(0, log.stat().st_size - size))
            return handle.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []


def error_line(text: str) -> str:
    """The job's own error from submitit's failure text (a traceback, then the paths of the logs)."""
    lines = [line.strip() for line in text.split("You can check full logs")[0].splitlines()]
    lines = [line for line in lines if line and not line.startswith("---")]
    return lines[-1].split("SpanftError: ", 1)[-1] if lines else "failed"


def log_error(log: Path) -> str | None:
    """The stage's own error line in the job's log (``spanft: error: ...``), else DVC's (``ERROR: ...``), of its
    last allocation (an earlier one's ``terminated (SIGTERM)`` at its requeue is no cause)."""
    tail = _last_run(log)
    for prefix in ("spanft: error:", "ERROR:"):
        found = [line.strip() for line in tail if line.startswith(prefix)]
        if found:
            return found[-1]
    return None
