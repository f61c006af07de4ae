"""The worker processes behind corpus encoding: results in order, and no way to leave a worker or a hang behind."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanft.errors import SpanftError
from spanft.text.parallel import ordered_map


def _square_with_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three is not welcome")
    return x


def _die_on_three(x: int) -> int:
    if x == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return x


_EARLIER: set[int] = set()  # children of this test process from before the test (another test's leftovers)


def _children() -> list[psutil.Process]:
    """The child processes the current test started, zombies included (a worker ended but never reaped)."""
    return [child for child in psutil.Process().children(recursive=True) if child.pid not in _EARLIER]


@pytest.fixture(autouse=True)
def _only_this_tests_children():
    _EARLIER.clear()
    _EARLIER.update(child.pid for child in psutil.Process().children(recursive=True))
    yield


@settings(max_examples=15, deadline=None)
@given(items=st.lists(st.integers(-1000, 1000), max_size=12), workers=st.integers(0, 4))
def test_results_come_in_the_order_of_the_items(items, workers):
    with ordered_map(_square_with_pid, items, workers) as results:
        got = list(results)
    assert [square for square, _ in got] == [x * x for x in items]
    used = {pid for _, pid in got}
    if workers >= 2 and len(items) >= 2:
        assert os.getpid() not in used and len(used) == min(workers, len(items))
    else:
        assert used <= {os.getpid()}
    assert _children() == []


def test_an_exception_in_a_worker_is_one_error_naming_it():
    with pytest.raises(SpanftError, match=r"worker process spanft-worker-2 failed: ValueError: three is not welcome"):
        with ordered_map(_fail_on_three, list(range(8)), 2) as results:
            list(results)
    assert _children() == []


def test_a_worker_killed_mid_way_is_an_error_not_a_hang():
    started = time.monotonic()
    with pytest.raises(SpanftError, match=r"spanft-worker-2 ended before sending its results \(killed by SIGKILL"):
        with ordered_map(_die_on_three, list(range(8)), 2) as results:
            list(results)
    assert time.monotonic() - started < 30
    assert _children() == []


def _slow(x: int) -> int:
    time.sleep(0.5)
    return x


def _big(x: int) -> bytes:
    return bytes(4 << 20)  # far more than a pipe holds: the worker waits in send until the parent reads


def test_a_worker_killed_half_way_through_sending_is_named():
    with ordered_map(_big, [0, 1], 2) as results:
        assert len(next(results)) == 4 << 20
        deadline = time.monotonic() + 30
        while len(running := [c for c in _children() if c.status() != psutil.STATUS_ZOMBIE]) > 1 \
                and time.monotonic() < deadline:  # the first worker ends after its one item
            time.sleep(0.01)
        [second] = running
        while second.status() != psutil.STATUS_SLEEPING and time.monotonic() < deadline:  # blocked in send
            time.sleep(0.01)
        time.sleep(0.2)
        second.kill()
        with pytest.raises(SpanftError, match=r"spanft-worker-2 ended before sending its results \(killed by SIGKILL"):
            next(results)
    assert _children() == []


def test_a_signal_while_a_worker_starts_still_reaps_it(monkeypatch):
    """Ctrl-C held while a worker forks arrives just after: that worker is stopped too. (The signal goes to the
    main thread, which holds it: sent to the process, another thread of pytest's might take it, and Python would
    raise it in the main thread at once. In that case the worker still ends: at its next send, or by the kernel's
    parent-death signal.)"""
    context = multiprocessing.get_context("fork")
    start = context.Process.start

    def start_then_interrupt(self):
        start(self)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    monkeypatch.setattr(context.Process, "start", start_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        with ordered_map(_slow, list(range(10)), 2) as results:
            list(results)
    assert _children() == []


def test_leaving_early_stops_and_reaps_every_worker():
    with ordered_map(_square_with_pid, list(range(100_000)), 3) as results:  # more than their pipes hold
        assert next(results)[0] == 0
        assert len(_children()) == 3
    assert _children() == []


PARENT = textwrap.dedent("""
    import sys, time
    from spanft.text.parallel import ordered_map

    def slow(x):
        time.sleep(0.05)
        return x

    with ordered_map(slow, list(range(100000)), 2) as results:
        for i, _ in enumerate(results):
            if i == 5:
                print("running", flush=True)
""")


@pytest.mark.parametrize("signum, stopped", [(signal.SIGKILL, False), (signal.SIGTERM, False),
                                             (signal.SIGINT, False), (signal.SIGKILL, True)])
def test_workers_do_not_outlive_their_parent(signum, stopped):
    """Whatever ends the parent (even SIGKILL, which runs no cleanup), no worker is left behind, not even one
    stopped (SIGSTOP) at the time, which would never reach its next send."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    assert parent.stdout.readline() == "running\n"
    workers = psutil.Process(parent.pid).children()
    assert len(workers) == 2
    if stopped:
        workers[0].suspend()
    os.kill(parent.pid, signum)  # the parent alone: a terminal's Ctrl-C would reach the workers too
    parent.wait(timeout=30)
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert alive == []
    parent.stdout.close()
    parent.stderr.close()
