"""When a run saves a checkpoint besides the epoch ends: after ``every_s`` seconds of training (wall clock), and at
the next optimizer step after the time-limit signal (a fan-out job's, or any ``SPANFT_SAVE_SIGNAL`` the run is told).

A SLURM job gets its time-limit signal ``signal_delay_s`` seconds (or, on SLURM's ~30 s cycle, up to half a
minute more) before its limit. The run notes the signal, saves at the next optimizer step, and then says so in
the file :data:`SIGNAL_FILE_ENV` names (the job waits for that before it requeues, so no allocation ends with
nothing). The file's ``saves`` count rises with each such save; ``pid`` is the process the job signals; ``began``
is when the training began (the job's start-up ends there: :mod:`spanft.cluster.startups`).

Under several processes (torchrun, accelerate) every process takes the same decision at the same step, or they
would not save together: the main process's clock decides the wall-clock saves, any process's signal the
signal saves, in one collective per step.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist
from transformers import TrainerCallback

from spanft.fileio import atomic_open
from spanft.train.finished import checkpoint_every_s

log = logging.getLogger("spanft")

SAVE_SIGNAL_ENV = "SPANFT_SAVE_SIGNAL"  # a signal's name (USR2): save a checkpoint at the next step after it
SIGNAL_FILE_ENV = "SPANFT_SIGNAL_FILE"  # where the run says it listens ({"pid", "saves": 0}) and each save it made


class CheckpointTriggers(TrainerCallback):
    """Asks the Trainer for a checkpoint by wall time (``every_s`` > 0) and on ``save_signal`` (when given)."""

    def __init__(self, every_s: float = 0.0, save_signal: signal.Signals | None = None,
                 signal_file: Path | None = None):
        self.every_s, self.save_signal, self.signal_file = every_s, save_signal, signal_file
        self.last = time.monotonic()
        self.signalled = False  # set by the signal handler
        self.for_signal = False  # the save asked for is the signal's
        self.saves = 0
        self.began = 0.0  # when the training began (epoch seconds): the job's start-up ends here
        self._previous = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.last, self.began = time.monotonic(), time.time()
        if self.save_signal is not None and threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(self.save_signal, self._note)
            if state.is_world_process_zero:
                self._tell()

    def _note(self, signum, frame) -> None:
        self.signalled = True

    def on_step_end(self, args, state, control, **kwargs):
        due = self.every_s > 0 and time.monotonic() - self.last >= self.every_s
        due, signalled = agreed(due, self.signalled, args.device, main=state.is_world_process_zero)
        if signalled:
            self.signalled, self.for_signal = False, True
        if due or signalled:
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        """After the checkpoint is complete (this callback comes after the one that marks it so)."""
        self.last = time.monotonic()
        if self.for_signal:
            self.for_signal = False
            self.saves += 1
            if state.is_world_process_zero:
                log.warning("time-limit signal: checkpoint-%d saved; the job resumes from it", state.global_step)
                self._tell(f"checkpoint-{state.global_step}")

    def on_train_end(self, args, state, control, **kwargs):
        """Training is over: a signal from now on has nothing to save, and the job must not wait for a save."""
        if self._previous is not None:
            signal.signal(self.save_signal, self._previous)
            self._previous = None
        if self.signal_file is not None and state.is_world_process_zero:
            self.signal_file.unlink(missing_ok=True)

    def _tell(self, checkpoint: str = "") -> None:
        if self.signal_file is None:
            return
        with atomic_open(self.signal_file) as handle:
            handle.write(json.dumps({"pid": os.getpid(), "saves": self.saves, "checkpoint": checkpoint,
                                     "began": self.began}))


def agreed(due: bool, signalled: bool, device, main: bool = True) -> tuple[bool, bool]:
    """(the main process's ``due``, any process's ``signalled``), the same in every process: one all-reduce of
    both flags (themselves in a single process)."""
    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return due, signalled
    where = device if dist.get_backend() == "nccl" else "cpu"
    flags = torch.tensor([int(due and main), int(signalled)], dtype=torch.int32, device=where)
    dist.all_reduce(flags, op=dist.ReduceOp.MAX)
    return bool(flags[0].item()), bool(flags[1].item())


def save_signal_from_env() -> signal.Signals | None:
    """The signal :data:`SAVE_SIGNAL_ENV` names (``USR2`` or ``SIGUSR2``), None when unset or unknown."""
    name = os.environ.get(SAVE_SIGNAL_ENV, "").strip().upper()
    if not name:
        return None
    found = getattr(signal, "SIG" + name.removeprefix("SIG"), None)
    return found if isinstance(found, signal.Signals) else None


def checkpoint_triggers() -> list[TrainerCallback]:
    """The run's triggers from its environment: none without a wall-clock interval nor a save signal."""
    every, save_signal = checkpoint_every_s(), save_signal_from_env()
    if every <= 0 and save_signal is None:
        return []
    file = os.environ.get(SIGNAL_FILE_ENV, "").strip()
    return [CheckpointTriggers(every, save_signal, Path(file) if file else None)]
