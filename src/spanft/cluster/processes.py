"""The fan-out's child commands (``dvc`` in the head, or in a job) in a process group of their own, stopped whole.

A plain ``subprocess.run`` stopped by an exception kills its child only: ``dvc`` dies, and the training it
started goes on writing the workspace that a requeued or re-sent job is about to use. Here the command starts
in a new session; whatever stops the caller (Ctrl-C, SIGTERM, submitit's time-limit signal, an error), every
process of the group gets SIGTERM (a stage script then removes its half-written outputs), and SIGKILL after a
grace period.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from spanft.errors import release_stop_signals, stop_signals_held

GRACE_SECONDS = 20.0


def run_group(command: list[str], cwd: Path | str, env: dict | None = None,
              ignore: tuple[signal.Signals, ...] = ()) -> int:
    """Run ``command`` to its end and return its exit status; stop its whole group if the caller is stopped.

    ``ignore``: signals the command and its children inherit as ignored (a job's time-limit signal, which
    SLURM sends to every process of the job, is for submitit alone).
    """
    def child_setup() -> None:
        release_stop_signals()
        for number in ignore:
            signal.signal(number, signal.SIG_IGN)

    process = None
    try:
        with stop_signals_held():  # a SIGTERM while Popen runs would leave the command running, unknown to us
            process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, start_new_session=True,
                                       preexec_fn=child_setup)
        return process.wait()
    except BaseException:
        if process is not None:
            stop_group(process)
        raise


def stop_group(process: subprocess.Popen, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM to every process of ``process``'s group; SIGKILL to those left after ``grace`` seconds."""
    group = process.pid  # the session leader's pid is the group id
    _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        process.poll()  # reap the leader, or the group never looks empty
        if not _group_alive(group):
            return
        time.sleep(0.1)
    _signal_group(group, signal.SIGKILL)
    process.wait()


def _signal_group(group: int, number: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, number)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member we may not signal is still a member
        pass
    return True
