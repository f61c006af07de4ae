"""A SLURM time limit at "just fits", shorter than an epoch: every allocation makes progress, every job still
finishes, and its run equals an uninterrupted one.

A one-node SLURM (scripts/slurm-one-node.sh, its one-node form: the multi-node paths are tests/test_fanout.py's)
runs a small embedded project whose two fine-tuning runs train for longer than a job may. First they run
uninterrupted (a generous limit, no join): the reference runs, and the start-ups this machine really shows,
which each allocation records in the job folder (spanft.cluster.startups). Their run-cache entries are then
dropped, so that the same runs are stale again, and the pre-flight is asked for the smallest limit it takes
(`--time-min 1` is refused, naming it); the runs are sent again at exactly that limit. The signal makes the
training save at its next step before submitit requeues the job (the job's log says which checkpoint), so every
allocation ends with a checkpoint later than the one it started from, after at least one checkpoint interval of
training (the job's log says when, in the allocation, its training began and the signal came). SLURM holds a requeued job for two
minutes before it may start again; the test lets it start at once (`scontrol update StartTime=now`), which
changes nothing the jobs see. The runs must end with the metrics, the history (training loss included) and the
predictions of the uninterrupted runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from test_fanout import SLURM_SCRIPT, committed_project, env_for, fanout_params, manifest, run_fanout, slurm_conf

from spanft.cluster import startups

RUNS = {"glue_baseline@tiny-cola-1": "data/runs/glue/tiny/cola/baseline/seed1",
        "glue_sf@tiny-cola-1": "data/runs/glue/tiny/cola/sf/seed1"}
TRAIN_SIZE = 120000  # one epoch of CoLA: more than one allocation trains at the smallest limit, even on a quiet machine
SLURM_ARGS = ["--executor", "slurm", "--jobs", "2", "--cpus", "1", "--mem-gb", "2"]


def long_epoch_params() -> dict:
    params = fanout_params()
    params["tasks"] = {"cola": "glue_data/CoLA"}
    params["studies"]["glue"]["tasks"] = ["cola"]
    params["reports"]["mcnemar_tasks"] = [task for task in params["reports"]["mcnemar_tasks"] if task == "cola"]
    params["data"]["synthetic"]["train_size"] = TRAIN_SIZE
    params["hparams"] = {"cola": {**params["hparams"]["cola"], "epochs": 1}}
    # a generous limit for the uninterrupted runs; the guess of the start-up is the tests' usual, too small here
    params["cluster"].update({"time_min": 30, "signal_delay_s": 10, "startup_s": 30, "checkpoint_every_s": 40,
                              "max_timeouts": 12})
    return params


def start_requeued_jobs_at_once(env: dict, stop: threading.Event) -> None:
    """SLURM makes a requeued job wait two minutes; let it start as soon as it is pending again."""
    while not stop.wait(1.0):
        listed = subprocess.run(["squeue", "--noheader", "--array", "--states=PENDING", "--format=%i %r"], env=env,
                                capture_output=True, text=True).stdout
        for job in [line.split()[0] for line in listed.splitlines() if "BeginTime" in line]:
            subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], env=env, capture_output=True)


def job_out(project: Path, stage: str) -> tuple[str, str]:
    """The job's .out and .err, of the latest submission."""
    log = Path(manifest(project)[stage][1])
    return log.with_suffix(".out").read_text(encoding="utf-8"), log.read_text(encoding="utf-8")


def recorded(project: Path) -> list[list[str]]:
    path = project / ".fanout" / startups.RECORD
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("SPANFT_LONG_TESTS"), reason="minutes (two trainings longer than a job may run, "
                    "each twice): SPANFT_LONG_TESTS=1 pytest tests/test_fanout_timelimit.py")
def test_a_time_limit_at_the_preflights_smallest_still_finishes_every_run_as_if_uninterrupted(tmp_path_factory,
                                                                                                tmp_path):
    conf, folder = slurm_conf(tmp_path_factory, nodes=1)
    try:
        project = committed_project(tmp_path / "head", long_epoch_params())
        env = env_for(project, {"SLURM_CONF": conf})
        code, output = run_fanout(project, [*SLURM_ARGS, "--no-join"], env, timeout=1500)
        assert code == 0, output
        reference = tmp_path / "reference"
        for stage, run in RUNS.items():
            assert "Requeued job" not in job_out(project, stage)[0]  # uninterrupted
            shutil.copytree(project / ".fanout" / "workspaces" / stage / run, reference / run)
        learned = recorded(project)
        assert sorted(row[2] for row in learned) == sorted(RUNS) and all(row[6] == "trained" for row in learned)
        print("start-ups of the uninterrupted runs (s):", [int(row[5]) for row in learned])

        shutil.rmtree(project / ".dvc" / "cache" / "runs")  # the same runs, stale again
        code, refused = run_fanout(project, [*SLURM_ARGS, "--time-min", "1"], env)
        minimum = re.search(r"--time-min (\d+) leaves one", refused)
        assert code != 0 and minimum, refused
        slowest = max(int(row[5]) for row in learned)
        assert f"(~{max(slowest, 30)} s, " in refused  # the start-up the jobs showed, where longer than the guess
        minimum = int(minimum.group(1))
        print(f"the smallest limit the pre-flight takes: {minimum} min (slowest start-up {slowest} s)")

        stop = threading.Event()
        hurry = threading.Thread(target=start_requeued_jobs_at_once, args=(env, stop), daemon=True)
        hurry.start()
        try:
            code, output = run_fanout(project, [*SLURM_ARGS, "--time-min", str(minimum)], env, timeout=2400)
        finally:
            stop.set()
            hurry.join()
        assert code == 0, output
        assert f"the smallest limit that leaves one checkpoint interval: --time-min {minimum}" in output
        requeued = 0
        for stage, run in RUNS.items():
            ours, theirs = (json.loads((p / run / "metrics.json").read_text()) for p in (project, reference))
            for key in ("metrics", "eval_loss", "best_epoch", "history"):
                assert ours[key] == theirs[key], (stage, key)
            for split in ("validation.tsv", "test.tsv"):
                assert (project / run / "predictions" / split).read_text() == \
                       (reference / run / "predictions" / split).read_text()
            out = job_out(project, stage)[0]
            requeued += out.count("Requeued job")
            saved = [int(step) for step in re.findall(r"time-limit signal[^:]*: the training saved checkpoint-(\d+)", out)]
            timeline = [(int(at), int(began)) for at, began in re.findall(
                r"time-limit signal \((\d+) s into the allocation, its training began at (\d+) s\)", out)]
            print(stage, "signals (s into the allocation, training began at):", timeline, "saved:", saved)
            # every allocation the limit ended saved on the signal, past where the one before it saved
            assert len(saved) == out.count("Requeued job") and all(a < b for a, b in zip([0, *saved], saved)), saved
            assert ours["resumed_from"] == (f"checkpoint-{saved[-1]}" if saved else None)
            # ... and trained at least one checkpoint interval before the signal: the limit fits, as the check said
            assert len(timeline) == len(saved) and all(at - began >= 40 for at, began in timeline), timeline
        assert requeued >= 1  # stopped by the limit, resumed mid-epoch
        print("start-ups at the smallest limit (s):", [(int(row[5]), row[6]) for row in recorded(project)[2:]])
    finally:
        subprocess.run(["bash", str(SLURM_SCRIPT), "stop", str(folder)], check=False)
