"""A SLURM time limit at "just fits", shorter than an epoch: every allocation makes progress, every job still
finishes, and its run equals an uninterrupted one.

A one-node SLURM (scripts/slurm-one-node.sh, its one-node form: the multi-node paths are tests/test_fanout.py's)
runs a small embedded project whose two fine-tuning runs train for longer than a job may. The time limit is the
smallest the pre-flight accepts: 2 min less the signal's lead (10 s, and SLURM's ~30 s cycle on top), the
start-up (30 s, generous on a busy machine) and one checkpoint interval (40 s). The signal makes the training
save at its next step before submitit requeues the job (the job's log says which checkpoint), so every
allocation ends with a checkpoint later than the one it started from. SLURM holds a requeued job for two
minutes before it may start again; the test lets it start at once (`scontrol update StartTime=now`), which
changes nothing the jobs see. The runs must end with the metrics, the history (training loss included) and the
predictions of the same runs trained without interruption.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from pathlib import Path

import pytest
from test_fanout import (
    SLURM_SCRIPT,
    committed_project,
    env_for,
    fanout_params,
    head_after_serial,
    manifest,
    run_fanout,
    slurm_conf,
)
from test_graph import dvc

RUNS = {"glue_baseline@tiny-cola-1": "data/runs/glue/tiny/cola/baseline/seed1",
        "glue_sf@tiny-cola-1": "data/runs/glue/tiny/cola/sf/seed1"}


def long_epoch_params() -> dict:
    params = fanout_params()
    params["tasks"] = {"cola": "glue_data/CoLA"}
    params["studies"]["glue"]["tasks"] = ["cola"]
    params["reports"]["mcnemar_tasks"] = [task for task in params["reports"]["mcnemar_tasks"] if task == "cola"]
    params["data"]["synthetic"]["train_size"] = 80000  # one epoch of CoLA: longer than any job trains here
    params["hparams"] = {"cola": {**params["hparams"]["cola"], "epochs": 1}}
    # just fits: 120 - (10 + 30) - 30 = 40 s, one checkpoint interval
    params["cluster"].update({"time_min": 2, "signal_delay_s": 10, "startup_s": 30, "checkpoint_every_s": 40,
                              "max_timeouts": 10})
    return params


def start_requeued_jobs_at_once(env: dict, stop: threading.Event) -> None:
    """SLURM makes a requeued job wait two minutes; let it start as soon as it is pending again."""
    while not stop.wait(1.0):
        listed = subprocess.run(["squeue", "--noheader", "--array", "--states=PENDING", "--format=%i %r"], env=env,
                                capture_output=True, text=True).stdout
        for job in [line.split()[0] for line in listed.splitlines() if "BeginTime" in line]:
            subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], env=env, capture_output=True)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("SPANFT_LONG_TESTS"), reason="minutes (two trainings longer than a job may run, "
                    "each twice): SPANFT_LONG_TESTS=1 pytest tests/test_fanout_timelimit.py")
def test_a_time_limit_shorter_than_an_epoch_still_finishes_every_run_as_if_uninterrupted(tmp_path_factory, tmp_path):
    conf, folder = slurm_conf(tmp_path_factory, nodes=1)
    try:
        serial = committed_project(tmp_path / "serial", long_epoch_params())
        dvc(serial, "repro")
        project = head_after_serial(serial, tmp_path / "head")
        env = env_for(project, {"SLURM_CONF": conf})
        stop = threading.Event()
        hurry = threading.Thread(target=start_requeued_jobs_at_once, args=(env, stop), daemon=True)
        hurry.start()
        try:
            code, output = run_fanout(project, ["--executor", "slurm", "--jobs", "2", "--cpus", "1", "--mem-gb", "2"],
                                      env, timeout=1500)
        finally:
            stop.set()
            hurry.join()
        assert code == 0, output
        requeued, resumed = 0, []
        for stage, run in RUNS.items():
            ours, reference = (json.loads((p / run / "metrics.json").read_text()) for p in (project, serial))
            resumed.append(ours["resumed_from"])
            for key in ("metrics", "eval_loss", "best_epoch", "history"):
                assert ours[key] == reference[key], (stage, key)
            for split in ("validation.tsv", "test.tsv"):
                assert (project / run / "predictions" / split).read_text() == \
                       (serial / run / "predictions" / split).read_text()
            log = manifest(project)[stage][1]
            out = Path(log).with_suffix(".out").read_text(encoding="utf-8")
            requeued += out.count("Requeued job")
            saved = [int(step) for step in re.findall(r"time-limit signal: the training saved checkpoint-(\d+)", out)]
            starts = [0, *(int(step) for step in re.findall(r"resuming from \S*checkpoint-(\d+)",
                                                             Path(log).read_text(encoding="utf-8")))]
            # every allocation the limit ended saved on the signal, past where it started
            assert len(saved) == out.count("Requeued job") and all(a < b for a, b in zip(starts, saved)), \
                (stage, starts, saved)
        assert requeued >= 1 and any(resumed), (requeued, resumed)  # stopped by the limit, resumed mid-epoch
    finally:
        subprocess.run(["bash", str(SLURM_SCRIPT), "stop", str(folder)], check=False)
