"""The fan-out's parts that need no scheduler: its settings, the head's state, a job's workspace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spanft.cluster.fanout import executor_name, job_threads
from spanft.cluster.workspace import head_state, prepare_workspace, snapshot
from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings
from spanft.params.schema import check_params

ROOT = Path(__file__).resolve().parents[1]


def embedded() -> dict:
    return yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("key, value, said", [
    ("executor", "pbs", "cluster.executor: 'pbs' is not one of auto, slurm, local"),
    ("cpus_per_job", 0, "cluster.cpus_per_job must be at least 1, found 0"),
    ("max_parallel", -2, "cluster.max_parallel must be at least 1"),
    ("gpus_per_job", -1, "cluster.gpus_per_job must be at least 0"),
    ("folder", " ", "cluster.folder is empty"),
    ("mem_gb", "16G", "cluster.mem_gb must be an integer, found '16G'"),
    ("setup", "module load cuda", "cluster.setup must be a list"),
])
def test_a_bad_cluster_setting_is_one_line_naming_it(key, value, said):
    params = embedded()
    params["cluster"][key] = value
    with pytest.raises(SpanftError, match="^params.yaml: " + said.replace("(", r"\(").replace(")", r"\)")):
        check_params(params, "params.yaml")


def test_every_profile_has_a_valid_cluster_block():
    for path in sorted((ROOT / "profiles").glob("*.yaml")):
        check_params(yaml.safe_load(path.read_text(encoding="utf-8")), path)


def test_slurm_without_sbatch_is_refused_and_auto_falls_back_to_local(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SpanftError, match="sbatch is not on the PATH"):
        executor_name(ClusterSettings(executor="slurm"))
    assert executor_name(ClusterSettings(executor="auto")) == "local"


def test_local_jobs_share_the_cores_and_slurm_jobs_use_their_cpus(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert job_threads(ClusterSettings(), "local", 4) == 4
    assert job_threads(ClusterSettings(), "local", 32) == 1
    assert job_threads(ClusterSettings(cpus_per_job=6), "slurm", 4) == 6


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture
def head(tmp_path) -> Path:
    repo = tmp_path / "head"
    (repo / "src").mkdir(parents=True)
    (repo / "reports").mkdir()
    for name, text in {"params.yaml": "lr: 1\n", "src/code.py": "x = 1\n", "src/gone.py": "y = 2\n",
                       "reports/table.md": "old\n", "dvc.lock": "old\n", "notes.txt": "n\n"}.items():
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "init", "-q")
    subprocess.run(["dvc", "init", "-q"], cwd=repo, check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    return repo


def test_uncommitted_code_or_params_are_refused_in_one_line_and_outputs_are_not(head):
    (head / "reports" / "table.md").write_text("new\n", encoding="utf-8")  # a stage output
    (head / "dvc.lock").write_text("new\n", encoding="utf-8")
    (head / "scratch.txt").write_text("?\n", encoding="utf-8")  # untracked, outside every stage input
    assert head_state(head, ["reports"], ["src", "params.yaml"], allow_dirty=False).changed == ()
    (head / "params.yaml").write_text("lr: 2\n", encoding="utf-8")
    (head / "src" / "new.py").write_text("z = 3\n", encoding="utf-8")  # untracked, inside a stage input
    with pytest.raises(SpanftError) as error:
        head_state(head, ["reports"], ["src", "params.yaml"], allow_dirty=False)
    assert "uncommitted changes (params.yaml, src/new.py)" in str(error.value) and "\n" not in str(error.value)


def test_a_workspace_is_the_commit_plus_the_heads_lock_and_allowed_changes(head, tmp_path):
    (head / "dvc.lock").write_text("after upstream\n", encoding="utf-8")
    (head / "src" / "code.py").write_text("x = 2\n", encoding="utf-8")
    (head / "src" / "gone.py").unlink()
    (head / "notes.txt").write_text("changed, not sent\n", encoding="utf-8")
    state = head_state(head, ["reports"], ["src", "params.yaml"], allow_dirty=True)
    assert state.changed == ("src/code.py", "src/gone.py")
    snap = snapshot(state, tmp_path / "fanout")
    assert snapshot(state, tmp_path / "fanout") == snap  # one folder per content
    workspace = tmp_path / "fanout" / "workspaces" / "stage@1"
    cache = tmp_path / "cache"
    prepare_workspace(head, state.commit, snap, workspace, str(cache))
    config = (workspace / ".dvc" / "config.local").read_text()
    assert "dir = " + str(cache) in config and "reflink,hardlink,symlink,copy" in config
    assert (workspace / "src" / "code.py").read_text() == "x = 2\n"
    assert not (workspace / "src" / "gone.py").exists()
    assert (workspace / "dvc.lock").read_text() == "after upstream\n"
    assert (workspace / "notes.txt").read_text() == "n\n"  # the commit's, not the head's working tree
    (workspace / "data").mkdir()
    (workspace / "data" / "checkpoint").write_text("kept\n", encoding="utf-8")
    prepare_workspace(head, state.commit, snap, workspace, str(cache))  # a re-submitted job: same folder
    assert (workspace / "data" / "checkpoint").read_text() == "kept\n"


def test_a_second_fanout_in_the_same_head_is_refused_in_one_line(tmp_path):
    from filelock import FileLock

    from spanft.cluster.fanout import fanout

    settings = ClusterSettings(executor="local", folder=str(tmp_path / "jobs"))
    (tmp_path / "jobs").mkdir()
    with FileLock(tmp_path / "jobs" / "fanout.lock"):
        with pytest.raises(SpanftError, match="another spanft fanout is running for this head"):
            fanout(tmp_path, settings, jobs=1, allow_dirty=False, join=False)


class _Job:
    """What outcome() reads of a submitit job: no result file, and the scheduler's state."""

    def __init__(self, tmp_path: Path, state: str):
        self.job_id, self.state = "7_0", state
        self.paths = type("Paths", (), {"result_pickle": tmp_path / "7_0_result.pkl"})()


@pytest.mark.parametrize("state", ["CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"])
def test_a_job_that_ended_badly_without_a_result_fails_at_once(tmp_path, state):
    from spanft.cluster.tracking import Submitted, outcome

    entry = Submitted("glue_sf@tiny-cola-1", _Job(tmp_path, state))
    assert outcome(entry, {}).startswith(f"ended without a result ({state.lower()}")


def test_a_clean_exit_waits_for_its_result_file_before_it_counts_as_failed(tmp_path, monkeypatch):
    from spanft.cluster import tracking as module

    now = [1000.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: now[0])
    entry = module.Submitted("glue_sf@tiny-cola-1", _Job(tmp_path, "RUNNING"))
    assert module.outcome(entry, {"7_0": "COMPLETED"}) == ""  # the result file may be on its way
    now[0] += module.RESULT_GRACE_SECONDS - 1
    assert module.outcome(entry, {"7_0": "COMPLETED"}) == ""
    now[0] += 2
    assert module.outcome(entry, {"7_0": "COMPLETED"}).startswith("ended without a result (completed")


def test_a_stage_whose_earlier_job_still_runs_is_not_sent_again(tmp_path):
    from spanft.cluster.fanout import refuse_if_still_running
    from spanft.cluster.stages import StaleStage

    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "submitit"])  # a live job
    earlier = tmp_path / "jobs" / "20260101-000000-1"
    earlier.mkdir(parents=True)
    (earlier / "jobs.tsv").write_text(f"stage\texecutor\tjob\tlog\nglue_sf@tiny-cola-1\tlocal\t{stand_in.pid}\tx.err\n"
                                      f"glue_sf@tiny-mrpc-1\tlocal\t{2**22 + 7}\ty.err\n", encoding="utf-8")
    stale = [StaleStage("glue_sf@tiny-cola-1", ()), StaleStage("glue_sf@tiny-mrpc-1", ())]
    try:
        with pytest.raises(SpanftError, match=rf"still queued or running: glue_sf@tiny-cola-1 \(job {stand_in.pid}\);"):
            refuse_if_still_running(tmp_path, stale)
        refuse_if_still_running(tmp_path, stale[1:])  # that one's job is gone
    finally:
        stand_in.kill()
        stand_in.wait()
    refuse_if_still_running(tmp_path, stale)


def test_each_submission_keeps_its_jobs_files_apart(tmp_path):
    """Job ids come back (process ids; a new SLURM counts from 1): an old result must never be read as new."""
    from spanft.cluster.tracking import new_submission

    first, second = new_submission(tmp_path), new_submission(tmp_path / "x")
    assert first.parent == tmp_path / "jobs" and first != second and not any(first.iterdir())


def test_sbatch_refusing_the_array_is_one_line(tmp_path, monkeypatch):
    from spanft.cluster.fanout import slurm_executor, submit_array
    from spanft.cluster.job import StageJob

    fake = tmp_path / "bin" / "sbatch"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'sbatch: error: invalid partition specified: nosuch' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    call = StageJob("glue_sf@tiny-cola-1", (), str(tmp_path), "0" * 40, "snap", "ws", "cache", 1)
    with pytest.raises(SpanftError) as error:
        submit_array(slurm_executor(ClusterSettings(partition="nosuch"), tmp_path / "sub", 2), [call])
    assert "sbatch refused the job array: sbatch: error: invalid partition specified: nosuch" in str(error.value)
    assert "\n" not in str(error.value)


def test_a_failed_job_is_reported_by_its_own_error_not_submitits_trailer(tmp_path):
    from spanft.cluster.tracking import error_line, log_error

    text = ("Job (task=0) failed during processing with trace:\n----------------------\nTraceback (most recent "
            "call last):\n  File \"x\", line 1\nspanft.errors.SpanftError: glue_sf@tiny-cola-1: dvc repro exited "
            "with 255\n\n----------------------\nYou can check full logs with 'job.stderr(0)' and 'job.stdout(0)'"
            "or at paths:\n  - /f/1_0_log.err\n  - /f/1_0_log.out\n")
    assert error_line(text) == "glue_sf@tiny-cola-1: dvc repro exited with 255"
    log = tmp_path / "1_0_log.err"
    log.write_text("noise\nspanft: error: params.yaml: hparams.cola.lr must be a number\nERROR: failed to "
                   "reproduce 'glue_sf@tiny-cola-1': failed to run: python pipeline/finetune.py, exited with 2\n")
    assert log_error(log) == "spanft: error: params.yaml: hparams.cola.lr must be a number"
    log.write_text("ERROR: failed to reproduce 'glue_sf@tiny-cola-1': exited with 1\n")
    assert log_error(log).startswith("ERROR: failed to reproduce 'glue_sf@tiny-cola-1'")
    assert log_error(tmp_path / "missing.err") is None


def test_a_second_job_in_the_same_workspace_does_nothing(tmp_path):
    from filelock import FileLock

    from spanft.cluster.job import StageJob

    workspace = tmp_path / "workspaces" / "glue_sf@tiny-cola-1"
    call = StageJob("glue_sf@tiny-cola-1", (), str(tmp_path), "0" * 40, "snap", str(workspace), "cache", 1)
    with FileLock(f"{workspace}.lock"):
        with pytest.raises(SpanftError, match="another job runs in"):
            call()
    assert not workspace.exists()
