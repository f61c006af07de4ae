"""Step timing (spanft.train.timing): medians of the steady-state steps, and whether they waited for cores."""

from __future__ import annotations

import statistics

import pytest

from spanft.train import timing
from spanft.train.timing import StepTimer, contended


def _timed(monkeypatch, steps: list[tuple[float, float]]) -> StepTimer:
    """A timer fed steps of (wall, cpu) seconds through the Trainer's callbacks, on fake clocks."""
    clock = {"wall": 0.0, "cpu": 0.0}
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock["wall"])
    monkeypatch.setattr(timing.time, "process_time", lambda: clock["cpu"])
    timer = StepTimer()
    for wall, cpu in steps:
        timer.on_step_begin(None, None, None)
        clock["wall"] += wall
        clock["cpu"] += cpu
        timer.on_step_end(None, None, None)
        clock["wall"] += 5.0  # evaluation or a checkpoint between steps: never inside a timed step
        clock["cpu"] += 5.0
    return timer


def test_medians_leave_the_warmup_steps_out(monkeypatch):
    steps = [(9.0, 9.0)] * timing.WARMUP_STEPS + [(0.1, 0.1), (0.3, 0.25), (0.2, 0.2), (0.4, 0.3)]
    summary = _timed(monkeypatch, steps).summary(threads=1)
    kept = steps[timing.WARMUP_STEPS:]
    assert summary["steps_timed"] == 4
    assert summary["step_seconds"] == pytest.approx(statistics.median(w for w, _ in kept))
    assert summary["step_cpu_seconds"] == pytest.approx(statistics.median(c for _, c in kept))
    assert summary["contended"] is False


def test_a_run_of_few_steps_keeps_them_all_and_none_says_so(monkeypatch):
    assert _timed(monkeypatch, [(1.0, 1.0), (3.0, 3.0)]).summary(1)["step_seconds"] == pytest.approx(2.0)
    assert StepTimer().summary(1) == {"steps_timed": 0, "step_seconds": None, "step_cpu_seconds": None,
                                     "contended": None}


def test_steps_that_waited_for_a_core_are_contended():
    assert not contended(wall=1.0, cpu=1.0, threads=1)
    assert contended(wall=2.0, cpu=1.0, threads=1)  # half the time without a core
    assert not contended(wall=1.0, cpu=1.9, threads=2)  # two busy threads
    assert contended(wall=1.0, cpu=1.0, threads=2)  # two threads, one core's worth of work done
    assert contended(wall=timing.CONTENDED_RATIO + 0.01, cpu=1.0, threads=1)
    assert not contended(wall=timing.CONTENDED_RATIO - 0.01, cpu=1.0, threads=1)
