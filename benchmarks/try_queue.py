"""Parallel experiments through DVC's queue, tried on the reduced embedded graph of tests/test_graph.py.

    python benchmarks/try_queue.py [--workers 2] [--sizes 600 1500]

Builds the reduced project in a temporary git repository, runs `dvc repro` once, queues one experiment per
`dict_size` (`dvc exp run --queue -S dict_size=N`), starts `dvc queue start -j WORKERS`, waits for the queue
to drain, and prints `dvc exp show` with each experiment's headline metrics. Exit status 0 when every queued
experiment succeeded.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_graph import reduced_params  # noqa: E402


def sh(project: Path, *args: str) -> str:
    done = subprocess.run(list(args), cwd=project, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def make_project(project: Path) -> None:
    shutil.copy(ROOT / "dvc.yaml", project / "dvc.yaml")
    shutil.copytree(ROOT / "src", project / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    shutil.copytree(ROOT / ".dvc", project / ".dvc", ignore=shutil.ignore_patterns("tmp", "cache", "config.local"))
    (project / "params.yaml").write_text(yaml.safe_dump(reduced_params(), sort_keys=False), encoding="utf-8")
    (project / ".gitignore").write_text("/data/\n", encoding="utf-8")
    sh(project, "git", "init", "-q")
    sh(project, "git", "add", "-A")
    sh(project, "git", "-c", "user.name=spanft", "-c", "user.email=spanft@localhost", "commit", "-qm", "reduced graph")


def experiments_table(csv_text: str) -> str:
    """`dvc exp show --csv` cut to each experiment's dict_size and GLUE average scores."""
    import io

    import pandas as pd

    table = pd.read_csv(io.StringIO(csv_text))
    keep = ["Experiment", "rev", "dict_size"] + [c for c in table.columns if "average" in c and "glue" in c]
    return table[[c for c in keep if c in table.columns]].to_string(index=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sizes", type=int, nargs="+", default=[600, 1500])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="spanft-queue-") as tmp:
        project = Path(tmp)
        make_project(project)
        start = time.perf_counter()
        sh(project, "dvc", "repro")
        sh(project, "git", "add", "-A")
        sh(project, "git", "-c", "user.name=spanft", "-c", "user.email=spanft@localhost", "commit", "-qm", "repro")
        print(f"dvc repro (reduced graph): {time.perf_counter() - start:.0f} s")
        for size in args.sizes:
            sh(project, "dvc", "exp", "run", "--queue", "-S", f"dict_size={size}")
        start = time.perf_counter()
        # `dvc queue start` can wait on an idle worker after the queue drains: poll the queue, not the process
        starter = subprocess.Popen(["dvc", "queue", "start", "-j", str(args.workers)], cwd=project,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        while True:
            status = sh(project, "dvc", "queue", "status")
            if not any(word in status for word in ("Running", "Queued")):
                break
            time.sleep(5)
        print(f"dvc queue start -j {args.workers}: {len(args.sizes)} experiments in {time.perf_counter() - start:.0f} s")
        print(status)
        print(experiments_table(sh(project, "dvc", "exp", "show", "--csv")))
        failed = "Failed" in status
        subprocess.run(["dvc", "queue", "stop", "--kill"], cwd=project, capture_output=True)
        starter.kill()
        starter.wait()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
