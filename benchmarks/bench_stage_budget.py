"""Where each stage's time goes in a `dvc repro` of the embedded graph: the per-stage budget, measured apart.

    python benchmarks/bench_stage_budget.py --work DIR [--reduced] [--targets T ...] [--out FILE]
    python benchmarks/bench_stage_budget.py --project DIR [--targets T ...]

Runs `dvc repro` once (by default in a clean clone of HEAD under ``--work``: what a new user runs; ``--reduced``:
with tests/test_graph.py's reduced params, a few minutes; ``--project``: in a project as it is) with
``SPANFT_STAGE_BUDGET`` set, so that every stage process records its phases (``spanft.stage.budget``), and splits
each stage's wall time into:

- start: the interpreter's start and the script's imports (the kernel's process start to ``run_stage``), and
  its exit after the records (``atexit``);
- checks, spanft's before the work: progress (the stage's line; the first stage plans the session with DVC's
  index), room (DVC's folders), params (params.yaml read and checked into the plan), lock (the lock records of
  the stages it reads);
- work: the stage's own computation (for a fine-tuning stage, also its lazy torch imports);
- records, spanft's after the work: params unchanged and the stage's params record, progress's end line;
- DVC: the time in `dvc repro` outside every stage process, from this stage's exit to the next one's start
  (saving this stage's outputs and lock entry, checking the next stage); before the first stage, DVC's start.

Prints a table per stage group (mean seconds per stage, and the group's total), the sums over all stages, the
`dvc repro` wall time and its ratio to the work alone. Machine load is printed beside it: on a busy machine the
ratios of one run hold, the seconds do not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_repro import ROOT, clean_clone  # noqa: E402

CHECKS = ("progress", "room", "params", "lock")
RECORDS = ("record", "progress end")
COLUMNS = ("start", *CHECKS, "checks", "work", *RECORDS, "records", "DVC", "total")


def phases(line: dict) -> dict[str, float]:
    """One stage process's seconds by phase, from its budget line (``spanft.stage.budget``)."""
    marks = dict(line["marks"])
    seconds = {"start": marks["entered"] - line["created"]}
    last = marks["entered"]
    for name in (*CHECKS, "work", *RECORDS):
        if name in marks:  # a stage that failed stops marking
            seconds[name], last = marks[name] - last, marks[name]
    seconds["start"] += line["exit"] - last
    seconds["checks"] = sum(seconds.get(name, 0.0) for name in CHECKS)
    seconds["records"] = sum(seconds.get(name, 0.0) for name in RECORDS)
    return seconds


def stage_budgets(lines: list[dict], started: float, ended: float) -> tuple[list[tuple[str, dict]], float]:
    """``[(stage, seconds by phase)]`` in the order the stages ran, each with DVC's time after it (to the next
    stage's start, or to dvc's end), and DVC's time before the first stage."""
    lines = sorted(lines, key=lambda line: line["created"])
    rows = []
    for i, line in enumerate(lines):
        row = phases(line)
        following = lines[i + 1]["created"] if i + 1 < len(lines) else ended
        row["DVC"] = max(following - line["exit"], 0.0)
        row["total"] = line["exit"] - line["created"] + row["DVC"]
        rows.append((line["stage"] or "(by hand)", row))
    first = lines[0]["created"] - started if lines else ended - started
    return rows, first


def table(rows: list[tuple[str, dict]]) -> list[str]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for stage, row in rows:
        groups[stage.partition("@")[0]].append(row)
    out = ["| group | stages | " + " | ".join(COLUMNS) + " | group total |", "|---|---:|" + "---:|" * (len(COLUMNS) + 1)]
    for group, members in groups.items():
        means = [sum(m.get(c, 0.0) for m in members) / len(members) for c in COLUMNS]
        out.append(f"| {group} | {len(members)} | " + " | ".join(f"{v:.2f}" for v in means)
                   + f" | {sum(m['total'] for m in members):.1f} |")
    every = [row for _, row in rows]
    sums = [sum(r.get(c, 0.0) for r in every) for c in COLUMNS]
    out.append(f"| **all (sum)** | {len(every)} | " + " | ".join(f"{v:.1f}" for v in sums) + f" | {sums[-1]:.1f} |")
    if every:
        out.append(f"| **all (mean)** | {len(every)} | " + " | ".join(f"{v / len(every):.2f}" for v in sums) + " | |")
    return out


def run_repro(project: Path, budget: Path, targets: list[str]) -> tuple[float, float, int]:
    env = {**os.environ, "SPANFT_STAGE_BUDGET": str(budget), "DVC_NO_ANALYTICS": "1"}
    log = budget.with_suffix(".log")
    started = time.time()
    with log.open("w") as out:
        status = subprocess.run(["dvc", "repro", *targets], cwd=project, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    return started, time.time(), status


def reduce_params(project: Path) -> None:
    """tests/test_graph.py's reduced graph: small corpus, one task per study (a few minutes on 2 cores)."""
    import yaml

    sys.path.insert(0, str(ROOT / "tests"))
    from test_graph import reduced_params

    (project / "params.yaml").write_text(yaml.safe_dump(reduced_params(), sort_keys=False), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--work", type=Path, help="folder for a clean clone of HEAD (default: a temporary one)")
    where.add_argument("--project", type=Path, help="run in this project as it is")
    parser.add_argument("--reduced", action="store_true", help="the clone gets tests/test_graph.py's reduced params")
    parser.add_argument("--targets", nargs="*", default=[], help="dvc repro's targets (default: the whole graph)")
    parser.add_argument("--out", type=Path, default=None, help="also write the tables here")
    args = parser.parse_args()
    if args.project:
        project = args.project.resolve()
    else:
        work = args.work or Path(tempfile.mkdtemp(prefix="bench_stage_budget-"))
        work.mkdir(parents=True, exist_ok=True)
        project = clean_clone(work, "budget")
        if args.reduced:
            reduce_params(project)
    budget = Path(tempfile.mkdtemp(prefix="budget-")) / "budget.jsonl"
    started, ended, status = run_repro(project, budget, args.targets)
    lines = [json.loads(line) for line in budget.read_text().splitlines()] if budget.exists() else []
    rows, first = stage_budgets(lines, started, ended)
    wall, work = ended - started, sum(row.get("work", 0.0) for _, row in rows)
    head = [f"# bench_stage_budget: dvc repro {' '.join(args.targets)} in {project} (exit {status}; log "
            f"{budget.with_suffix('.log')}), {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end",
            "", "Mean seconds per stage by phase (start: interpreter start, imports and exit; checks and records: "
            "spanft's, before and after the work; DVC: after the stage, to the next one's start).", ""]
    foot = ["", f"DVC before the first stage: {first:.1f} s",
            f"dvc repro: {wall:.1f} s ({wall / 60:.1f} min) for {len(rows)} stages; the work alone {work:.1f} s; "
            f"wall / work {wall / work if work else float('nan'):.2f}"]
    text = "\n".join([*head, *table(rows), *foot])
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
