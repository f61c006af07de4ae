"""The time-limit signal in a job: the training that listens saves before the requeue (spanft.cluster.timelimit)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spanft.cluster import job, timelimit
from spanft.train import saves

LISTENER = """
import json, os, signal, sys, time
path = sys.argv[1]
def tell(saves):
    with open(path + ".tmp", "w") as handle:
        json.dump({"pid": os.getpid(), "saves": saves, "checkpoint": f"checkpoint-{saves * 7}"}, handle)
    os.replace(path + ".tmp", path)
def save(signum, frame):
    time.sleep(0.5)  # the optimizer step, then the save
    tell(1)
signal.signal(signal.SIGUSR2, save)
tell(0)
time.sleep(60)
"""


def _listener(tmp_path):
    told = tmp_path / timelimit.SIGNAL_FILE
    process = subprocess.Popen([sys.executable, "-c", LISTENER, str(told)])
    deadline = time.monotonic() + 20
    while not told.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return process, told


def test_the_job_has_the_listening_training_save_before_it_requeues(tmp_path):
    process, told = _listener(tmp_path)
    try:
        started = time.monotonic()
        said = timelimit.save_before_requeue(told, signal.SIGUSR2, budget_s=20)
        assert said == "the training saved checkpoint-7" and time.monotonic() - started < 10
    finally:
        process.kill()
        process.wait()
    assert "has ended: nothing to save" in timelimit.save_before_requeue(told, signal.SIGUSR2, budget_s=20)


def test_nothing_listening_or_a_training_that_does_not_save_is_not_waited_for_past_the_budget(tmp_path):
    assert "no training listening" in timelimit.save_before_requeue(tmp_path / "none", signal.SIGUSR2, 20)
    ignoring = "import signal, time; signal.signal(signal.SIGUSR2, signal.SIG_IGN); time.sleep(60)"
    sleeper = subprocess.Popen([sys.executable, "-c", ignoring])
    try:
        (tmp_path / "file").write_text(json.dumps({"pid": sleeper.pid, "saves": 0}))
        started = time.monotonic()
        said = timelimit.save_before_requeue(tmp_path / "file", signal.SIGUSR2, budget_s=1)
        assert "did not save within 1 s" in said and time.monotonic() - started < 3
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("text, seconds", [("0:38", 38), ("12:00:05", 43205), ("1-00:00:00", 86400), ("59", 59),
                                           ("INVALID", None), ("UNLIMITED", None), ("", None), ("1-x:00", None)])
def test_slurm_durations_are_read_as_seconds(text, seconds):
    assert timelimit.slurm_duration_s(text) == seconds


def test_the_wait_uses_the_real_time_left_and_keeps_a_margin_for_the_requeue():
    margin = timelimit.REQUEUE_MARGIN_S
    assert timelimit.wait_budget_s(20, 38) == 38 - margin  # SLURM's real lead: longer than configured
    assert timelimit.wait_budget_s(20, None) == 20 - margin  # squeue silent: the configured lead
    assert timelimit.wait_budget_s(5, 2) == 0


def test_the_job_and_the_training_name_the_same_variables():
    assert (job.SAVE_SIGNAL_ENV, job.SIGNAL_FILE_ENV) == (saves.SAVE_SIGNAL_ENV, saves.SIGNAL_FILE_ENV)


def _agree(rank: int, port: int, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        # rank 1 alone got the signal; each process's clock says "due", but only the main process's counts
        seen = [saves.agreed(due=(rank == 0 and step == 1) or (rank == 1 and step == 0),
                             signalled=(rank == 1 and step == 2), device="cpu", main=rank == 0)
                for step in range(3)]
    finally:
        dist.destroy_process_group()
    with open(f"{out}.{rank}", "w", encoding="utf-8") as handle:
        json.dump(seen, handle)


def test_every_process_of_a_distributed_run_takes_the_same_decision(tmp_path):
    """Under DDP the signal may reach one process: all save at the same step; the wall clock is the main one's."""
    import socket

    import torch.multiprocessing as mp

    dist = pytest.importorskip("torch.distributed")
    if not dist.is_gloo_available():
        pytest.skip("no gloo backend in this torch build")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mp.spawn(_agree, args=(port, str(tmp_path / "seen")), nprocs=2, join=True)
    expected = [[False, False], [True, False], [False, True]]
    assert [json.loads((tmp_path / f"seen.{rank}").read_text()) for rank in (0, 1)] == [expected, expected]


class _ListeningStage(job.StageJob):
    """A StageJob whose stage is a stand-in training (LISTENER) in its workspace; its checkpoint() is the real one."""

    def __call__(self) -> str:
        told = Path(self.workspace) / timelimit.SIGNAL_FILE
        subprocess.run([sys.executable, "-c", LISTENER, str(told)], check=False, timeout=600)
        return "ended"


@pytest.fixture(scope="module")
def one_node(tmp_path_factory):
    from test_fanout import SLURM_SCRIPT, slurm_conf

    conf, folder = slurm_conf(tmp_path_factory, nodes=1)
    yield conf
    subprocess.run(["bash", str(SLURM_SCRIPT), "stop", str(folder)], check=False)


def test_on_real_slurm_the_time_limit_signal_has_the_training_save_before_the_requeue(one_node, tmp_path,
                                                                                      monkeypatch):
    """SLURM's own --signal, submitit's handler, the job's checkpoint(): the listening process saves, then the
    job is requeued (and cancelled here)."""
    import cloudpickle
    import submitit

    monkeypatch.setenv("SLURM_CONF", one_node)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the job cannot import this test module
    try:
        executor = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="slurm")
        executor.update_parameters(timeout_min=1, slurm_signal_delay_s=20, cpus_per_task=1)
        stage = _ListeningStage("glue_sf@x", (), str(tmp_path), "0" * 40, "", str(tmp_path), "", signal_delay_s=20)
        submitted = executor.submit(stage)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    deadline = time.monotonic() + 300
    said = ""
    while time.monotonic() < deadline and "Requeued job" not in said:
        time.sleep(1)
        said = Path(submitted.paths.stdout).read_text() if Path(submitted.paths.stdout).exists() else ""
    subprocess.run(["scancel", submitted.job_id], check=False)
    assert "spanft fanout job: time-limit signal: the training saved checkpoint-7; requeueing" in said, said
    assert said.index("the training saved") < said.index("Requeued job")
