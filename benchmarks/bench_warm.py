"""Cold against warm start of one stage script (spanft.warm), in a workspace where `dvc repro` has run.

    python benchmarks/bench_warm.py /tmp/ws --repeat 3 -- pipeline/finetune.py glue tiny rte baseline 1

Runs the stage command ``--repeat`` times with ``SPANFT_WARM=0`` (a fresh interpreter each time), then starts
a worker, waits until it serves, and runs it ``--repeat`` times warm; prints the wall times, the median ratio
and whether every output file but ``metrics.json``'s timing came out byte-identical. The stage's outputs
are restored afterwards, so the workspace stays as `dvc repro` left it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIMING_KEYS = {"train_seconds"}


def run(workspace: Path, command: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *command], cwd=workspace, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def snapshot(directory: Path) -> dict[str, object]:
    """Every file's bytes; ``metrics.json`` without its timing keys."""
    files = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.name == "metrics.json":
                data = {k: v for k, v in json.loads(data).items() if k not in TIMING_KEYS}
            files[str(path.relative_to(directory))] = data
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--outputs", default=None, help="the stage's output directory (default: found from dvc.lock)")
    argv = sys.argv[1:]
    if "--" not in argv:
        parser.error("give the stage command after --")
    split = argv.index("--")
    args, command = parser.parse_args(argv[:split]), argv[split + 1:]
    outputs = args.workspace / (args.outputs or stage_output(args.workspace, command))
    backup = Path(tempfile.mkdtemp()) / "outputs"
    shutil.copytree(outputs, backup)
    tmp = tempfile.mkdtemp()  # a private worker directory for this benchmark
    base = {**os.environ, "TMPDIR": tmp, "SPANFT_WARM_IDLE": "120"}
    try:
        cold = [run(args.workspace, command, {**base, "SPANFT_WARM": "0"}) for _ in range(args.repeat)]
        reference = snapshot(outputs)
        run(args.workspace, command, {**base, "SPANFT_WARM": "1"})  # starts the worker, runs cold
        while not list(Path(tmp).glob("spanft-warm-*/*.sock")):
            time.sleep(0.2)
        warm = [run(args.workspace, command, {**base, "SPANFT_WARM": "1"}) for _ in range(args.repeat)]
        same = snapshot(outputs) == reference
    finally:
        shutil.rmtree(outputs)
        shutil.copytree(backup, outputs)
    print(f"command: {' '.join(command)}")
    print(f"cold (SPANFT_WARM=0): {', '.join(f'{t:.2f}' for t in cold)} s; median {statistics.median(cold):.2f} s")
    print(f"warm (worker up):     {', '.join(f'{t:.2f}' for t in warm)} s; median {statistics.median(warm):.2f} s")
    print(f"cold / warm: {statistics.median(cold) / statistics.median(warm):.2f}x; outputs identical: {same}")


def stage_output(workspace: Path, command: list[str]) -> str:
    import yaml

    lock = yaml.safe_load((workspace / "dvc.lock").read_text(encoding="utf-8"))["stages"]
    wanted = " ".join(["python", *command])
    for stage in lock.values():
        if stage["cmd"] == wanted:
            return stage["outs"][0]["path"]
    raise SystemExit(f"no stage of {workspace}/dvc.lock runs {wanted!r}; give --outputs")


if __name__ == "__main__":
    main()
