"""What a run's training loop costs per optimizer step, apart from how busy the machine was.

Table 3 compares the fine-tuning cost of SF with the baseline's. A run's wall time mixes in process start,
data loading, evaluation, checkpoints and whatever else the machine ran meanwhile; the steady-state time of
one optimizer step does not. :class:`StepTimer` takes each step's wall time and the process's CPU time (every
thread of it) from the Trainer's step callbacks, leaves out the warm-up steps (allocator and kernel caches
fill then), and reports medians. Evaluation runs between steps, so it is outside every timed step.

A step that waited for a core was contended: the machine was busy, and such a run's time says more of the
machine than of the method. The kernel counts each thread's time spent runnable but waiting on a run queue
(``/proc/self/task/<tid>/schedstat``, second field); a step is contended when its main thread (which runs the
step's Python and hands work to the others) waited for more than a quarter of the step (:func:`contended`).
Parallel inefficiency (a thread idle for want of work), a GPU step (one host thread waiting on the device) or
a sleeping OpenMP thread is not waiting on a run queue, and is not counted. Where the kernel does not say
(no ``/proc``), ``contended`` is None.
"""

from __future__ import annotations

import statistics
import time

from transformers import TrainerCallback

WARMUP_STEPS = 3  # left out of the medians (of the run, or of its resumed part)
CONTENDED_SHARE = 0.25  # of a step's wall time spent waiting for a core: above this, the step was contended
_SCHEDSTAT = "/proc/thread-self/schedstat"  # the calling thread's: run time, run-queue wait, time slices (ns)


class StepTimer(TrainerCallback):
    """Wall and CPU seconds of every optimizer step (``on_step_begin`` .. ``on_step_end``)."""

    def __init__(self) -> None:
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.waits: list[float | None] = []
        self._started: tuple[float, float, float | None] | None = None

    def on_step_begin(self, args, state, control, **kwargs):
        self._started = (time.perf_counter(), time.process_time(), run_queue_wait())

    def on_step_end(self, args, state, control, **kwargs):
        if self._started is not None:
            wall, cpu, wait = self._started
            self.walls.append(time.perf_counter() - wall)
            self.cpus.append(time.process_time() - cpu)
            now = run_queue_wait()
            self.waits.append(None if wait is None or now is None else now - wait)
            self._started = None

    def summary(self) -> dict:
        """Medians over the steady-state steps (all of them when there are too few to leave any out)."""
        skip = WARMUP_STEPS if len(self.walls) > WARMUP_STEPS else 0
        walls, cpus, waits = self.walls[skip:], self.cpus[skip:], self.waits[skip:]
        if not walls:
            return {"steps_timed": 0, "step_seconds": None, "step_cpu_seconds": None, "contended": None}
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        wait = None if None in waits else statistics.median(waits)
        return {"steps_timed": len(walls), "step_seconds": round(wall, 6), "step_cpu_seconds": round(cpu, 6),
                "contended": None if wait is None else contended(wall, wait)}


class Phases:
    """Wall seconds of a run's consecutive phases: :meth:`mark` ends the phase under way and names it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        self._last = now

    def line(self) -> str:
        return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.seconds.items())


def contended(wall: float, wait: float) -> bool:
    """Whether a step of ``wall`` seconds whose main thread waited ``wait`` seconds for a core was contended."""
    return wait > CONTENDED_SHARE * wall


def run_queue_wait() -> float | None:
    """Seconds the calling thread has spent runnable but waiting for a core (None where the kernel does not say)."""
    try:
        with open(_SCHEDSTAT, encoding="ascii") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None
