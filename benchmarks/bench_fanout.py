"""Wall time of the whole graph through `spanft fanout --executor local --jobs N`, for several N, from clean clones.

    python benchmarks/bench_fanout.py --jobs 1 2                # the embedded profile, this repo's HEAD
    python benchmarks/bench_fanout.py --jobs 1 2 --serial       # and a plain `dvc repro` first
    python benchmarks/bench_fanout.py --jobs 2 --slurm 2        # and through SLURM, 2 jobs at once (SLURM_CONF set)
    python benchmarks/bench_fanout.py --checks-only --slurm 2   # only what the checks before spending take
    python benchmarks/bench_fanout.py --startup --head PATH     # a job's start-up, phase by phase

``--startup`` times, phase by phase, what one job does before its stage's own work, in a fresh workspace of a
head whose upstream stages ran (``--head``: a fan-out head; default a clone of HEAD, whose upstream stages it
runs first): the git clone, the checkout, the snapshot and DVC config, the job process's imports (submitit's
unpickling of the call), the interpreter and imports of a stage script (torch, transformers), DVC's start-up
(``dvc version``), the upstream checkout, DVC's graph and status before the stage runs (``dvc repro --dry``),
and the run-cache check after it; then a second, warm start in the same workspace (what a requeued or re-sent
job pays). Their sum against a run's length says when the fan-out is slower than a serial ``dvc repro``.

Each case runs in a fresh `git clone` of HEAD (its own DVC cache, nothing cached), one after the other, so
they do not share the machine. Prints each wall time, the time from the command's start to its first job sent
(its first job record written), the ratios against the first case, and whether the reports of every case equal the
first's apart from Table 3 (measured seconds and thread counts). First it times the checks `spanft fanout` makes
before it spends anything (spanft.cluster.fanout.check_before_spending: time limit, scheduler, job folder,
DVC cache, room for checkpoints) in a fresh clone, five times, in a process of their own.
"""

from __future__ import annotations

import argparse
import json
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


CHECKS = """
import statistics, sys, time
from pathlib import Path
from spanft.cluster.fanout import check_before_spending
from spanft.params.plan import load_plan
root, executor = Path(sys.argv[1]), sys.argv[2]
settings = load_plan(root / "params.yaml").cluster.with_overrides(executor=executor)
times = []
for _ in range(5):
    start = time.perf_counter()
    check_before_spending(root, settings, executor, 2)
    times.append(time.perf_counter() - start)
print(f"{statistics.median(times):.3f} {min(times):.3f} {max(times):.3f}")
"""


def time_checks(work: Path, executor: str) -> None:
    project = work / f"checks-{executor}"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(project)], check=True)
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    done = subprocess.run([sys.executable, "-c", CHECKS, str(project), executor], capture_output=True, text=True,
                          env=env, cwd=project)
    if done.returncode != 0:
        sys.exit(f"the checks failed in {project}: {done.stderr.strip().splitlines()[-1:]}")
    median, low, high = done.stdout.split()
    print(f"checks before spending ({executor}): median {median} s of 5 (min {low}, max {high})", flush=True)


def first_job_seconds(project: Path, started: float) -> float | None:
    """From the command's start to its first job sent: the earliest job record submitit wrote (a job's
    ``*_submitted.pkl`` is written once, as it is sent; the manifest is rewritten as local jobs are topped up)."""
    sent = [path.stat().st_mtime for path in (project / ".fanout" / "jobs").glob("*/*/*_submitted.pkl")]
    return min(sent) - started if sent else None


STARTUP_PHASES = """
import json, sys, time
from pathlib import Path
from spanft.cluster import workspace as ws
from spanft.cluster.stages import run_cached
head, commit, snap, work, cache, stage = sys.argv[1:7]
upstream = tuple(sys.argv[7:])
times = {}
def phase(name, call):
    start = time.perf_counter(); call(); times[name] = time.perf_counter() - start
w = Path(work)
phase("git clone", lambda: ws.clone_workspace(Path(head), w))
phase("git checkout", lambda: ws.checkout_commit(Path(head), commit, w))
phase("snapshot + DVC config", lambda: (ws.apply_snapshot(Path(snap), w), ws.point_cache(Path(head), w, cache)))
phase("dvc checkout (upstream, in-process)", lambda: ws.checkout_outputs(w, upstream) if upstream else None)
phase("run-cache check", lambda: run_cached(w, stage))
print(json.dumps(times))
"""


def _seconds(command: list[str], cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed in {cwd}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return time.perf_counter() - start


def startup_phases(head: Path, workspace: Path) -> dict[str, float]:
    """One job's start-up in ``workspace``, phase by phase (a fresh workspace: the first call; else warm)."""
    sys.path.insert(0, str(head / "src"))
    from spanft.cluster.stages import open_repo, stage_paths, stale_training_stages, training_stages, upstream_of
    from spanft.cluster.workspace import cache_dir, head_state, snapshot

    state = head_state(head, *stage_paths(head), allow_dirty=True)
    stale, _, _ = stale_training_stages(head)
    with open_repo(head) as repo:
        stages = training_stages(repo)
        stage = stale[0].name if stale else stages[0].addressing
        upstream = upstream_of(repo, [s for s in stages if s.addressing == stage])
    snap = snapshot(state, workspace.parent.parent)
    env = {**os.environ, "PYTHONPATH": str(head / "src"), "DVC_NO_ANALYTICS": "1"}
    done = subprocess.run([sys.executable, "-c", STARTUP_PHASES, str(head), state.commit, str(snap),
                           str(workspace), cache_dir(head), stage, *upstream], capture_output=True, text=True,
                          env=env, cwd=head)
    if done.returncode != 0:
        sys.exit(f"the start-up phases failed: {done.stderr.strip().splitlines()[-1:]}")
    times = json.loads(done.stdout.strip().splitlines()[-1])
    code = {**env, "PYTHONPATH": str(workspace / "src")}
    times["job process: python + spanft.cluster.job"] = _seconds(
        [sys.executable, "-c", "import spanft.cluster.job"], workspace, code)
    times["stage script: python + torch, transformers"] = _seconds(
        [sys.executable, "-c", "import torch, transformers"], workspace, code)
    times["dvc start-up (dvc version)"] = _seconds(["dvc", "version"], workspace, code)
    times["dvc repro --dry (graph, status)"] = _seconds(["dvc", "repro", "--dry", "--single-item", stage],
                                                        workspace, code)
    return times


def time_startup(work: Path, head: Path | None) -> None:
    if head is None:
        head = work / "startup-head"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(head)], check=True)
        sys.path.insert(0, str(head / "src"))
        from spanft.cluster.stages import finetune_upstream
        subprocess.run(["dvc", "repro", *finetune_upstream(head)], cwd=head, check=True)
    workspace = work / "startup" / "workspaces" / "job"
    for label in ("first start (fresh workspace)", "warm start (same workspace)"):
        times = startup_phases(head.resolve(), workspace)
        print(f"{label}:")
        for name, seconds in times.items():
            print(f"  {name:45s} {seconds:7.2f} s")
        print(f"  {'sum':45s} {sum(times.values()):7.2f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="the N to measure, in order")
    parser.add_argument("--serial", action="store_true", help="also time a plain `dvc repro` (first)")
    parser.add_argument("--slurm", type=int, default=0, metavar="N",
                        help="also through SLURM, N jobs at once of 1 CPU each (last; needs sbatch and SLURM_CONF)")
    parser.add_argument("--work", default=None, help="folder for the clones (default: a temporary one, kept)")
    parser.add_argument("--checks-only", action="store_true", help="only time the checks before spending")
    parser.add_argument("--startup", action="store_true", help="only time a job's start-up, phase by phase")
    parser.add_argument("--head", default=None, help="--startup: a head whose upstream stages ran")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-fanout-"))
    if args.startup:
        time_startup(work, Path(args.head) if args.head else None)
        return 0
    time_checks(work, "local")
    if args.slurm:
        time_checks(work, "slurm")
    if args.checks_only:
        return 0
    cases = ([("dvc repro", ["dvc", "repro"])] if args.serial else []) + [
        (f"fanout --jobs {n}", ["spanft", "fanout", "--executor", "local", "--jobs", str(n)]) for n in args.jobs]
    if args.slurm:
        cases.append((f"fanout slurm x{args.slurm}", ["spanft", "fanout", "--executor", "slurm", "--jobs",
                                                      str(args.slurm), "--cpus", "1", "--mem-gb", "4"]))
    results = []
    for index, (name, command) in enumerate(cases):
        project = work / f"case{index}"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(project)], check=True)
        started = time.time()
        seconds = timed(command, project, work / f"case{index}.log")
        results.append((name, seconds, reports_without_table3(project)))
        first = first_job_seconds(project, started)
        sent = f"; first job sent after {first:.1f} s" if first is not None else ""
        print(f"{name}: {seconds:.1f} s ({seconds / 60:.1f} min){sent}", flush=True)
    first_name, first_seconds, first_reports = results[0]
    for name, seconds, reports in results[1:]:
        print(f"{first_name} / {name}: {first_seconds / seconds:.2f}x; reports equal but Table 3: "
              f"{reports == first_reports}")
    print(f"clones and logs: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
