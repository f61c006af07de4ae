"""The worker processes behind corpus encoding: results in order, and no way to leave a worker or a hang behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
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


def _children() -> list[psutil.Process]:
    return [child for child in psutil.Process().children(recursive=True) if child.is_running()
            and child.status() != psutil.STATUS_ZOMBIE]


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


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_workers_do_not_outlive_their_parent(signum):
    """Whatever ends the parent (even SIGKILL, which runs no cleanup), no worker is left waiting for ever."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    assert parent.stdout.readline() == "running\n"
    workers = psutil.Process(parent.pid).children()
    assert len(workers) == 2
    os.kill(parent.pid, signum)  # the parent alone: a terminal's Ctrl-C would reach the workers too
    parent.wait(timeout=30)
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert alive == []
    parent.stdout.close()
    parent.stderr.close()
