"""Step timing (spanft.train.timing): medians of the steady-state steps, and whether they waited for a core."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import pytest

from spanft.train import timing
from spanft.train.timing import StepTimer, contended, run_queue_wait


def _timed(monkeypatch, steps: list[tuple[float, float, float]]) -> StepTimer:
    """A timer fed steps of (wall, cpu, run-queue wait) seconds through the Trainer's callbacks, on fake clocks."""
    clock = {"wall": 0.0, "cpu": 0.0, "wait": 0.0}
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock["wall"])
    monkeypatch.setattr(timing.time, "process_time", lambda: clock["cpu"])
    monkeypatch.setattr(timing, "run_queue_wait", lambda: clock["wait"])
    timer = StepTimer()
    for wall, cpu, wait in steps:
        timer.on_step_begin(None, None, None)
        clock["wall"] += wall
        clock["cpu"] += cpu
        clock["wait"] += wait
        timer.on_step_end(None, None, None)
        for key in clock:  # evaluation or a checkpoint between steps, waiting too: never inside a timed step
            clock[key] += 5.0
    return timer


def test_medians_leave_the_warmup_steps_out(monkeypatch):
    steps = [(9.0, 9.0, 9.0)] * timing.WARMUP_STEPS + [(0.1, 0.1, 0), (0.3, 0.25, 0), (0.2, 0.2, 0), (0.4, 0.3, 0)]
    summary = _timed(monkeypatch, steps).summary()
    kept = steps[timing.WARMUP_STEPS:]
    assert summary["steps_timed"] == 4
    assert summary["step_seconds"] == pytest.approx(statistics.median(w for w, _, _ in kept))
    assert summary["step_cpu_seconds"] == pytest.approx(statistics.median(c for _, c, _ in kept))
    assert summary["contended"] is False


def test_steps_whose_main_thread_waited_for_a_core_are_contended(monkeypatch):
    waiting = [(0.2, 0.1, 0.1)] * 8  # half of each step runnable but off a core
    assert _timed(monkeypatch, waiting).summary()["contended"] is True
    # a GPU step or an idle second thread: little CPU per wall second, but no waiting on a run queue
    assert _timed(monkeypatch, [(0.2, 0.05, 0.0)] * 8).summary()["contended"] is False


def test_a_run_of_few_steps_keeps_them_all_and_none_says_so(monkeypatch):
    assert _timed(monkeypatch, [(1.0, 1.0, 0), (3.0, 3.0, 0)]).summary()["step_seconds"] == pytest.approx(2.0)
    assert StepTimer().summary() == {"steps_timed": 0, "step_seconds": None, "step_cpu_seconds": None,
                                     "contended": None}


def test_without_the_kernels_account_contention_is_unknown(monkeypatch):
    monkeypatch.setattr(timing, "_SCHEDSTAT", "/nonexistent/schedstat")
    timer = StepTimer()
    timer.on_step_begin(None, None, None)
    timer.on_step_end(None, None, None)
    assert timer.summary()["contended"] is None and timer.summary()["steps_timed"] == 1


def test_the_rule_reads_directly():
    assert not contended(wall=1.0, wait=0.0)
    assert contended(wall=1.0, wait=timing.CONTENDED_SHARE + 0.01)
    assert not contended(wall=1.0, wait=timing.CONTENDED_SHARE - 0.01)


def test_run_queue_wait_grows_when_a_thread_shares_its_core_and_not_when_alone():
    """The kernel's account, not a model of it: pinned to one core beside a busy process, a busy thread waits
    about as long as it runs; alone on that core it hardly waits."""
    if run_queue_wait() is None or not hasattr(__import__("os"), "sched_setaffinity"):
        pytest.skip("no /proc/thread-self/schedstat or CPU affinity here")
    import os

    core = min(os.sched_getaffinity(0))
    busy = "import time\nend = time.perf_counter() + {s}\nwhile time.perf_counter() < end: pass\n"
    probe = ("import os, time\nfrom spanft.train.timing import run_queue_wait\n"
             f"os.sched_setaffinity(0, {{{core}}})\nstart = run_queue_wait()\n{busy.format(s=1.0)}"
             "print(run_queue_wait() - start)\n")

    def waited(beside: bool) -> float:
        hog = None
        if beside:
            hog = subprocess.Popen([sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{core}}})\n"
                                    + busy.format(s=30.0)])  # killed once the probe ends
            time.sleep(0.3)
        try:
            return float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                        check=True).stdout)
        finally:
            if hog:
                hog.kill()
                hog.wait()

    # the suite's other workers share these cores too, so "alone" is only alone of the hog: up to three paired
    # tries, one of which must show the hog's share (a broken account shows it in none)
    pairs = []
    for _ in range(3):
        beside, alone = waited(beside=True), waited(beside=False)
        pairs.append((round(beside, 3), round(alone, 3)))
        if beside > 0.3 and beside > alone + 0.05:  # about half of the 1 s loop, and more than without the hog
            return
    pytest.fail(f"(beside, alone) run-queue waits: {pairs}")


# ------------------------------------------------------------------------------ Table 3 from recorded step times


def _run(step_time, seed: int = 1):
    from pathlib import Path

    from spanft.report.runs import Run

    return Run("glue", "tiny", "cola", "sf", seed, Path(f"/runs/seed{seed}"), {"step_time": step_time})


def _record(task: str, ratio: float, contended: bool, paired: float | None = None,
            paired_contended: bool = False) -> dict:
    return {"task": task, "step_ratio": ratio, "contended": contended, "ratio": 1.5, "extra_parameters_percent": 3.0,
            "paired_measured": paired is not None or paired_contended,
            "paired_step_ratio": float("nan") if paired is None else paired, "paired_contended": paired_contended}


def test_table3_text_names_contended_and_untimed_tasks_apart():
    from spanft.report.significance_tables import _cost_text

    nan = float("nan")
    text = _cost_text([_record("cola", 1.2, False), _record("mrpc", nan, True), _record("rte", nan, False)], 3.0)
    assert "1.20x the baseline's time per optimizer step, from the runs' own step times (mean over 1 of 3 tasks; " \
           "left out, contended: mrpc; not every run timed: rte)" in text
    none = _cost_text([_record("mrpc", nan, True), _record("rte", nan, False)], 3.0)
    assert "has no step-time figure (every task left out, contended: mrpc; not every run timed: rte)" in none
    assert "every task's runs were contended" not in none


def test_table3_reads_step_times_strictly():
    from spanft.errors import SpanftError
    from spanft.report.significance_tables import _contended, _step

    assert _step(_run({"step_seconds": 0.5}), "step_seconds") == 0.5
    assert _step(_run(None), "step_seconds") != _step(_run(None), "step_seconds")  # NaN: not recorded
    assert _contended(_run({"contended": True})) and not _contended(_run({"contended": None}))
    for bad, key in (([1, 2], "step_seconds"), ({"step_seconds": "0.5"}, "step_seconds")):
        with pytest.raises(SpanftError, match="metrics.json: step_time"):
            _step(_run(bad), key)
    with pytest.raises(SpanftError, match="step_time.contended must be true, false or null, found 'false'"):
        _contended(_run({"contended": "false"}))


def test_table3_text_takes_the_side_by_side_ratio_when_measured():
    from spanft.report.significance_tables import _cost_text

    nan = float("nan")
    records = [_record("cola", 1.9, False, paired=1.2), _record("mrpc", 1.1, False, paired_contended=True),
               _record("rte", nan, True, paired=1.4), _record("wnli", 1.3, False)]
    text = _cost_text(records, 3.0)
    assert "1.30x the baseline's time per optimizer step, timed side by side (mean over 2 of 4 tasks; left out, " \
           "contended: mrpc; not measured: wnli)" in text
