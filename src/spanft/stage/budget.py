"""Where a stage process's time goes, for ``benchmarks/bench_stage_budget.py``: with :data:`BUDGET_ENV` naming a
file, :func:`spanft.stage.run.run_stage` appends one JSON line per stage process to it, holding the process's
start (the kernel's, so the interpreter's start and imports count), each mark it passes (the checks before the
work one by one, the work, the records after it) and its exit (an ``atexit`` hook). Without it, a mark costs a
dictionary lookup. What a stage computes never reads any of this."""

from __future__ import annotations

import atexit
import json
import os
import time
from pathlib import Path

BUDGET_ENV = "SPANFT_STAGE_BUDGET"

_marks: list[tuple[str, float]] = []
_stage: list[str | None] = []


def start(stage: str | None) -> None:
    """The stage process's checks begin (``stage``: DVC's name for it, None by hand): record when, and write the
    line at exit."""
    if not os.environ.get(BUDGET_ENV) or _stage:
        return
    _stage.append(stage)
    _marks.append(("entered", time.time()))
    atexit.register(_write)


def mark(name: str) -> None:
    """The phase ``name`` ended now (a no-op unless :func:`start` recorded this process)."""
    if _stage:
        _marks.append((name, time.time()))


def _process_start() -> float:
    """When the kernel started this process, in ``time.time()``'s clock: its age (the time since boot less its
    start in clock ticks, ``/proc/self/stat``) back from now. psutil's ``create_time`` adds the boot time in
    whole seconds, up to a second off."""
    try:
        fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return time.time() - age
    except (OSError, ValueError, IndexError, AttributeError):
        import psutil

        return psutil.Process().create_time()


def _write() -> None:
    path = os.environ.get(BUDGET_ENV)
    if not path:
        return
    line = {"stage": _stage[0], "pid": os.getpid(), "created": _process_start(), "marks": _marks,
            "exit": time.time()}
    with open(path, "a", encoding="utf-8") as handle:  # one short append: whole lines from concurrent stages
        handle.write(json.dumps(line) + "\n")
