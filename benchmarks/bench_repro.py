"""The first hour's figures: the embedded `dvc repro` from a clean clone, on a quiet machine and beside a
CPU-bound process, and a no-op `dvc repro` after it.

    python benchmarks/bench_repro.py [--loaded] [--against REV [--head-first]] [--work DIR]

Each case is a fresh `git clone` of HEAD with an empty DVC cache (what a new user has), run one after the other.
"quiet" runs alone; with ``--against REV`` a clean clone of REV is timed the same way right before it, or right
after it with ``--head-first`` (this machine's speed drifts by 5-15% over an hour, so two commits are compared in
one sitting, and in both orders, not across runs); "loaded" starts `python -c "while True: pass"` beside it and stops it at the end. After the
first case, `dvc repro` is timed three times with nothing to do (the median is the no-op figure). Prints the
wall times, the loaded / quiet ratio, whether the two cases' reports are equal apart from Table 3 (measured
times), and Table 3's SF / baseline time per optimizer step in both, task by task. The clones are kept (their
reports and dvc.lock are a full run's).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fanout import ROOT, reports_without_table3, timed  # noqa: E402

HOG = [sys.executable, "-c", "while True: pass"]


def clean_clone(work: Path, name: str, rev: str = "HEAD") -> Path:
    project = work / name
    if project.exists():
        sys.exit(f"bench_repro: {project} exists: name another --work")
    subprocess.run(["git", "clone", "-q", str(ROOT), str(project)], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=project, check=True)
    return project


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loaded", action="store_true", help="also time a run beside a CPU-bound process")
    parser.add_argument("--against", metavar="REV", help="also time a clean clone of REV, right before HEAD's")
    parser.add_argument("--head-first", action="store_true", help="with --against: time HEAD's clone first")
    parser.add_argument("--work", type=Path, default=None, help="folder for the clones (default: a temporary one)")
    args = parser.parse_args()
    if args.against and subprocess.run(["git", "rev-parse", "-q", "--verify", f"{args.against}^{{commit}}"], cwd=ROOT,
                                       capture_output=True).returncode:
        sys.exit(f"bench_repro: --against {args.against}: no such commit in {ROOT}")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_repro-"))
    work.mkdir(parents=True, exist_ok=True)
    cases = ["quiet", *(["loaded"] if args.loaded else [])]
    if args.against:
        cases.insert(1 if args.head_first else 0, "against")
    walls, projects = {}, {}
    for case in cases:
        project = projects[case] = clean_clone(work, case, args.against if case == "against" else "HEAD")
        hog = subprocess.Popen(HOG) if case == "loaded" else None
        try:
            walls[case] = timed(["dvc", "repro"], project, work / f"{case}.log")
        finally:
            if hog:
                hog.kill()
                hog.wait()
        print(f"{case}: dvc repro {walls[case]:.1f} s ({walls[case] / 60:.1f} min); log {work / f'{case}.log'}",
              flush=True)
        if case == "quiet":
            noop = [timed(["dvc", "repro"], project, work / f"noop-{i}.log") for i in range(3)]
            print(f"no-op dvc repro: median {statistics.median(noop):.2f} s of {', '.join(f'{s:.2f}' for s in noop)}")
    if args.against:
        order = "HEAD first" if args.head_first else f"{args.against} first"
        print(f"HEAD / {args.against}: {walls['quiet'] / walls['against']:.2f}x (quiet, one after the other, {order})")
    if args.loaded:
        ratio = walls["loaded"] / walls["quiet"]
        same = reports_without_table3(projects["quiet"]) == reports_without_table3(projects["loaded"])
        print(f"loaded / quiet: {ratio:.2f}x; reports equal apart from Table 3: {same}")
        compare_step_ratios(projects["quiet"], projects["loaded"])
    return 0


def compare_step_ratios(quiet: Path, loaded: Path) -> None:
    """Table 3's SF / baseline time per optimizer step in both runs, task by task, and how far apart they are:
    timed side by side (the step_cost stage, the verdict's figure) and from the runs' own step times."""
    import pandas as pd

    columns = ["backbone", "task", "paired_step_ratio", "paired_contended", "step_ratio", "contended"]
    a = pd.read_csv(quiet / "reports/tables/table3.csv", comment="#")[columns]
    b = pd.read_csv(loaded / "reports/tables/table3.csv", comment="#")[columns]
    both = a.merge(b, on=["backbone", "task"], suffixes=("_quiet", "_loaded"))
    for key in ("paired_step_ratio", "step_ratio"):
        both[f"{key}_difference"] = (both[f"{key}_loaded"] / both[f"{key}_quiet"] - 1).abs()
    print(both.to_string(index=False))
    for key, label in (("paired_step_ratio", "side by side"), ("step_ratio", "from the runs")):
        print(f"largest relative difference of SF / baseline per step, {label}: "
              f"{both[f'{key}_difference'].max():.1%}")


if __name__ == "__main__":
    sys.exit(main())
