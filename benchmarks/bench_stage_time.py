"""Where one embedded fine-tuning stage's wall time goes, and what DVC adds per stage.

In an embedded project whose CoLA runs are built (``dvc repro glue_sf@tiny-cola-1`` first), each repeat times:

- ``python -c pass``: the interpreter's start;
- ``python -c "import spanft.train.finetune"``: the start plus the imports a fine-tuning stage makes;
- ``python pipeline/finetune.py`` with ``DVC_STAGE=glue_sf@tiny-cola-1``: the stage's own process, as DVC starts
  it, its output moved aside first (restored after);
- ``spanft finetune`` with the same run's options: its INFO line "finetune phases" splits the run into
  checks, reading data, loading the backbone, tokenizing, building the model, training (optimizer steps, and
  per-epoch evaluation and checkpoints), predicting and writing; what its process took beyond those phases is
  start-up and imports;
- ``dvc repro --single-item --force glue_sf@tiny-cola-1`` less the stage process: DVC's own cost per stage
  (reading dvc.yaml and params, hashing deps and outputs, the lock, the cache);
- ``dvc repro glue_sf@tiny-cola-1`` when nothing changed (DVC's check of the stage and its upstream).

    python benchmarks/bench_stage_time.py --project DIR [--repeats 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAGE = "glue_sf@tiny-cola-1"
RUN = "data/runs/glue/tiny/cola/sf/seed1"
PHASES = re.compile(r"finetune phases: (.*); of the training, ([\d.]+) s in (\d+) optimizer steps")


def timed(command: list[str], project: Path, env: dict | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return wall, done.stdout + done.stderr


def phases_of(output: str) -> dict[str, float]:
    found = PHASES.search(output)
    if not found:
        sys.exit("spanft finetune printed no 'finetune phases' line")
    seconds = {name: float(value) for name, value in
               (re.match(r"(.*) ([\d.]+) s$", part.strip()).groups() for part in found.group(1).split(", "))}
    seconds["  of which optimizer steps"] = float(found.group(2))
    return seconds


def one_round(project: Path) -> dict[str, float]:
    py = sys.executable
    row = {"interpreter start (python -c pass)": timed([py, "-c", "pass"], project)[0],
           "start + imports (import spanft.train.finetune)":
               timed([py, "-c", "import spanft.train.finetune"], project)[0]}
    aside = Path(tempfile.mkdtemp()) / "run"
    shutil.move(project / RUN, aside)
    try:
        row["stage process (pipeline/finetune.py)"] = timed([py, "pipeline/finetune.py"], project,
                                                            {**os.environ, "DVC_STAGE": STAGE})[0]
    finally:
        shutil.rmtree(project / RUN, ignore_errors=True)
        shutil.move(aside, project / RUN)
    with tempfile.TemporaryDirectory() as tmp:
        wall, output = timed([py, "-m", "spanft.cli", "finetune", "--task", "cola", "--variant", "sf", "--seed", "1",
                              "--backbone", "data/backbones/tiny", "--data", "data/segmented/ngram/cola",
                              "--out", f"{tmp}/run", "--hparams", "params.yaml:hparams.cola", "--threads", "1"],
                             project)
    phases = phases_of(output)
    row["spanft finetune process"] = wall
    row.update({f"  {name}": seconds for name, seconds in phases.items()})
    row["  start-up and imports (the rest)"] = wall - sum(v for k, v in phases.items() if "of which" not in k)
    forced = timed(["dvc", "repro", "--single-item", "--force", STAGE], project)[0]
    row["dvc repro --single-item --force (stage + DVC)"] = forced
    row["  DVC's own cost (that less the stage process)"] = forced - row["stage process (pipeline/finetune.py)"]
    row["dvc repro of the stage, nothing changed"] = timed(["dvc", "repro", STAGE], project)[0]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=Path("."))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    project = args.project.resolve()
    if not (project / RUN / "metrics.json").is_file():
        sys.exit(f"{project}: {RUN} is not built: run `dvc repro {STAGE}` there first")
    timed(["dvc", "repro", STAGE], project)  # up to date first (a new checkout's code re-runs the upstream)
    rounds = [one_round(project) for _ in range(args.repeats)]
    lines = [f"# bench_stage_time: {STAGE}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, "
             f"median of {args.repeats}", "| what | seconds |", "|---|---|"]
    lines += [f"| {key} | {statistics.median(r[key] for r in rounds):.2f} |" for key in rounds[0]]
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
