"""The thread policy (spanft.threads): params win; else the usable cores divided by the processes sharing them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spanft import threads
from spanft.threads import SHARING_ENV, processes_sharing, thread_count, usable_cores


@pytest.fixture
def cores(monkeypatch):
    def set_cores(count: int) -> None:
        monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(count)))

    set_cores(16)
    monkeypatch.setattr(threads, "queue_workers", lambda: 1)
    return set_cores


def test_a_count_in_params_wins_over_everything(cores):
    env = {"OMP_NUM_THREADS": "7", "PYTEST_XDIST_WORKER_COUNT": "8", SHARING_ENV: "3"}
    assert thread_count(3, env) == 3 and thread_count(40, env) == 40


def test_auto_divides_the_affinity_by_the_processes_sharing_it(cores):
    assert thread_count(0, {}) == 16
    assert thread_count(0, {"PYTEST_XDIST_WORKER_COUNT": "2"}) == 8
    assert thread_count(0, {"LOCAL_WORLD_SIZE": "4"}) == 4  # torchrun / accelerate launch
    assert thread_count(0, {SHARING_ENV: "3"}) == 5  # spanft fanout's local jobs
    assert thread_count(0, {SHARING_ENV: "3", "LOCAL_WORLD_SIZE": "4"}) == 4  # the most sharers counts
    assert thread_count(0, {SHARING_ENV: "64"}) == 1  # never 0


def test_auto_ignores_omp_num_threads_and_garbage(cores):
    """The same params give the same count whatever the shell exports: a resumed run can continue its run."""
    assert thread_count(0, {"OMP_NUM_THREADS": "1"}) == 16
    assert thread_count(0, {"PYTEST_XDIST_WORKER_COUNT": "two", SHARING_ENV: "-3", "LOCAL_WORLD_SIZE": ""}) == 16


def test_a_slurm_allocation_caps_the_cores(cores):
    """A SLURM job that does not pin its tasks still sees every core of the node in its affinity."""
    assert usable_cores({"SLURM_CPUS_PER_TASK": "6"}) == 6
    assert thread_count(0, {"SLURM_CPUS_PER_TASK": "6", SHARING_ENV: "2"}) == 3
    cores(4)
    assert usable_cores({"SLURM_CPUS_PER_TASK": "6"}) == 4  # the affinity is smaller still


@given(cores_=st.integers(1, 256), sharers=st.integers(1, 300), requested=st.integers(0, 64))
def test_never_more_threads_than_a_fair_share_unless_asked(cores_, sharers, requested):
    import os
    from unittest import mock

    with mock.patch.object(os, "sched_getaffinity", lambda pid: set(range(cores_))), \
            mock.patch.object(threads, "queue_workers", lambda: 1):
        count = thread_count(requested, {SHARING_ENV: str(sharers)})
    if requested:
        assert count == requested
    else:
        assert count >= 1 and (count * sharers <= cores_ or count == 1)
        assert count == max(1, cores_ // sharers)  # the rule read directly


def test_use_threads_sets_torchs_count():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        assert threads.use_threads(1) == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


_WORKER = "import time, sys; time.sleep(60)"


def _started(command: list[str]) -> subprocess.Popen:
    """A process, returned once its command line is its own (not its parent's, as before exec)."""
    process = subprocess.Popen(command)
    deadline = time.monotonic() + 30
    while command[-1] not in " ".join(psutil.Process(process.pid).cmdline()):
        assert time.monotonic() < deadline, "the stand-in never started"
        time.sleep(0.02)
    return process


def test_dvc_queue_workers_are_counted_from_a_queued_experiment():
    """A stage run by `dvc queue start -j 3` shares the cores with the other 2 workers of that queue (and
    not with another repo's queue, nor when it is no queue worker's descendant)."""
    stand_ins = [_started([sys.executable, "-c", _WORKER, "exp", "queue-worker", f"dvc-exp-abc123-{n}@localhost"])
                 for n in (2, 3)]
    other = _started([sys.executable, "-c", _WORKER, "exp", "queue-worker", "dvc-exp-ffffff-1@localhost"])
    probe = ("import subprocess, sys; print(subprocess.run([sys.executable, '-c', 'from spanft.threads import "
             "queue_workers; print(queue_workers())'], capture_output=True, text=True).stdout.strip())")
    try:
        as_worker = subprocess.run([sys.executable, "-c", probe, "exp", "queue-worker", "dvc-exp-abc123-1@localhost"],
                                   capture_output=True, text=True, check=True)
        assert as_worker.stdout.strip() == "3"
        alone = subprocess.run([sys.executable, "-c", "from spanft.threads import queue_workers; print(queue_workers())"],
                               capture_output=True, text=True, check=True)
        assert alone.stdout.strip() == "1"
    finally:
        for process in [*stand_ins, other]:
            process.kill()
            process.wait()


def test_processes_sharing_counts_queue_workers(monkeypatch):
    monkeypatch.setattr(threads, "queue_workers", lambda: 5)
    assert processes_sharing({"PYTEST_XDIST_WORKER_COUNT": "2"}) == 5


def test_a_real_dvc_queue_of_two_workers_gives_each_stage_half_the_cores(tmp_path):
    """`dvc queue start -j 2`: each queued experiment's stage counts the 2 workers and takes cores / 2."""
    import os
    import shutil

    if shutil.which("dvc") is None:
        pytest.skip("dvc is not on the PATH")
    probe = ("from spanft.threads import thread_count, queue_workers, usable_cores; "
             "open('out.txt', 'w').write(f'{thread_count()} {queue_workers()} {usable_cores({})}')")
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  probe:\n    cmd: python probe.py\n    params: [x]\n    outs: [out.txt]\n", encoding="utf-8")
    (tmp_path / "probe.py").write_text(probe + "\n", encoding="utf-8")
    (tmp_path / "params.yaml").write_text("x: 0\n", encoding="utf-8")
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(Path(threads.__file__).parents[1])}
    env.pop("PYTEST_XDIST_WORKER_COUNT", None)  # the stages are the queue's, not this test worker's

    def run(*command: str) -> str:
        return subprocess.run(command, cwd=tmp_path, env=env, check=True, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120).stdout

    for command in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        run(*command)
    for value in (1, 2):
        run("dvc", "exp", "run", "--queue", "-S", f"x={value}", "-q")
    try:
        run("dvc", "queue", "start", "-j", "2")
        deadline = time.monotonic() + 120
        while "Queued" in (status := run("dvc", "queue", "status")) or "Running" in status:
            assert time.monotonic() < deadline, status
            time.sleep(0.5)
    finally:
        run("dvc", "queue", "stop", "--kill")
    assert status.count("Success") == 2, status
    outputs = [Path(path).read_text() for path in (tmp_path / ".dvc/cache").rglob("*") if Path(path).is_file()
               and Path(path).stat().st_size < 64]
    values = {tuple(map(int, text.split())) for text in outputs if len(text.split()) == 3}
    assert values, outputs
    for count, workers, cores in values:
        assert workers == 2 and count == max(1, cores // 2)
