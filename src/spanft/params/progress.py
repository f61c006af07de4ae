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
  else the cost model's for a fine-tuning run (:mod:`spanft.params.estimate`), else unknown. Only read-only
  calls: DVC holds its repo lock while a stage runs. When DVC cannot say, the lines give ``stage k`` alone.
- Each stage appends its start and its end; a stage that ends well records its time for later sessions.
- Stage k of N: k = the stages this session has started, N = k + the planned stages after the current one (one
  that DVC skips, unchanged, drops out when a later one starts); "at most" while some of those are ``maybe``.

None of this is a DVC output or read by a stage's computation: the outputs cannot depend on it. Whatever goes
wrong here is logged at debug level and the stage runs on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from spanft.english import count_of
from spanft.fileio import repository_root

log = logging.getLogger("spanft")

FOLDER = Path(".dvc") / "tmp" / "spanft-progress"  # DVC's temp folder (dvc/repo: Repo.tmp_dir), never tracked
TIMES = "stage-times.json"  # {stage: seconds of its last good run}, kept across sessions
_ANCESTORS = 8  # how far up from a stage to look for dvc (a shell, a launcher between them)


@dataclass(frozen=True)
class Session:
    """One ``dvc repro`` or ``dvc exp run`` process, and the log its stages share."""

    pid: int
    started: float  # the process's start time (epoch seconds)
    arguments: tuple[str, ...]  # dvc's own, after the program: ("repro", "dictionary")
    log: Path


def dvc_arguments(cmdline: list[str]) -> list[str] | None:
    """dvc's own arguments in a process's command line (``dvc repro x``, ``python /venv/bin/dvc repro x``,
    ``python -m dvc repro x``); None when the process is not dvc."""
    for i, arg in enumerate(cmdline[:3]):
        if Path(arg).name == "dvc":
            return cmdline[i + 1:]
        if arg == "-m" and cmdline[i + 1:i + 2] == ["dvc"]:
            return cmdline[i + 2:]
    return None


def session_log(folder: Path, pid: int, started: float) -> Path:
    return folder / f"{pid}-{round(started * 1000)}.jsonl"


def sessions(folder: Path) -> Iterator[tuple[Path, int, float, bool]]:
    """Each session log under ``folder``: its path, dvc's pid and start time, and whether that dvc still runs."""
    for path in sorted(folder.glob("*.jsonl")):
        pid, _, millis = path.stem.partition("-")
        if pid.isdigit() and millis.isdigit():
            yield path, int(pid), int(millis) / 1000, alive(int(pid), int(millis) / 1000)
        else:
            yield path, 0, 0.0, False


def find_session(folder: Path) -> Session | None:
    """The dvc process this one runs under (the nearest dvc above it), or None (a script run by hand)."""
    import psutil

    try:
        process = psutil.Process().parent()
        for _ in range(_ANCESTORS):
            if process is None:
                return None
            arguments = dvc_arguments(process.cmdline())
            if arguments is not None:
                started = process.create_time()
                return Session(process.pid, started, tuple(arguments), session_log(folder, process.pid, started))
            process = process.parent()
    except psutil.Error:
        return None
    return None


def alive(pid: int, started: float) -> bool:
    """Whether the process ``pid`` still runs and is the one that started at ``started`` (not a reused pid)."""
    import psutil

    try:
        return abs(psutil.Process(pid).create_time() - started) < 0.01
    except psutil.Error:
        return False


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


# ------------------------------------------------------------------------------------------- the log


def read_records(path: Path) -> list[dict]:
    """The log's records in order; a line that is not a JSON object (cut short by a crash) is left out."""
    records = []
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    records.append(record)
    return records


def append_record(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:  # one short write in append mode: whole lines
        handle.write(json.dumps(record) + "\n")


def read_times(folder: Path) -> dict[str, float]:
    with contextlib.suppress(OSError, ValueError):
        times = json.loads((folder / TIMES).read_text(encoding="utf-8"))
        if isinstance(times, dict):
            return {name: float(s) for name, s in times.items() if isinstance(s, (int, float))}
    return {}


def record_time(folder: Path, stage: str, seconds: float) -> None:
    """Keep ``stage``'s time for later sessions (written whole, then renamed: a reader sees old or new)."""
    times = read_times(folder)
    times[stage] = round(seconds, 3)
    partial = folder / f"{TIMES}.{os.getpid()}"
    partial.write_text(json.dumps(times, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    partial.replace(folder / TIMES)


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
    left: float | None  # seconds of the stages still to run that have a time to go by (None: none has)
    untimed: int  # stages still to run without a time to go by
    done: int  # stages that ended well


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
    expected = [entry.get("seconds") for entry in ahead]
    if running:
        so_far = now - starts[-1]["at"]
        current = plan[at - 1].get("seconds")
        expected.append(None if current is None else max(current - so_far, 0.0))
    timed = [s for s in expected if s is not None]
    return Progress(stage, running, len(starts), len(starts) + len(ahead),
                    any(entry.get("runs") == "maybe" for entry in ahead), elapsed,
                    sum(timed) if timed else None, len(expected) - len(timed), done)


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
            left = "under 1 s left" if p.left < 0.5 else f"about {duration(p.left)} left"
            parts.append(f"{left} + {untimed}" if untimed else left)
    return " · ".join(parts)


# ------------------------------------------------------------------------------------------- the plan


def dvc_plan(args: Any, current: str, times: dict[str, float]) -> list[dict]:
    """The stages dvc will evaluate from ``current`` on, in DVC's order, each with ``runs`` (``yes``: changed now,
    or forced; ``maybe``: downstream of one that runs), ``seconds`` (expected; None: not known) and ``metrics``
    (the metrics files it declares).

    ``args``: dvc's command line as :func:`repro_arguments` reads it. Raises whatever DVC raises when it cannot
    say.
    """
    from dvc.repo import Repo
    from dvc.repo.reproduce import get_active_graph

    with Repo() as repo:
        graph = get_active_graph(repo.index.graph)  # edges: from a stage to the stages it reads from
        steps = _steps(repo, graph, args)
        names = [step.addressing for step in steps]
        steps = steps[names.index(current):] if current in names else []
        runs = _will_run(steps, graph, _flag(args, "force"), _flag(args, "force_downstream"))
        metrics = {step.addressing: [str(out.def_path) for out in step.outs if out.metric] for step in steps}
    modelled = _modelled_seconds([name for name in runs if name not in times])
    return [{"stage": name, "runs": kind, "seconds": times.get(name, modelled.get(name)),
             **({"metrics": metrics[name]} if metrics.get(name) else {})} for name, kind in runs.items()]


def _flag(args: Any, name: str) -> bool:
    return bool(getattr(args, name, False))  # an option the command lacks is off (exp run has no --glob)


def _steps(repo: Any, graph: Any, args: Any) -> list:
    """The stages dvc evaluates, in its order: what ``dvc.repo.reproduce.reproduce`` makes of the options."""
    from dvc.dvcfile import PROJECT_FILE
    from dvc.repo.reproduce import collect_stages, plan_repro

    single_item, downstream = _flag(args, "single_item"), _flag(args, "downstream")
    if _flag(args, "all_pipelines") or _flag(args, "pipeline"):
        single_item = downstream = False
    targets = getattr(args, "targets", None)
    if _flag(args, "all_pipelines"):
        stages = []
    elif targets:
        stages = collect_stages(repo, targets, recursive=_flag(args, "recursive"), glob=_flag(args, "glob"))
    else:  # dvc.yaml's stages, as collect_stages would read them: from the index, not parsed a second time
        here = os.path.abspath(PROJECT_FILE)
        stages = [stage for stage in repo.index.stages if os.path.abspath(stage.path) == here]
    return stages if single_item else plan_repro(graph, stages, pipeline=_flag(args, "pipeline"),
                                                 downstream=downstream)


def repro_arguments(arguments: tuple[str, ...]) -> Any:
    """dvc's command line (after the program) parsed by DVC's own parser; a command other than ``repro`` or
    ``exp run`` (``exp exec-run``, which runs a queued experiment) reads as a plain ``dvc repro``."""
    from dvc.cli import parse_args

    try:
        args = parse_args(list(arguments))
    except (Exception, SystemExit):  # DVC's parser raises its own error; argparse may exit
        args = None
    if getattr(getattr(args, "func", None), "__name__", None) not in REPRO_COMMANDS:
        return parse_args(["repro"])
    return args


REPRO_COMMANDS = ("CmdRepro", "CmdExperimentsRun")  # dvc repro, dvc exp run: the same options


def _will_run(steps: list, graph: Any, force: bool, force_downstream: bool) -> dict[str, str]:
    """``{stage: "yes" | "maybe"}`` for ``steps`` in order (the first one runs now; a stage left out does not run).

    Read through the outputs' and dependencies' own ``status()``: ``Stage.changed`` asserts that this process
    holds the repo lock, which the running dvc does. A dependency that a stage planned to run will rewrite
    tells nothing yet (the running stage's outputs are gone): a stage whose other inputs, definition and
    outputs are as recorded is ``maybe``."""
    kinds: dict[str, str] = {}
    dvc_log = logging.getLogger("dvc")
    level = dvc_log.level
    dvc_log.setLevel(logging.WARNING)  # DVC logs each changed dependency at info level
    try:
        for i, stage in enumerate(steps):
            upstream = [dep for dep in graph.successors(stage) if dep.addressing in kinds]
            forced = force or (force_downstream and any(kinds[dep.addressing] == "yes" for dep in upstream))
            rewritten = [out.fs_path for dep in upstream for out in dep.outs]
            if i == 0 or forced or _changed(stage, rewritten):
                kinds[stage.addressing] = "yes"
            elif upstream:
                kinds[stage.addressing] = "maybe"
    finally:
        dvc_log.setLevel(level)
    return kinds


def _changed(stage: Any, rewritten: list[str]) -> bool:
    """What ``Stage.changed`` says, from the stage's definition, its outputs and its dependencies other than
    those under (or holding) a path in ``rewritten``; a status DVC cannot take counts as changed."""
    def overlaps(path: str) -> bool:
        return any(path == other or path.startswith(other + os.sep) or other.startswith(path + os.sep)
                   for other in rewritten)

    try:
        if stage.always_changed or stage.changed_stage() or any(out.status() for out in stage.outs):
            return True
        return not stage.frozen and any(dep.status() for dep in stage.deps if not overlaps(dep.fs_path))
    except Exception:  # noqa: BLE001 - DVC's own errors: it will run the stage, or fail on it
        return True


def _modelled_seconds(names: list[str]) -> dict[str, float]:
    """The cost model's seconds for the fine-tuning stages among ``names`` (on an NVIDIA GPU when the machine
    has a driver for one, else on the CPU): a first guess, until the stage has run once. Empty when the model
    cannot say (params that do not load: the stage says why)."""
    from spanft.errors import SpanftError
    from spanft.params.estimate import device_steps, run_hours
    from spanft.params.plan import load_plan
    from spanft.params.stage import GROUPS, members

    groups = {name.partition("@")[0] for name in names}
    if not any(group in GROUPS and GROUPS[group].script == "finetune" for group in groups):
        return {}
    try:
        plan = load_plan()
        kind = "H100" if Path("/proc/driver/nvidia/version").exists() else "CPU"
        device = next(d for d in device_steps(Path.cwd()) if d.name == kind)
    except (SpanftError, OSError):
        return {}
    found = {group: members(plan, group) for group in groups if group in GROUPS and GROUPS[group].script == "finetune"}
    seconds = {}
    for name in names:
        group, _, key = name.partition("@")
        if key not in found.get(group, {}):
            continue
        study, backbone, task, variant, seed = GROUPS[group].argv(found[group][key])
        hours = run_hours(plan.find_run(study, backbone, task, variant, int(seed)), plan, device)
        if hours is not None:
            seconds[name] = hours * 3600
    return seconds


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
    from spanft.report.headline import (  # the one printing of a gain (report side)
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


def dvc_processes(root: Path) -> Iterator[tuple[int, float, list[str]]]:
    """``(pid, start time, dvc's arguments)`` of each ``dvc repro`` or ``dvc exp run`` working in ``root``."""
    import psutil

    real = Path(os.path.realpath(root))
    for process in psutil.process_iter():
        try:
            arguments = dvc_arguments(process.cmdline())
            command = [arg for arg in arguments or [] if not arg.startswith("-")][:2]
            if command[:1] == ["repro"] or command == ["exp", "run"]:
                cwd = Path(process.cwd())
                if cwd == real or real in cwd.parents:
                    yield process.pid, process.create_time(), arguments
        except psutil.Error:  # gone meanwhile, or another user's
            continue


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
