"""Progress over the whole graph while ``dvc repro`` or ``dvc exp run`` runs, told by the stages themselves.

Each stage's first line says which stage of how many runs, the time since dvc started and about how long is
left; the last planned stage ends with a summary (the headline gains, where the reports are); ``spanft status``
tells the same from another terminal. No daemon: every stage is a fresh process, and the stages of one dvc
process share what they know through a session log under DVC's own temporary folder (:data:`FOLDER` under
``DVC_ROOT``, which DVC sets for every stage: the main repo's root, for an experiment in a temporary workspace
too). A session is the nearest ``dvc`` process above the stage, named by its pid and its start time, so that a
pid reused later is not taken for it.

- The first stage of a session writes the plan: the stages DVC evaluates, in its order
  (``dvc.repo.reproduce.plan_repro`` on dvc's own command line, parsed by DVC's parser), from this stage on, each
  marked ``yes`` (changed now, or forced) or ``maybe`` (downstream of one that runs: it runs only if its inputs
  come out different), with the seconds it is expected to take: its time in an earlier session (:data:`TIMES`),
  else the cost model's for a fine-tuning run (:mod:`spanft.cost.estimate`), else unknown. Only read-only
  calls: DVC holds its repo lock while a stage runs. When DVC cannot say, the lines give ``stage k`` alone.
- Each stage appends its start and its end; a stage that ends well records its time for later sessions.
- Stage k of N: k = the stages this session has started, N = k + the planned stages after the current one (one
  that DVC skips, unchanged, drops out when a later one starts); "at most" while some of those are ``maybe``.
- The time left (:mod:`spanft.stage.forecast`): the stages ahead at this run's own pace (the stages done here
  against their expected seconds), with DVC's gaps between stages; a range ("about 12–20 min left") while most
  stages ahead were never timed.

None of this is a DVC output or read by a stage's computation: the outputs cannot depend on it. Whatever goes
wrong here is logged at debug level and the stage runs on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from spanft.english import count_of
from spanft.fileio import repository_root
from spanft.stage.forecast import forecast
from spanft.stage.repro_plan import dvc_plan, repro_arguments
from spanft.stage.session import (
    FOLDER,
    Session,
    append_record,
    dvc_processes,
    find_session,
    read_records,
    read_times,
    record_time,
    sessions,
)

log = logging.getLogger("spanft")


# Switches of the Hugging Face libraries' own bars, which otherwise draw on a log or a pipe too; read when the
# library is imported
HF_BAR_SWITCHES = ("HF_DATASETS_DISABLE_PROGRESS_BARS", "HF_HUB_DISABLE_PROGRESS_BARS")


def bars_only_on_a_terminal() -> None:
    """Progress bars only on a terminal: off one (a log file, a pipe), the Hugging Face libraries' are turned off
    here (call before they are imported); spanft's own bars and the Trainer's check stderr themselves (tqdm's
    ``disable=None``: off where stderr is not a terminal)."""
    if not sys.stderr.isatty():
        for name in HF_BAR_SWITCHES:
            os.environ.setdefault(name, "1")


# ------------------------------------------------------------------------------------------- where a session is


@dataclass(frozen=True)
class Progress:
    """Where a session stands at one moment."""

    stage: str | None  # the stage started last
    running: bool  # False: it has ended, and the next has not started yet
    number: int  # k: the stages this session started
    total: int | None  # N: k + the planned stages after the last one started; None without a plan
    at_most: bool  # some of those may not run (``maybe``)
    elapsed: float  # seconds since dvc started
    left: float | None  # seconds of the stages still to run that have a time to go by (None: none has), at this
    # run's pace, with DVC's gaps between them (spanft.stage.forecast)
    untimed: int  # stages still to run without a time to go by
    done: int  # stages that ended well
    low: float | None = None  # the range of ``left`` while most stages still to run were never timed, else None
    high: float | None = None


def progress_of(records: list[dict], started: float, now: float) -> Progress:
    """Where the session whose log holds ``records`` stands at ``now`` (``started``: when dvc started)."""
    plan = next((r["plan"] for r in records if "plan" in r), None)
    starts = [r for r in records if "start" in r]
    ends = {r["end"]: r for r in records if "end" in r}
    stage = starts[-1]["start"] if starts else None
    running = stage is not None and stage not in ends
    done = sum(1 for r in ends.values() if r.get("status") == 0)
    elapsed = now - started
    if plan is None:
        return Progress(stage, running, len(starts), None, False, elapsed, None, 0, done)
    names = [entry["stage"] for entry in plan]
    if stage not in names:  # not the plan DVC follows: no count rather than a wrong one
        return Progress(stage, running, len(starts), None, False, elapsed, None, 0, done)
    at = names.index(stage) + 1
    ahead = plan[at:]
    since = now - (starts[-1]["at"] if running else ends[stage]["at"])
    f = forecast(plan, records, at - 1, running, since, since)
    return Progress(stage, running, len(starts), len(starts) + len(ahead),
                    any(entry.get("runs") == "maybe" for entry in ahead), elapsed, f.middle, f.untimed, done,
                    f.low if f.ranged else None, f.high if f.ranged else None)


def duration(seconds: float) -> str:
    """``45 s``, ``4 min 10 s``, ``2 h 5 min``: whole units, the two largest that apply."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def progress_line(p: Progress) -> str:
    """``stage 12 of 38: glue_sf@tiny-cola-1 · 4 min 10 s in · about 9 min left``."""
    count = f"stage {p.number}"
    if p.total is not None:
        count += f" of {'at most ' if p.at_most else ''}{p.total}"
    head = f"{count}: {p.stage}" if p.running else f"{count} done: {p.stage}"
    parts = [head, f"{duration(p.elapsed)} in"]
    if p.total is not None:
        untimed = f"{count_of(p.untimed, 'stage')} never timed" if p.untimed else ""
        if p.left is None:
            parts.append(f"time left not known: {untimed}" if untimed else "nothing left")
        else:
            ranged = between(p.low, p.high) if p.low is not None and p.high is not None else None
            if ranged:
                left = f"about {ranged} left"
            else:
                left = "under 1 s left" if p.left < 0.5 else f"about {duration(p.left)} left"
            parts.append(f"{left} + {untimed}" if untimed else left)
    return " · ".join(parts)


def between(low: float, high: float) -> str | None:
    """``12–20 min``, ``40–90 s``, ``1–3 h``: a range in the largest unit its upper end holds twice, widened to
    whole units (the lower end down, the upper one up); None when both ends come to the same figure."""
    unit, name = next((u, n) for u, n in ((3600, "h"), (60, "min"), (1, "s")) if high >= 2 * u or u == 1)
    lo, hi = math.floor(low / unit), math.ceil(high / unit)
    return f"{lo}–{hi} {name}" if hi > lo else None


# ------------------------------------------------------------------------------------------- a stage's part


@dataclass
class StageRun:
    """A running stage's place in its session."""

    session: Session
    folder: Path
    stage: str
    started: float


def stage_started(stage: str) -> StageRun | None:
    """Log the stage's start, and print where the session stands; None outside a dvc session."""
    root = repository_root()
    if root is None:
        return None
    folder = root / FOLDER
    session = find_session(folder)
    if session is None:
        return None
    if not read_records(session.log):
        _begin(session, folder, stage)
    started = _process_start()  # the stage's time counts its interpreter's start and imports
    append_record(session.log, {"start": stage, "at": started})
    records = read_records(session.log)
    _tell(records, [progress_line(progress_of(records, session.started, time.time()))])
    return StageRun(session, folder, stage, started)


def _tell(records: list[dict], lines: list[str]) -> None:
    """Print to stderr, unless dvc was told to be quiet (``dvc repro -q``)."""
    if not any(r.get("quiet") for r in records):
        for line in lines:
            print(f"spanft: {line}", file=sys.stderr, flush=True)


def _process_start() -> float:
    import psutil

    try:
        return psutil.Process().create_time()
    except psutil.Error:
        return time.time()


def _begin(session: Session, folder: Path, stage: str) -> None:
    """The first stage of a session: the plan, and the logs of sessions whose dvc has ended removed."""
    _forget_ended(folder)
    record: dict[str, Any] = {"command": ["dvc", *session.arguments]}
    try:
        args = repro_arguments(session.arguments)
        record["quiet"] = bool(getattr(args, "quiet", 0))
        record["plan"] = dvc_plan(args, stage, read_times(folder))
    except Exception as exc:  # noqa: BLE001 - DVC cannot say (a version that differs...): no count, no estimate
        log.debug("progress: no plan from DVC: %s", exc)
    append_record(session.log, record)


def _forget_ended(folder: Path) -> None:
    for path, _, _, running in sessions(folder):
        if not running:
            path.unlink(missing_ok=True)


def stage_ended(run: StageRun, status: int) -> None:
    """Log the stage's end; a good one keeps its time, and the last planned one prints the summary."""
    now = time.time()
    append_record(run.session.log, {"end": run.stage, "at": now, "status": status})
    if status != 0:
        return
    record_time(run.folder, run.stage, now - run.started)
    records = read_records(run.session.log)
    p = progress_of(records, run.session.started, now)
    if p.total is not None and p.total == p.number:
        _tell(records, summary_lines(records, p, " ".join(("dvc", *run.session.arguments))))


# ------------------------------------------------------------------------------------------- the summary


def summary_lines(records: list[dict], p: Progress, command: str) -> list[str]:
    """What the session did, and for the metrics of a stage that ran (the report's: its headline file where it
    declares one, else its metrics file), the headline gains and where the reports are."""
    lines = [f"done: {command}: {count_of(p.done, 'stage')} in {duration(p.elapsed)}"]
    ran = {r["end"] for r in records if "end" in r and r.get("status") == 0}
    plan = next((r["plan"] for r in records if "plan" in r), None) or []
    for entry in plan:
        files = [Path(m) for m in entry.get("metrics", [])] if entry["stage"] in ran else []
        chosen = [f for f in files if f.name == HEADLINE] or files[:1]
        lines += [line for f in chosen for line in headline_lines(f)]
    return lines


HEADLINE = "headline.json"  # the report's gains with their intervals, x 100 (report/build.py)


def headline_lines(metrics: Path) -> list[str]:
    """The headline gains and where the reports are: from ``headline.json`` each table's gain and 95% interval
    (x 100 as printed, named as its table names it, with the data's kind), else SF − baseline per study and
    backbone from the report's metrics. A file of another shape gives no gains, never an error."""
    try:
        tree = json.loads(metrics.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(tree, dict):
        return []
    from spanft.data.headline import (  # the one printing of a gain, as headline.json holds it
        study_gains,
        summary_gains,
    )

    head, gains = summary_gains(tree) if metrics.name == HEADLINE else study_gains(tree)
    folder = metrics.parent
    return [f"{head}{'; '.join(gains)}" if gains else "no headline gains",
            f"reports: {folder / 'index.md'} (verdicts with their intervals), {folder / 'tables'}/, "
            f"{folder / 'figures'}/"]


# ------------------------------------------------------------------------------------------- another terminal


def status_lines(root: Path, now: float | None = None) -> list[str]:
    """``spanft status``: one line per dvc session running in ``root`` (where it stands), or that none runs.

    A dvc that has started no stage yet (it is checking what changed) has no log: it is found among the
    processes, a ``dvc repro`` or ``dvc exp run`` working in ``root``."""
    now = time.time() if now is None else now
    lines, logged = [], set()
    for path, pid, started, running in sessions(root / FOLDER):
        if not running:
            continue
        logged.add(pid)
        records = read_records(path)
        command = next((r["command"] for r in records if "command" in r), ["dvc"])
        p = progress_of(records, started, now)
        where = progress_line(p) if p.stage else f"{duration(p.elapsed)} in, no stage started yet"
        lines.append(f"{' '.join(command)} (pid {pid}): {where}")
    for pid, started, arguments in dvc_processes(root):
        if pid not in logged:
            lines.append(f"dvc {' '.join(arguments)} (pid {pid}): {duration(now - started)} in, no stage started yet")
    return lines or ["no dvc repro or dvc exp run is running here"]


@contextlib.contextmanager
def stage_progress(stage: str | None) -> Iterator[None]:
    """Around a stage's body: its start and end in the session log, the progress line, the summary at the end.

    Nothing here may stop the stage: an error of its own is logged at debug level and forgotten."""
    run = None
    if stage:
        try:
            run = stage_started(stage)
        except Exception as exc:  # noqa: BLE001 - progress is told, never needed
            log.debug("progress: %s", exc)
    status = 1
    try:
        yield
        status = 0
    finally:
        if run is not None:
            try:
                stage_ended(run, status)
            except Exception as exc:  # noqa: BLE001
                log.debug("progress: %s", exc)
