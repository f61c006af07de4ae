"""A stage process's time by phase (spanft.stage.budget), as benchmarks/bench_stage_budget.py splits it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_stage_budget import phases, stage_budgets  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CODE = "import sys; from spanft.stage.run import run_stage; sys.exit(run_stage(lambda plan: __import__('time').sleep(0.3)))"


def run(project: Path, budget: Path | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "DVC_STAGE": "check_params", "DVC_SITE_CACHE_DIR": str(project / "site")}
    env.pop("SPANFT_STAGE_BUDGET", None)
    if budget is not None:
        env["SPANFT_STAGE_BUDGET"] = str(budget)
    return subprocess.run([sys.executable, "-c", CODE], cwd=project, env=env, capture_output=True, text=True, timeout=120)


def test_each_phase_is_timed_and_they_add_up_to_the_process(tmp_path):
    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(ROOT / "data" / "raw", tmp_path / "data" / "raw")  # the local paths params name
    budget = tmp_path / "budget.jsonl"
    before = time.time()
    done = run(tmp_path, budget)
    after = time.time()
    assert done.returncode == 0, done.stderr
    line = json.loads(budget.read_text(encoding="utf-8"))
    names = [name for name, _ in line["marks"]]
    assert names == ["entered", "progress", "room", "params", "lock", "work", "record", "progress end"]
    times = [at for _, at in line["marks"]]
    assert times == sorted(times) and line["created"] <= times[0] <= line["exit"] <= after + 0.05
    assert line["created"] >= before - 0.05 and line["stage"] == "check_params"
    seconds = phases(line)
    assert seconds["work"] >= 0.3
    parts = seconds["start"] + seconds["checks"] + seconds["work"] + seconds["records"]
    assert abs(parts - (line["exit"] - line["created"])) < 1e-6
    rows, first = stage_budgets([line], before, after)
    assert abs(first - (line["created"] - before)) < 1e-6
    assert abs(rows[0][1]["total"] - (after - line["created"])) < 1e-6  # its DVC share runs to dvc's end


def test_without_the_variable_nothing_is_written(tmp_path):
    (tmp_path / ".dvc").mkdir()
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(ROOT / "data" / "raw", tmp_path / "data" / "raw")  # the local paths params name
    done = run(tmp_path, None)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob("*.jsonl"))
