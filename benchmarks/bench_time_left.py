"""How true the time left is: each forecast at 10%, 50% and 90% of the way against the actual end.

    python benchmarks/bench_time_left.py [--reduced] [--cases quiet,loaded] [--dict-size N] [--work DIR] [--repro-only | --exp-only]
    python benchmarks/bench_time_left.py --from DIR [--fractions F,...]   # again, from an earlier call's logs
    python benchmarks/bench_time_left.py --log FILE [--start EPOCH] [--end EPOCH] [--fractions F,...]

For each case, a fresh project (no stage timed before: what a new user has) runs `dvc repro`, then
`dvc exp run -S dict_size=N` (its stages timed by the repro before it); "quiet" runs alone, "loaded" beside
`python -c "while True: pass"` (started before dvc, stopped after it). The project is a clean `git clone` of HEAD
(the default embedded profile; dict_size 100000), or with ``--reduced`` the small graph of tests/test_graph.py
(a few minutes on 2 cores; dict_size 1500) to check that the benchmark works.

After each run the session's log (``.dvc/tmp/spanft-progress/``) is read back, and at 10%, 50% and 90% of the
run's wall time the forecast is taken as `spanft status` would have printed it at that moment
(``spanft.stage.progress.progress_of``): the time left at this run's pace, the range where one is shown, against
the time that was actually left. The goal: within ±25% from half-way on.

Re-evaluation, no run: each case's entry in ``time_left.json`` (``time_left-exp.json``) keeps what its rows are
computed from (its session log, copied beside it, dvc's start and the run's end), so ``--from DIR`` recomputes
every case's forecasts with the code checked out now and prints the same table, with the figure the run itself
printed beside each. ``--log FILE`` does so for one session log from anywhere (``.dvc/tmp/spanft-progress/`` of
any project, e.g. one bench_stage_budget.py built): dvc's start from the log's name (``PID-MILLIS.jsonl``, else
the first stage's start, or ``--start``), the end at the last record (or ``--end``; DVC's save after the last
stage is then left out). ``--fractions 0.5,0.55,...,0.95`` forecasts at more points of the way than three.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from bench_fanout import ROOT

from spanft.stage.progress import duration, progress_line, progress_of
from spanft.stage.session import FOLDER, read_records

HOG = [sys.executable, "-c", "while True: pass"]
FRACTIONS = (0.1, 0.5, 0.9)
GOAL = 0.25  # the forecast's error allowed from half-way on, as a share of the time actually left


def new_project(work: Path, name: str, reduced: bool) -> Path:
    """A project no stage has run in: the reduced graph of tests/test_graph.py, or a clean clone of HEAD."""
    project = work / name
    if project.exists():
        sys.exit(f"bench_time_left: {project} exists: name another --work")
    if reduced:
        from test_graph import new_project as reduced_project
        from test_graph import reduced_params

        reduced_project(project, reduced_params())
        git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
        subprocess.run([*git, "add", "-A"], cwd=project, check=True)
        subprocess.run([*git, "commit", "-q", "-m", "reduced graph"], cwd=project, check=True)  # exp run needs one
    else:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(project)], check=True)
    return project


def timed_run(command: list[str], project: Path, log: Path, loaded: bool) -> tuple[float, float]:
    """Run ``command`` in ``project`` (its output to ``log``), beside a CPU hog when ``loaded``: (start, end)."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(project / "src")}
    hog = subprocess.Popen(HOG) if loaded else None
    try:
        start = time.time()
        with log.open("w", encoding="utf-8") as out:
            done = subprocess.run(command, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, check=False)
        end = time.time()
    finally:
        if hog:
            hog.kill()
            hog.wait()
    if done.returncode != 0:
        sys.exit(f"bench_time_left: {' '.join(command)} failed ({done.returncode}); see {log}")
    return start, end


def session_log(project: Path, after: float, keep: Path) -> tuple[Path, float]:
    """The log of the session that started after ``after`` (copied to ``keep``: the next session removes it), and
    when its dvc started."""
    logs = [(int(p.stem.partition("-")[2]) / 1000, p) for p in (project / FOLDER).glob("*.jsonl")
            if p.stem.partition("-")[2].isdigit()]
    started, path = max((s, p) for s, p in logs if s >= after - 5)
    shutil.copy(path, keep)
    return keep, started


def forecasts(log: Path, started: float, end: float, fractions: tuple[float, ...] = FRACTIONS) -> list[dict]:
    """At each fraction of the way (from dvc's start at ``started`` to its end), what the forecast said and what
    was actually left."""
    records = read_records(log)
    rows = []
    for fraction in fractions:
        now = started + fraction * (end - started)
        seen = [r for r in records if r.get("at", float("-inf")) <= now]
        p = progress_of(seen, started, now)
        actual = end - now
        rows.append({"fraction": fraction, "line": progress_line(p) if p.stage else "no stage started yet",
                     "actual": actual, "left": p.left, "low": p.low, "high": p.high,
                     "error": None if p.left is None else (p.left - actual) / actual})
    return rows


def print_case(name: str, command: list[str], start: float, end: float, rows: list[dict],
               before: list[dict] | None = None) -> bool:
    """The case's table; ``before``: the rows its run computed, whose forecast is shown beside a recomputed one."""
    print(f"{name}: {' '.join(command)}: {duration(end - start)}", flush=True)
    for i, row in enumerate(rows):
        said = "no estimate" if row["left"] is None else f"forecast {duration(row['left'])}"
        if row["low"] is not None:
            inside = row["low"] <= row["actual"] <= row["high"]
            said += f" (shown {duration(row['low'])} to {duration(row['high'])}: {'holds' if inside else 'misses'})"
        error = "" if row["error"] is None else f", {_percent(row['error'])}"
        was = _when_run(before[i]) if before and i < len(before) else ""
        print(f"  at {100 * row['fraction']:.0f}%: {said}; actual {duration(row['actual'])}{error}{was}")
        print(f"      the line: {row['line']}")
    kept = within_goal(rows)
    late = [abs(row["error"]) for row in rows if row["fraction"] >= 0.5 and row["error"] is not None]
    spread = f" (mean miss {100 * sum(late) / len(late):.0f}%, largest {100 * max(late):.0f}%)" if late else ""
    print(f"  within ±{100 * GOAL:.0f}% from half-way on: {'yes' if kept else 'no'}{spread}", flush=True)
    return kept


def within_goal(rows: list[dict]) -> bool:
    return all(row["error"] is not None and abs(row["error"]) <= GOAL for row in rows if row["fraction"] >= 0.5)


def _percent(error: float) -> str:
    return f"{100 * error:+.0f}%"


def _when_run(row: dict) -> str:
    if row.get("left") is None:
        return " (when run: no estimate)"
    return f" (when run: {duration(row['left'])}, {_percent(row['error'])})"


# ------------------------------------------------------------------------------------------- again, from the logs

RESULTS = ("time_left.json", "time_left-exp.json")  # what a call writes in its --work folder


def case_entry(command: list[str], start: float, started: float, end: float, log: Path, rows: list[dict]) -> dict:
    """A case's entry in the results: its rows, and what they are computed from (``log``: its name, beside the
    results file)."""
    return {"command": command, "seconds": end - start, "start": start, "started": started, "end": end,
            "log": log.name, "rows": rows, "kept": within_goal(rows)}


def reevaluate(folder: Path, fractions: tuple[float, ...] = FRACTIONS) -> dict[str, dict]:
    """Every case the results files in ``folder`` hold, its rows computed again from its saved log by the code
    checked out now: {label: {"entry": the stored entry, "rows": the rows now}}."""
    files = [folder / name for name in RESULTS if (folder / name).is_file()]
    if not files:
        sys.exit(f"bench_time_left: no {' or '.join(RESULTS)} in {folder}")
    cases = {}
    for path in files:
        for label, entry in json.loads(path.read_text(encoding="utf-8")).items():
            if not {"log", "started", "end"} <= set(entry):
                sys.exit(f"bench_time_left: {path}: {label} keeps no log, start and end (written before --from "
                         f"was added): run it again")
            log = folder / entry["log"]
            if not log.is_file():
                sys.exit(f"bench_time_left: {log} is missing: {label} cannot be computed again")
            cases[label] = {"entry": entry, "rows": forecasts(log, entry["started"], entry["end"], fractions)}
    return cases


def from_folder(folder: Path, fractions: tuple[float, ...]) -> int:
    print(f"bench_time_left: again, from the logs in {folder}, with the forecast checked out now")
    for label, case in reevaluate(folder, fractions).items():
        entry = case["entry"]
        stored = entry.get("rows") if fractions == FRACTIONS else None
        print_case(label, entry.get("command", ["dvc"]), entry.get("start", entry["started"]), entry["end"],
                   case["rows"], stored)
    return 0


def log_bounds(log: Path, start: float | None, end: float | None) -> tuple[float, float]:
    """dvc's start and the run's end for one session log: as given, else from the log's name (``PID-MILLIS``)
    or its first stage's start, and its last record."""
    records = read_records(log)
    times = [r["at"] for r in records if isinstance(r.get("at"), (int, float))]
    if not times:
        sys.exit(f"bench_time_left: {log} holds no stage's start or end")
    pid, _, millis = log.stem.partition("-")
    named = int(millis) / 1000 if pid.isdigit() and millis.isdigit() else None
    started = start if start is not None else named if named is not None else times[0]
    finished = end if end is not None else times[-1]
    if finished <= started:
        sys.exit(f"bench_time_left: the end ({finished}) is not after dvc's start ({started})")
    return started, finished


def from_log(log: Path, start: float | None, end: float | None, fractions: tuple[float, ...]) -> int:
    if not log.is_file():
        sys.exit(f"bench_time_left: no file {log}")
    started, finished = log_bounds(log, start, end)
    command = next((r["command"] for r in read_records(log) if "command" in r), ["dvc"])
    print(f"bench_time_left: {log}, dvc started at {started:.3f}, ended at {finished:.3f}")
    print_case(log.name, command, started, finished, forecasts(log, started, finished, fractions))
    return 0


# ------------------------------------------------------------------------------------------- a run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reduced", action="store_true", help="the small graph of tests/test_graph.py")
    parser.add_argument("--cases", default="quiet,loaded", help="quiet, loaded or both (default: both)")
    parser.add_argument("--dict-size", type=int, default=None, help="the experiment's dict_size (default: 100000, "
                        "reduced: 1500)")
    parser.add_argument("--work", type=Path, default=None, help="folder for the projects (default: a temporary one)")
    parser.add_argument("--exp-only", action="store_true", help="only the dvc exp run, in the projects --work holds "
                        "from an earlier call (their repro done)")
    parser.add_argument("--repro-only", action="store_true", help="only the dvc repro, in fresh projects (a later "
                        "--exp-only call runs the exp in them: a project's outputs can be kept in between)")
    parser.add_argument("--from", dest="again", type=Path, default=None, metavar="DIR",
                        help="no run: every case of an earlier call (its --work folder), computed again")
    parser.add_argument("--log", type=Path, default=None, help="no run: one session log's forecasts")
    parser.add_argument("--start", type=float, default=None, help="with --log: when dvc started (epoch seconds)")
    parser.add_argument("--end", type=float, default=None, help="with --log: when the run ended (epoch seconds)")
    parser.add_argument("--fractions", default=None, help="with --from or --log: the fractions of the way to "
                        "forecast at, e.g. 0.5,0.6,0.7,0.8,0.9 (default: 0.1,0.5,0.9)")
    args = parser.parse_args()
    if args.repro_only and args.exp_only:
        sys.exit("bench_time_left: --repro-only and --exp-only: one or the other")
    if args.again is not None and args.log is not None:
        sys.exit("bench_time_left: --from and --log: one or the other")
    if (args.start is not None or args.end is not None) and args.log is None:
        sys.exit("bench_time_left: --start and --end go with --log")
    fractions = fractions_of(args.fractions) if args.fractions else FRACTIONS
    if args.fractions and args.again is None and args.log is None:
        sys.exit("bench_time_left: --fractions goes with --from or --log")
    if args.again is not None:
        return from_folder(args.again, fractions)
    if args.log is not None:
        return from_log(args.log, args.start, args.end, fractions)
    return run_cases(args)


def fractions_of(text: str) -> tuple[float, ...]:
    try:
        fractions = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        fractions = ()
    if not fractions or not all(0 < f < 1 for f in fractions):
        sys.exit(f"bench_time_left: --fractions {text}: name fractions between 0 and 1, e.g. 0.5,0.7,0.9")
    return fractions


def run_cases(args: argparse.Namespace) -> int:
    cases = [case.strip() for case in args.cases.split(",") if case.strip()]
    if not cases or set(cases) - {"quiet", "loaded"}:
        sys.exit("bench_time_left: --cases takes quiet, loaded or quiet,loaded")
    dict_size = args.dict_size or (1500 if args.reduced else 100000)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_time_left-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"bench_time_left: {'reduced graph' if args.reduced else 'embedded profile'}, projects in {work}")
    results = {}
    runs = [("repro", ["dvc", "repro"]), ("exp", ["dvc", "exp", "run", "-S", f"dict_size={dict_size}"])]
    for case in cases:
        project = work / case if args.exp_only else new_project(work, case, args.reduced)
        for name, command in runs[1:] if args.exp_only else runs[:1] if args.repro_only else runs:
            label = f"{case} {name}"
            start, end = timed_run(command, project, work / f"{case}-{name}.log", case == "loaded")
            log, started = session_log(project, start, work / f"{case}-{name}.jsonl")
            rows = forecasts(log, started, end)
            print_case(label, command, start, end, rows)
            results[label] = case_entry(command, start, started, end, log, rows)
    out = work / RESULTS[1 if args.exp_only else 0]
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"bench_time_left: figures in {out}; again, with the forecast checked out then: "
          f"python benchmarks/bench_time_left.py --from {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
