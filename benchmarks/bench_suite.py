"""The test suite from a fresh clone, as CI runs it, on a quiet machine and in the conditions that once broke it.

    python benchmarks/bench_suite.py [--conditions quiet hog omp1] [--repeats 3] [--work DIR]

Each run is a fresh `git clone` of HEAD running `CI=true bash .ci/run` (the README's install, then `pytest`),
one after the other:
  quiet  nothing else of ours runs;
  hog    beside `python -c "while True: pass"` (one CPU-bound process: a busy machine);
  omp1   with `OMP_NUM_THREADS=1` exported, as a user's shell may have it.
Prints one line per run (condition, wall seconds, pytest's summary) and a table at the end; exits 1 when any
run was not green. `.ci/run` points the editable install at its clone, so this script points it back at this
checkout when it ends.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOG = [sys.executable, "-c", "while True: pass"]
CONDITIONS = ("quiet", "hog", "omp1")
SUMMARY = re.compile(r"^=+ (.*) in [0-9.]+s.* =+$")


def run_suite(condition: str, project: Path, log: Path) -> tuple[float, int, str]:
    """(wall seconds, exit status, pytest's summary line) of one CI run in a fresh clone."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(project)], check=True)
    env = {**os.environ, "CI": "true"}
    env.pop("OMP_NUM_THREADS", None)
    if condition == "omp1":
        env["OMP_NUM_THREADS"] = "1"
    hog = subprocess.Popen(HOG) if condition == "hog" else None
    start = time.perf_counter()
    try:
        with log.open("w") as out:
            status = subprocess.run(["bash", ".ci/run"], cwd=project, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    finally:
        if hog:
            hog.kill()
            hog.wait()
    seconds = time.perf_counter() - start
    lines = [m.group(1) for line in log.read_text().splitlines() if (m := SUMMARY.match(line.strip()))]
    return seconds, status, lines[-1] if lines else "no pytest summary"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conditions", nargs="+", choices=CONDITIONS, default=list(CONDITIONS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None, help="folder for the clones and logs")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_suite-"))
    work.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    rows = []
    try:
        for repeat in range(1, args.repeats + 1):
            for condition in args.conditions:
                name = f"{condition}-{repeat}"
                seconds, status, summary = run_suite(condition, work / name, work / f"{name}.log")
                rows.append((condition, repeat, seconds, status, summary))
                print(f"{name}: {seconds:.0f} s ({seconds / 60:.1f} min), exit {status}: {summary}", flush=True)
    finally:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", str(ROOT), "--no-deps"],
                       check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"\nHEAD {commit}, {os.cpu_count()} cores; each run `CI=true bash .ci/run` in a fresh clone\n")
    print("| condition | run | wall | exit | pytest |\n|---|---|---|---|---|")
    for condition, repeat, seconds, status, summary in rows:
        print(f"| {condition} | {repeat} | {int(seconds // 60)} min {seconds % 60:.0f} s | {status} | {summary} |")
    return 0 if all(status == 0 for *_, status, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
