"""The test suite from a fresh clone, as CI runs it, on a quiet machine and in the conditions that once broke it.

    python benchmarks/bench_suite.py [--conditions quiet hog omp1] [--repeats 3] [--work DIR]

Each run is a fresh `git clone` of HEAD running `CI=true bash .ci/run` (the README's install, then `pytest`),
one after the other:
  quiet  nothing else of ours runs;
  hog    beside `python -c "while True: pass"` (one CPU-bound process: a busy machine);
  omp1   with `OMP_NUM_THREADS=1` exported, as a user's shell may have it.
Prints one line per run (condition, wall seconds, pytest's summary) and a table at the end; exits 1 when any
run was not green. `.ci/run` points the editable install at its clone, so this script points it back at this
checkout when it ends (also on Ctrl-C or SIGTERM, which stop the busy process too). The runs get this shell's
environment less what would change what they test or how it prints: PYTHONPATH (it would test this checkout,
not the clone), PYTEST_ADDOPTS, colour switches, and the thread counts of OpenMP, MKL and OpenBLAS.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_repro import HOG, ROOT, clean_clone  # noqa: E402

CONDITIONS = ("quiet", "hog", "omp1")
SUMMARY = re.compile(r"^=+ (.*) in [0-9.]+s.* =+$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
UNSET = ("PYTHONPATH", "PYTEST_ADDOPTS", "FORCE_COLOR", "PY_COLORS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
         "OPENBLAS_NUM_THREADS")


def run_environment(condition: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env.update(CI="true", NO_COLOR="1")
    if condition == "omp1":
        env["OMP_NUM_THREADS"] = "1"
    return env


def run_suite(condition: str, project: Path, log: Path) -> tuple[float, int, str]:
    """(wall seconds, exit status, pytest's summary line) of one CI run in ``project``, a fresh clone."""
    env = run_environment(condition)
    hog = subprocess.Popen(HOG, stderr=subprocess.DEVNULL) if condition == "hog" else None
    start = time.perf_counter()
    ci = None
    try:
        with log.open("w") as out:  # its own session: stopping this script stops pip, pytest and its workers too
            ci = subprocess.Popen(["bash", ".ci/run"], cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
            status = ci.wait()
    finally:
        if ci is not None and ci.poll() is None:
            os.killpg(ci.pid, signal.SIGKILL)
            ci.wait()
        if hog:
            hog.kill()
            hog.wait()
    seconds = time.perf_counter() - start
    text = ANSI.sub("", log.read_text(errors="replace"))
    lines = [m.group(1) for line in text.splitlines() if (m := SUMMARY.match(line.strip()))]
    return seconds, status, lines[-1] if lines else "no pytest summary"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conditions", nargs="+", choices=CONDITIONS, default=list(CONDITIONS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None, help="folder for the clones and logs")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, found {args.repeats}")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_suite-"))
    work.mkdir(parents=True, exist_ok=True)
    taken = [name for name in (f"{c}-{r}" for r in range(1, args.repeats + 1) for c in args.conditions)
             if (work / name).exists()]
    if taken:
        parser.error(f"{work / taken[0]} exists: give another --work or remove it")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the finally below and run_suite's still run
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    rows = []
    try:
        for repeat in range(1, args.repeats + 1):
            for condition in args.conditions:
                name = f"{condition}-{repeat}"
                seconds, status, summary = run_suite(condition, clean_clone(work, name), work / f"{name}.log")
                rows.append((condition, repeat, seconds, status, summary))
                print(f"{name}: {seconds:.0f} s ({seconds / 60:.1f} min), exit {status}: {summary}", flush=True)
    finally:
        subprocess.run(["pip", "install", "-q", "-e", str(ROOT), "--no-deps"],  # the pip .ci/run used
                       check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"\nHEAD {commit}, {os.cpu_count()} cores; each run `CI=true bash .ci/run` in a fresh clone\n")
    print("| condition | run | wall | exit | pytest |\n|---|---|---|---|---|")
    for condition, repeat, seconds, status, summary in rows:
        print(f"| {condition} | {repeat} | {int(seconds // 60)} min {seconds % 60:.0f} s | {status} | {summary} |")
    return 0 if all(status == 0 for *_, status, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
