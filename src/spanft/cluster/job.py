"""One job of the fan-out: one training stage (a fine-tuning run or the step costs), run by DVC in the stage's
own workspace, on a node.

The job checks that it got the sender's environment and that the shared cache takes writes, prepares the
workspace (:func:`spanft.cluster.workspace.prepare_workspace`), checks out the outputs of the stages it reads
from the shared cache, and runs ``dvc repro --single-item STAGE``; DVC stores the outputs and a run-cache entry
in the shared cache, which is all the head needs. On a time limit or a pre-emption, submitit calls
:meth:`StageJob.checkpoint`, which has the training save a checkpoint at its next optimizer step
(:mod:`spanft.cluster.timelimit`), and requeues the same job, which resumes from the checkpoint its workspace
holds (checkpoints are also taken every ``checkpoint_every_s`` seconds of training, not only at epoch ends).

The run keeps its checkpoints until DVC has saved it (:mod:`spanft.train.finished`): a job stopped after the
training finished but before DVC's commit resumes by saving the finished run (``dvc commit``), not by training
again. Only then does the job clear the checkpoints.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from submitit.helpers import Checkpointable

from spanft.cluster import startups
from spanft.cluster.causes import exit_words
from spanft.cluster.claims import release_key
from spanft.cluster.joblock import exclusive
from spanft.cluster.preflight import check_cache, check_job_environment
from spanft.cluster.processes import run_group
from spanft.cluster.stages import run_cached
from spanft.cluster.tracking import checkpointed
from spanft.cluster.timelimit import (
    LOCAL_SIGNAL_DELAY_S,
    SIGNAL_FILE,
    save_before_requeue,
    time_left_s,
    wait_budget_s,
)
from spanft.cluster.workspace import checkout_outputs, prepare_workspace
from spanft.errors import SpanftError
from spanft.params.plan import CHECKPOINTS_DIR
from spanft.threads import SHARING_ENV, thread_count
from spanft.train.finished import (
    CHECKPOINT_EVERY_ENV,
    FINISHED_FILE,
    KEEP_ENV,
    finished_run,
)
from spanft.train.preflight import RUN_MARKER

ALLOCATION_START = "spanft fanout job: started"  # the job's first line in its .err (a requeued job appends)
SAVE_SIGNAL_ENV = "SPANFT_SAVE_SIGNAL"  # spanft.train.saves's (no torch here: the names are repeated, and tested)
SIGNAL_FILE_ENV = "SPANFT_SIGNAL_FILE"

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass
class StageJob(Checkpointable):
    """Runs ``stage`` of the head repo at ``commit`` in ``workspace``; pickled by submitit, called on the node."""

    stage: str
    upstream: tuple[str, ...]
    head_root: str
    commit: str
    snapshot: str
    workspace: str
    cache_dir: str
    processes: int = 1  # jobs sharing this node's cores at once (local jobs; a SLURM job has its own CPUs)
    remote: str = ""
    gpus: str | None = None  # local jobs: their CUDA_VISIBLE_DEVICES; None on SLURM, which sets it
    checkpoint_every_s: int = 0  # seconds of training between checkpoints, mid-epoch too (0: epoch ends only)
    token: str = ""  # the sender's environment token (spanft.cluster.preflight.ENVIRONMENT_TOKEN)
    run_key: str = ""  # DVC's run-cache key of the run: its claim in the shared cache (spanft.cluster.claims)
    signal_delay_s: int = LOCAL_SIGNAL_DELAY_S  # the time-limit signal's configured lead (cluster.signal_delay_s)
    startups: str = ""  # where each allocation records its start-up (spanft.cluster.startups); '' = nowhere
    executor: str = "local"

    def __call__(self) -> str:
        print(f"{ALLOCATION_START} ({self.stage})", file=sys.stderr, flush=True)  # where this allocation's lines begin
        workspace = Path(self.workspace)
        # this allocation's start-up, until its training begins, for the next pre-flight (spanft.cluster.startups)
        watch = startups.watch(workspace / SIGNAL_FILE, Path(self.startups), self.executor, self.stage, job_id()) \
            if self.startups and checkpointed(self.stage) else None
        try:
            check_job_environment(self.token)
            check_cache(self.cache_dir)  # before anything trains: a run DVC cannot save is a run lost
            workspace.parent.mkdir(parents=True, exist_ok=True)
            # one job per workspace, ever: a second one would pull the checkout from under the first
            with exclusive(Path(f"{workspace}.job"), self.stage):
                return self._run(workspace, watch)
        finally:
            if watch is not None:
                watch.stop()

    def _run(self, workspace: Path, watch: startups.Watch | None) -> str:
        prepare_workspace(Path(self.head_root), self.commit, Path(self.snapshot), workspace, self.cache_dir)
        code = os.pathsep.join(filter(None, [str(workspace / "src"), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, SHARING_ENV: str(self.processes),
               "PYTHONPATH": code,  # the stage scripts import spanft from the commit, not the head's tree
               "DVC_NO_ANALYTICS": "1", "TOKENIZERS_PARALLELISM": "false",
               KEEP_ENV: "1", CHECKPOINT_EVERY_ENV: str(self.checkpoint_every_s),
               SAVE_SIGNAL_ENV: time_limit_signal().name, SIGNAL_FILE_ENV: str(workspace / SIGNAL_FILE)}
        (workspace / SIGNAL_FILE).unlink(missing_ok=True)  # an earlier allocation's training listens no more
        # torch's count is the stage's own (spanft.threads); these keep numpy's BLAS and tokenizers within it too
        env.update({name: str(thread_count(0, env)) for name in THREAD_VARIABLES})
        if self.gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpus
        if self.upstream:
            print(f"spanft fanout job: dvc checkout {' '.join(self.upstream)}  (in {self.workspace})", flush=True)
            checkout_outputs(workspace, self.upstream)
        attempt = {"stage": self.stage, "commit": self.commit, "snapshot": self.snapshot}
        if self._finished_before(workspace, attempt):
            print(f"spanft fanout job: {self.stage} finished training before the job was stopped: saving it "
                  f"(dvc commit), not training again", flush=True)
            if watch is not None:
                watch.stop()  # no training: no start-up to learn
            self._dvc(["commit", "--force", self.stage], env)
        else:
            _forget_finished(workspace)  # a mark of an earlier attempt must never vouch for this one's outputs
            _write_json(workspace / ATTEMPT_FILE, attempt)
            self._dvc(["repro", "--single-item", self.stage], env)
        if not run_cached(workspace, self.stage):
            raise SpanftError(f"{self.stage}: dvc saved no run-cache entry for the run (is {self.cache_dir}/runs "
                              f"writable?); its checkpoints are kept: send it again")
        release_key(self.cache_dir, self.run_key)  # saved: no head needs to watch it any longer
        _clear_checkpoints(workspace)  # saved by DVC: only now may the checkpoints go
        (workspace / ATTEMPT_FILE).unlink(missing_ok=True)
        if self.remote:
            self._dvc(["push", "--run-cache", "--remote", self.remote, self.stage], env)
        return self.stage

    def checkpoint(self, *args, **kwargs):
        """The time-limit signal (or a pre-emption's): the training saves at its next step, then submitit
        requeues this job (:mod:`spanft.cluster.timelimit`)."""
        watch = startups.current()
        when = ""
        if watch is not None:
            watch.signalled()  # a training not begun yet: this allocation's start-up took all of its time
            when = f" ({watch.timeline()})"
        budget = wait_budget_s(self.signal_delay_s, time_left_s())
        said = save_before_requeue(Path(self.workspace) / SIGNAL_FILE, time_limit_signal(), budget)
        print(f"spanft fanout job: time-limit signal{when}: {said}; requeueing", flush=True)
        return super().checkpoint(*args, **kwargs)

    @staticmethod
    def _finished_before(workspace: Path, attempt: dict) -> bool:
        """An earlier attempt of this very stage, commit and snapshot finished training and left its run."""
        try:
            same = json.loads((workspace / ATTEMPT_FILE).read_text(encoding="utf-8")) == attempt
        except (OSError, ValueError):
            return False
        return same and any(finished_run(folder, workspace) for folder in _checkpoint_dirs(workspace))

    def _dvc(self, args: list[str], env: dict) -> None:
        print(f"spanft fanout job: dvc {' '.join(args)}  (in {self.workspace})", flush=True)
        # SLURM sends the time-limit signal to every process of the job: it is submitit's (it has the training
        # save, requeues, and then this job stops dvc's whole process group); dvc would die of it, and the
        # training listens for it itself
        code = run_group(["dvc", *args], self.workspace, env, ignore=(time_limit_signal(),))
        if code != 0:
            raise SpanftError(f"{self.stage}: dvc {args[0]} exited with {exit_words(code)}")


ATTEMPT_FILE = ".spanft-attempt.json"  # in a workspace: the stage, commit and snapshot its last attempt ran


def _checkpoint_dirs(workspace: Path) -> list[Path]:
    """The checkpoint directories of the workspace's run (a workspace runs one stage)."""
    return [path.parent for path in (workspace / CHECKPOINTS_DIR).glob(f"**/{RUN_MARKER}")]


def _forget_finished(workspace: Path) -> None:
    for folder in _checkpoint_dirs(workspace):
        (folder / FINISHED_FILE).unlink(missing_ok=True)


def _clear_checkpoints(workspace: Path) -> None:
    for folder in _checkpoint_dirs(workspace):
        shutil.rmtree(folder, ignore_errors=True)


def _write_json(path: Path, value: dict) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value), encoding="utf-8")
    os.replace(partial, path)


def job_id() -> str:
    """This job's id as the fan-out names it (``123_4`` for an element of an array; a local job's process)."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    if array and task:
        return f"{array}_{task}"
    return os.environ.get("SLURM_JOB_ID") or str(os.getpid())


def time_limit_signal() -> signal.Signals:
    """The signal submitit asks SLURM for before a job's time limit (SIGUSR2 unless configured)."""
    return getattr(signal, "SIG" + os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2").removeprefix("SIG"),
                   signal.SIGUSR2)
