"""One stage process's checks and records with no work, this checkout against another commit, interleaved.

    python benchmarks/bench_stage_checks.py --against REV --project DIR [--stage NAME] [--rounds 5]

``DIR``: a project (dvc.yaml, dvc.lock, params.yaml, .dvc/) whose ``dvc.lock`` is the one to read, such as a
copy of this repository's files with the whole embedded graph's lock. Each round runs, for this checkout's
``src/`` and then REV's, a process that imports the stage's library (the segment stages': text.segmentation;
the others: data.corpus) and calls ``run_stage`` with a body that does nothing, as DVC would run the stage named
``--stage`` (``DVC_STAGE``); one entry of ``dvc.lock`` is changed before each run, as DVC rewrites one entry per
stage. The phases come from ``spanft.stage.budget`` (REV must have it: 62d987d or later). Interleaving the two
versions lets a busy machine slow both alike: the ratio holds where the seconds do not. Changes ``DIR``'s
``dvc.lock`` (one md5 per run) and writes under ``DIR/data/params-used``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stage_budget import ROOT, phases  # noqa: E402

SHOWN = ("start", "room", "params", "lock", "checks", "record", "records")


def source_of(rev: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="bench_stage_checks-"))
    archive = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


def one_run(project: Path, src: Path, stage: str) -> dict[str, float]:
    lock = project / "dvc.lock"
    text = re.sub(r"md5: [0-9a-f]{32}\n", lambda m: f"md5: {random.getrandbits(128):032x}\n",
                  lock.read_text(encoding="utf-8"), count=1)
    lock.write_text(text, encoding="utf-8")
    library = "spanft.text.segmentation" if stage.startswith("segment") else "spanft.data.corpus"
    code = f"import sys, {library}; from spanft.stage.run import run_stage; sys.exit(run_stage(lambda plan: None))"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "budget.jsonl"
        env = {**os.environ, "PYTHONPATH": str(src), "DVC_STAGE": stage, "SPANFT_STAGE_BUDGET": str(out)}
        done = subprocess.run([sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"the stage process failed:\n{done.stderr[-2000:]}")
        return phases(json.loads(out.read_text(encoding="utf-8")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the commit to compare with")
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--stage", default="segment_ngram@cola")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    versions = {"this checkout": ROOT / "src", args.against: source_of(args.against)}
    rows: dict[str, list[dict]] = {name: [] for name in versions}
    for _ in range(args.rounds):
        for name, src in versions.items():
            rows[name].append(one_run(args.project.resolve(), src, args.stage))
    print(f"# bench_stage_checks: {args.stage}, median seconds of {args.rounds} interleaved runs each, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print("| version | " + " | ".join(SHOWN) + " | checks + records |")
    print("|---|" + "---:|" * (len(SHOWN) + 1))
    for name, found in rows.items():
        medians = [statistics.median(r.get(key, 0.0) for r in found) for key in SHOWN]
        both = statistics.median(r["checks"] + r["records"] for r in found)
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in medians) + f" | {both:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
