"""What a run's training loop costs per optimizer step, apart from how busy the machine was.

Table 3 compares the fine-tuning cost of SF with the baseline's. A run's wall time mixes in process start,
data loading, evaluation, checkpoints and whatever else the machine ran meanwhile; the steady-state time of
one optimizer step does not. :class:`StepTimer` takes each step's wall time and the process's CPU time (every
thread of it) from the Trainer's step callbacks, leaves out the warm-up steps (allocator and kernel caches
fill then), and reports medians. Evaluation runs between steps, so it is outside every timed step.

A step whose wall time is well above its CPU time divided by the threads had to wait for a core: the
machine was contended (:func:`contended`), and such a run's time says more of the machine than the method.
"""

from __future__ import annotations

import statistics
import time

from transformers import TrainerCallback

WARMUP_STEPS = 3  # left out of the medians (of the run, or of its resumed part)
CONTENDED_RATIO = 1.3  # wall / (CPU / threads) above this: the steps waited for a core


class StepTimer(TrainerCallback):
    """Wall and CPU seconds of every optimizer step (``on_step_begin`` .. ``on_step_end``)."""

    def __init__(self) -> None:
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self._started: tuple[float, float] | None = None

    def on_step_begin(self, args, state, control, **kwargs):
        self._started = (time.perf_counter(), time.process_time())

    def on_step_end(self, args, state, control, **kwargs):
        if self._started is not None:
            wall, cpu = self._started
            self.walls.append(time.perf_counter() - wall)
            self.cpus.append(time.process_time() - cpu)
            self._started = None

    def summary(self, threads: int) -> dict:
        """Medians over the steady-state steps (all of them when there are too few to leave any out)."""
        walls, cpus = self.walls, self.cpus
        if len(walls) > WARMUP_STEPS:
            walls, cpus = walls[WARMUP_STEPS:], cpus[WARMUP_STEPS:]
        if not walls:
            return {"steps_timed": 0, "step_seconds": None, "step_cpu_seconds": None, "contended": None}
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        return {"steps_timed": len(walls), "step_seconds": round(wall, 6), "step_cpu_seconds": round(cpu, 6),
                "contended": contended(wall, cpu, threads)}


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


def contended(wall: float, cpu: float, threads: int) -> bool:
    """Whether steps of ``wall`` seconds that used ``cpu`` CPU seconds on ``threads`` threads waited for cores."""
    return wall > CONTENDED_RATIO * cpu / max(1, threads)
