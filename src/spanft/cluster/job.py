"""One job of the fan-out: one training stage (a fine-tuning run or the step costs), run by DVC in the stage's
own workspace, on a node.

The job prepares the workspace (:func:`spanft.cluster.workspace.prepare_workspace`), checks out the outputs of
the stages it reads from the shared cache, and runs ``dvc repro --single-item STAGE``; DVC stores the outputs
and a run-cache entry in the shared cache, which is all the head needs. On a time limit or a pre-emption,
submitit calls :meth:`StageJob.checkpoint` and requeues the same job, which resumes from the fine-tuning
checkpoint its workspace holds.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout
from submitit.helpers import Checkpointable

from spanft.cluster.processes import run_group
from spanft.cluster.workspace import prepare_workspace
from spanft.errors import SpanftError
from spanft.threads import SHARING_ENV, thread_count

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

    def __call__(self) -> str:
        workspace = Path(self.workspace)
        workspace.parent.mkdir(parents=True, exist_ok=True)
        try:  # one job per workspace, ever: a second one would pull the checkout from under the first
            with FileLock(f"{workspace}.lock", timeout=0):
                return self._run(workspace)
        except Timeout:
            raise SpanftError(f"{self.stage}: another job runs in {workspace}; this one did nothing") from None

    def _run(self, workspace: Path) -> str:
        prepare_workspace(Path(self.head_root), self.commit, Path(self.snapshot), workspace, self.cache_dir)
        code = os.pathsep.join(filter(None, [str(workspace / "src"), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, SHARING_ENV: str(self.processes),
               "PYTHONPATH": code,  # the stage scripts import spanft from the commit, not the head's tree
               "DVC_NO_ANALYTICS": "1", "TOKENIZERS_PARALLELISM": "false"}
        # torch's count is the stage's own (spanft.threads); these keep numpy's BLAS and tokenizers within it too
        env.update({name: str(thread_count(0, env)) for name in THREAD_VARIABLES})
        if self.gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpus
        if self.upstream:
            self._dvc(["checkout", *self.upstream], env)
        self._dvc(["repro", "--single-item", self.stage], env)
        if self.remote:
            self._dvc(["push", "--run-cache", "--remote", self.remote, self.stage], env)
        return self.stage

    def _dvc(self, args: list[str], env: dict) -> None:
        print(f"spanft fanout job: dvc {' '.join(args)}  (in {self.workspace})", flush=True)
        # SLURM sends the time-limit signal to every process of the job: it is submitit's (it checkpoints and
        # requeues, and then this job stops dvc's whole process group), not the training's, which it would kill
        code = run_group(["dvc", *args], self.workspace, env, ignore=(time_limit_signal(),))
        if code != 0:
            raise SpanftError(f"{self.stage}: dvc {args[0]} exited with {code}")


def time_limit_signal() -> signal.Signals:
    """The signal submitit asks SLURM for before a job's time limit (SIGUSR2 unless configured)."""
    return getattr(signal, "SIG" + os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2").removeprefix("SIG"),
                   signal.SIGUSR2)
