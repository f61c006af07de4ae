"""Wall time of the whole graph through `spanft fanout --executor local --jobs N`, for several N, from clean clones.

    python benchmarks/bench_fanout.py --jobs 1 2                # the embedded profile, this repo's HEAD
    python benchmarks/bench_fanout.py --jobs 1 2 --serial       # and a plain `dvc repro` first
    python benchmarks/bench_fanout.py --jobs 2 --slurm 2        # and through SLURM, 2 jobs at once (SLURM_CONF set)

Each case runs in a fresh `git clone` of HEAD (its own DVC cache, nothing cached), one after the other, so
they do not share the machine. Prints each wall time, the ratios against the first case, and whether the
reports of every case equal the first's apart from Table 3 (measured seconds and thread counts).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def reports_without_table3(project: Path) -> dict[str, list[str]]:
    files = {}
    for path in sorted((project / "reports").rglob("*")):
        if path.is_file() and not path.name.startswith("table3."):
            lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
            files[str(path.relative_to(project))] = [line for line in lines if "fine-tuning time" not in line]
    return files


def timed(command: list[str], project: Path, log: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(project / "src"), "DVC_NO_ANALYTICS": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode written, as on a user's machine
    start = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(command, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}) in {project}: see {log}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="the N to measure, in order")
    parser.add_argument("--serial", action="store_true", help="also time a plain `dvc repro` (first)")
    parser.add_argument("--slurm", type=int, default=0, metavar="N",
                        help="also through SLURM, N jobs at once of 1 CPU each (last; needs sbatch and SLURM_CONF)")
    parser.add_argument("--work", default=None, help="folder for the clones (default: a temporary one, kept)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-fanout-"))
    cases = ([("dvc repro", ["dvc", "repro"])] if args.serial else []) + [
        (f"fanout --jobs {n}", ["spanft", "fanout", "--executor", "local", "--jobs", str(n)]) for n in args.jobs]
    if args.slurm:
        cases.append((f"fanout slurm x{args.slurm}", ["spanft", "fanout", "--executor", "slurm", "--jobs",
                                                      str(args.slurm), "--cpus", "1", "--mem-gb", "4"]))
    results = []
    for index, (name, command) in enumerate(cases):
        project = work / f"case{index}"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(project)], check=True)
        seconds = timed(command, project, work / f"case{index}.log")
        results.append((name, seconds, reports_without_table3(project)))
        print(f"{name}: {seconds:.1f} s ({seconds / 60:.1f} min)", flush=True)
    first_name, first_seconds, first_reports = results[0]
    for name, seconds, reports in results[1:]:
        print(f"{first_name} / {name}: {first_seconds / seconds:.2f}x; reports equal but Table 3: "
              f"{reports == first_reports}")
    print(f"clones and logs: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
