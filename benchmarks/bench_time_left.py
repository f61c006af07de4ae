"""How true the time left is: each forecast at 10%, 50% and 90% of the way against the actual end.

    python benchmarks/bench_time_left.py [--reduced] [--cases quiet,loaded] [--dict-size N] [--work DIR] [--exp-only]

For each case, a fresh project (no stage timed before: what a new user has) runs `dvc repro`, then
`dvc exp run -S dict_size=N` (its stages timed by the repro before it); "quiet" runs alone, "loaded" beside
`python -c "while True: pass"` (started before dvc, stopped after it). The project is a clean `git clone` of HEAD
(the default embedded profile; dict_size 100000), or with ``--reduced`` the small graph of tests/test_graph.py
(a few minutes on 2 cores; dict_size 1500) to check that the benchmark works.

After each run the session's log (``.dvc/tmp/spanft-progress/``) is read back, and at 10%, 50% and 90% of the
run's wall time the forecast is taken as `spanft status` would have printed it at that moment
(``spanft.stage.progress.progress_of``): the time left at this run's pace, the range where one is shown, against
the time that was actually left. The goal: within ±25% from half-way on.
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
from bench_fanout import ROOT  # noqa: E402

from spanft.stage.progress import duration, progress_line, progress_of  # noqa: E402
from spanft.stage.session import FOLDER, read_records  # noqa: E402

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
                                  stdin=subprocess.DEVNULL)
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


def forecasts(log: Path, started: float, end: float) -> list[dict]:
    """At each fraction of the way (from dvc's start at ``started`` to its end), what the forecast said and what
    was actually left."""
    records = read_records(log)
    rows = []
    for fraction in FRACTIONS:
        now = started + fraction * (end - started)
        seen = [r for r in records if r.get("at", float("-inf")) <= now]
        p = progress_of(seen, started, now)
        actual = end - now
        rows.append({"fraction": fraction, "line": progress_line(p) if p.stage else "no stage started yet",
                     "actual": actual, "left": p.left, "low": p.low, "high": p.high,
                     "error": None if p.left is None else (p.left - actual) / actual})
    return rows


def print_case(name: str, command: list[str], start: float, end: float, rows: list[dict]) -> bool:
    print(f"{name}: {' '.join(command)}: {duration(end - start)}", flush=True)
    for row in rows:
        said = "no estimate" if row["left"] is None else f"forecast {duration(row['left'])}"
        if row["low"] is not None:
            inside = row["low"] <= row["actual"] <= row["high"]
            said += f" (shown {duration(row['low'])} to {duration(row['high'])}: {'holds' if inside else 'misses'})"
        error = "" if row["error"] is None else f", {100 * row['error']:+.0f}%"
        print(f"  at {100 * row['fraction']:.0f}%: {said}; actual {duration(row['actual'])}{error}")
        print(f"      the line: {row['line']}")
    late = [row for row in rows if row["fraction"] >= 0.5]
    kept = all(row["error"] is not None and abs(row["error"]) <= GOAL for row in late)
    print(f"  within ±{100 * GOAL:.0f}% from half-way on: {'yes' if kept else 'no'}", flush=True)
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reduced", action="store_true", help="the small graph of tests/test_graph.py")
    parser.add_argument("--cases", default="quiet,loaded", help="quiet, loaded or both (default: both)")
    parser.add_argument("--dict-size", type=int, default=None, help="the experiment's dict_size (default: 100000, "
                        "reduced: 1500)")
    parser.add_argument("--work", type=Path, default=None, help="folder for the projects (default: a temporary one)")
    parser.add_argument("--exp-only", action="store_true", help="only the dvc exp run, in the projects --work holds "
                        "from an earlier call (their repro done)")
    args = parser.parse_args()
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
        for name, command in runs[1:] if args.exp_only else runs:
            label = f"{case} {name}"
            start, end = timed_run(command, project, work / f"{case}-{name}.log", case == "loaded")
            log, started = session_log(project, start, work / f"{case}-{name}.jsonl")
            rows = forecasts(log, started, end)
            results[label] = {"seconds": end - start, "rows": rows,
                              "kept": print_case(label, command, start, end, rows)}
    out = work / f"time_left{'-exp' if args.exp_only else ''}.json"
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"bench_time_left: figures in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
