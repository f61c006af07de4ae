"""An ordered map over worker processes that a signal, a crash or an early exit can stop at any moment.

Why not ``multiprocessing.Pool``: its workers take tasks from one shared queue behind one lock, and a worker
killed while it waits for a task (SIGTERM or Ctrl-C sent to the whole process group, the OOM killer) keeps
that lock for ever, so ``Pool.terminate()`` in the parent waits for ever too (py-spy: ``_help_stuff_finish``).
Here nothing is shared: worker ``w`` gets items ``w, w + n, w + 2n, ...`` up front and sends its results back
in order through its own pipe. The parent reads item ``i`` from pipe ``i % n``; a dead worker shows as the
end of its pipe, and whatever ends the map (the last item, an exception, a signal) the parent kills and reaps
every worker it started; on Linux the kernel also kills the workers when the parent dies (even by SIGKILL).
A worker sends one result at a time and waits while its pipe is full, so results are held in memory only as
fast as the parent takes them.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
from multiprocessing.connection import Connection
from typing import Callable, Iterator, Sequence, TypeVar

from spanft.errors import SpanftError, release_stop_signals, stop_signals_held

Item = TypeVar("Item")
Result = TypeVar("Result")


@contextlib.contextmanager
def ordered_map(function: Callable[[Item], Result], items: Sequence[Item], workers: int) -> Iterator[Iterator[Result]]:
    """``with ordered_map(f, items, n) as results``: ``f(item)`` for each item, in order, over ``n`` processes.

    With ``n <= 1`` or a single item it maps in this process. ``function`` and its arguments must be
    picklable where processes start by spawning (not on Linux, which forks).
    """
    if workers <= 1 or len(items) <= 1:
        yield map(function, items)
        return
    workers = min(workers, len(items))
    # fork on Linux (nothing to pickle); elsewhere the platform's default, spawn (fork is unsafe on macOS)
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    forks = context.get_start_method() == "fork"
    processes: list[multiprocessing.process.BaseProcess] = []
    readers: list[Connection] = []
    try:
        for w in range(workers):
            reader, writer = context.Pipe(duplex=False)
            readers.append(reader)
            # a forked worker inherits the parent's ends of every pipe so far: it closes them, so that when the
            # parent dies, its own pipe has no reader left and its next send fails instead of waiting
            inherited = list(readers) if forks else []
            process = context.Process(target=_serve, args=(function, items[w::workers], writer, inherited,
                                                           os.getpid()), name=f"spanft-worker-{w + 1}", daemon=True)
            try:
                # a signal held meanwhile is raised on leaving, with the worker listed (one that another thread
                # takes is raised at once; the worker then ends at its next send or with this process)
                with stop_signals_held():
                    process.start()
                    processes.append(process)
            finally:
                writer.close()  # the worker holds the only write end: its death ends the pipe
        yield (_receive(readers[i % workers], processes[i % workers]) for i in range(len(items)))
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.join()
        for reader in readers:
            reader.close()


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _serve(function: Callable, items: Sequence, writer: Connection, inherited: list[Connection],
           parent: int) -> None:
    """A worker's body: map its share of the items, one result per message."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent reports it once
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a worker told to stop just stops: nothing to clean up
    release_stop_signals()  # held by the parent while it forked us
    _die_with(parent)
    for connection in inherited:
        connection.close()
    try:
        for item in items:
            writer.send((True, function(item)))
    except (BrokenPipeError, ConnectionResetError):  # the parent is gone: nobody to tell
        return
    except BaseException as exc:  # noqa: BLE001 - the parent turns it into one line
        with contextlib.suppress(OSError):
            writer.send((False, f"{type(exc).__name__}: {exc}"))


def _die_with(parent: int) -> None:
    """Linux: have the kernel kill this worker when its parent dies, at once and even if the worker is stopped
    (a closed pipe only ends it at its next send). Elsewhere that next send is what ends it."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request: nobody is left to read
        os._exit(0)


def _receive(reader: Connection, process: multiprocessing.process.BaseProcess):
    try:
        ok, value = reader.recv()
    except (EOFError, OSError):  # EOFError between messages; OSError when the pipe ends in the middle of one
        process.join()
        raise SpanftError(f"worker process {process.name} ended before sending its results "
                          f"({_how_it_ended(process.exitcode)})") from None
    if not ok:
        raise SpanftError(f"worker process {process.name} failed: {value}")
    return value


def _how_it_ended(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name if -exitcode in signal.valid_signals() else str(-exitcode)
        hint = ": out of memory?" if -exitcode == signal.SIGKILL else ""
        return f"killed by {name}{hint}"
    return f"exit code {exitcode}"
