"""The fan-out's parts that need no scheduler: its settings, the head's state, a job's workspace."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from spanft.cluster.executors import executor_name, job_cores
from spanft.cluster.workspace import head_state, prepare_workspace, snapshot
from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings
from spanft.params.schema import check_params

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


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
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(16)))
    assert job_cores(ClusterSettings(), "local", 4) == 4
    assert job_cores(ClusterSettings(), "local", 32) == 1
    assert job_cores(ClusterSettings(cpus_per_job=6), "slurm", 4) == 6


def test_local_jobs_share_the_cores_this_process_may_use_not_the_machines(monkeypatch):
    """Under a cgroup or taskset (a SLURM allocation, a container) the machine's core count is not ours."""
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {3, 4, 5, 6})
    assert job_cores(ClusterSettings(), "local", 2) == 2


def test_local_gpu_jobs_get_the_callers_gpus_and_no_more_jobs_than_they_go_round(monkeypatch, tmp_path):
    from spanft.cluster.executors import local_slots, slot_gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,GPU-8f3a")  # what the caller was given, in its numbering
    settings = ClusterSettings(gpus_per_job=1)
    assert local_slots(settings, 8) == 3
    assert [slot_gpus(settings, slot) for slot in range(3)] == ["4", "5", "GPU-8f3a"]
    assert slot_gpus(ClusterSettings(gpus_per_job=0), 0) == ""  # no GPU: a CPU job
    assert local_slots(ClusterSettings(gpus_per_job=0), 8) == 8
    with pytest.raises(SpanftError, match=r"cluster.gpus_per_job 4: this machine shows 3 GPU\(s\)"):
        local_slots(ClusterSettings(gpus_per_job=4), 2)


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


def test_changed_paths_with_spaces_or_non_ascii_names_are_seen(head):
    """git quotes such paths unless asked for them raw (-z): quoted, they would match no stage input."""
    (head / "src" / "modèle été.py").write_text("z = 1\n", encoding="utf-8")
    with pytest.raises(SpanftError, match="uncommitted changes \\(src/modèle été.py\\)"):
        head_state(head, [], ["src"], allow_dirty=False)


def test_a_head_without_commits_or_below_the_git_top_is_refused_in_one_line(tmp_path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    with pytest.raises(SpanftError, match="no commit yet; the jobs run a commit"):
        head_state(fresh, [], ["src"], allow_dirty=False)
    (fresh / "project").mkdir()
    with pytest.raises(SpanftError, match="a subfolder of its git repository"):
        head_state(fresh / "project", [], ["src"], allow_dirty=False)


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


def test_a_workspace_takes_the_heads_local_dvc_config(head, tmp_path):
    """A remote (and its credentials) set with `dvc remote add --local` lives where git does not carry it."""
    subprocess.run(["dvc", "remote", "add", "--local", "store", str(tmp_path / "store")], cwd=head, check=True)
    state = head_state(head, [], ["src"], allow_dirty=False)
    workspace = tmp_path / "fanout" / "workspaces" / "stage@1"
    prepare_workspace(head, state.commit, snapshot(state, tmp_path / "fanout"), workspace, str(tmp_path / "cache"))
    config = (workspace / ".dvc" / "config.local").read_text()
    assert "store" in config and str(tmp_path / "store") in config and str(tmp_path / "cache") in config


def test_a_second_fanout_in_the_same_head_is_refused_in_one_line(tmp_path):
    from filelock import FileLock

    from spanft.cluster.fanout import fanout

    settings = ClusterSettings(executor="local", folder=str(tmp_path / "jobs"))
    (tmp_path / "jobs").mkdir()
    with FileLock(tmp_path / "jobs" / "fanout.lock"):
        with pytest.raises(SpanftError, match="another spanft fanout is using this job folder"):
            fanout(tmp_path, settings, jobs=1, allow_dirty=False, join=False)


class _Job:
    """What outcome() reads of a submitit job: no result file, and the scheduler's state."""

    def __init__(self, tmp_path: Path, state: str):
        self.job_id, self.state = "7_0", state
        self.paths = type("Paths", (), {"result_pickle": tmp_path / "7_0_result.pkl", "stderr": tmp_path / "7_0.err",
                                        "stdout": tmp_path / "7_0.out"})()


@pytest.mark.parametrize("state", ["CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"])
def test_a_job_that_ended_badly_without_a_result_fails_at_once(tmp_path, state):
    from spanft.cluster.tracking import Submitted, outcome

    entry = Submitted("glue_sf@tiny-cola-1", _Job(tmp_path, state))
    said = outcome(entry, {})
    assert said == {"CANCELLED": "cancelled (scancel, or an administrator)",
                    "TIMEOUT": "its time limit, before it could requeue: raise cluster.signal_delay_s or "
                               "cluster.time_min",
                    "NODE_FAIL": "its node failed (NODE_FAIL): nothing to change; run spanft fanout again (tell the "
                                 "administrators if it repeats)",
                    "OUT_OF_MEMORY": "out of memory: the job used more than its cluster.mem_gb: raise cluster.mem_gb "
                                     "(--mem-gb)"}[state]


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
    from spanft.cluster.stages import StaleStage
    from spanft.cluster.tracking import process_start
    from spanft.cluster.watching import still_running

    # a live job, checked at once: its command line may still be pytest's (not yet exec'd), its start time is its own
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    started = process_start(str(stand_in.pid))
    earlier = tmp_path / "jobs" / "20260101-000000-1"
    earlier.mkdir(parents=True)
    (earlier / "jobs.tsv").write_text(f"stage\texecutor\tjob\tlog\tstarted\n"
                                      f"glue_sf@tiny-cola-1\tlocal\t{stand_in.pid}\tx.err\t{started}\n"
                                      f"glue_sf@tiny-mrpc-1\tlocal\t{2**22 + 7}\ty.err\t1.000\n", encoding="utf-8")
    stale = [StaleStage("glue_sf@tiny-cola-1", ()), StaleStage("glue_sf@tiny-mrpc-1", ())]
    try:
        with pytest.raises(SpanftError, match=rf"still running here: glue_sf@tiny-cola-1 \(process {stand_in.pid}\);"):
            still_running(tmp_path, stale, "c", "s")
        assert still_running(tmp_path, stale[1:], "c", "s") == {}  # that one's job is gone
    finally:
        stand_in.kill()
        stand_in.wait()
    assert still_running(tmp_path, stale, "c", "s") == {}


def test_a_process_that_got_a_dead_jobs_id_back_is_not_that_job():
    from spanft.cluster.tracking import local_job_alive, process_start

    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = process_start(str(process.pid))
        assert started and local_job_alive(str(process.pid), started)
        earlier = started.rpartition(":")[0] + ":" + str(int(started.rpartition(":")[2]) - 100)
        assert not local_job_alive(str(process.pid), earlier)  # the same id, an earlier process
        assert started.startswith("ticks:")  # ticks after boot: no wall-clock step moves them
        assert not local_job_alive(str(process.pid), "")  # gone before the manifest was written
    finally:
        process.kill()
        process.wait()
    assert not local_job_alive(str(process.pid), started)


def test_each_submission_keeps_its_jobs_files_apart(tmp_path):
    """Job ids come back (process ids; a new SLURM counts from 1): an old result must never be read as new."""
    from spanft.cluster.tracking import new_submission

    first, second = new_submission(tmp_path), new_submission(tmp_path / "x")
    assert first.parent == tmp_path / "jobs" and first != second and not any(first.iterdir())


def test_sbatch_refusing_the_array_is_one_line(tmp_path, monkeypatch):
    from spanft.cluster.executors import slurm_executor, submit_array
    from spanft.cluster.job import StageJob

    fake = tmp_path / "bin" / "sbatch"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'sbatch: error: invalid partition specified: nosuch' >&2\nexit 1\n")
    fake.chmod(0o755)
    srun = fake.parent / "srun"  # submitit looks for it before it calls sbatch: a machine without SLURM lacks it
    srun.write_text("#!/bin/sh\nexit 1\n")
    srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    call = StageJob("glue_sf@tiny-cola-1", (), str(tmp_path), "0" * 40, "snap", "ws", "cache", 1)
    with pytest.raises(SpanftError) as error:
        settings = ClusterSettings(partition="nosuch")
        submit_array(slurm_executor(settings, tmp_path / "sub", 2), [call], settings)
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
    from spanft.cluster.job import StageJob
    from spanft.cluster.joblock import exclusive

    workspace = tmp_path / "workspaces" / "glue_sf@tiny-cola-1"
    workspace.parent.mkdir(parents=True)
    call = StageJob("glue_sf@tiny-cola-1", (), str(tmp_path), "0" * 40, "snap", str(workspace),
                    str(tmp_path / "cache"), 1)
    with exclusive(Path(f"{workspace}.job"), "first"):
        with pytest.raises(SpanftError, match=r"glue_sf@tiny-cola-1: another job \(pid \d+ on .*\) holds .*did nothing"):
            call()
    assert not workspace.exists() and not Path(f"{workspace}.job").exists()


def test_a_workspace_lock_left_by_a_dead_holder_or_this_requeued_job_is_taken_over(tmp_path, monkeypatch):
    """No flock: an O_EXCL file naming its holder, which works across nodes on NFS and Lustre alike."""
    import json as _json

    from spanft.cluster.joblock import exclusive

    lock = tmp_path / "w.job"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(_json.dumps({"host": os.uname().nodename, "pid": dead.pid, "started": "ticks:1", "slurm_job": ""}))
    with exclusive(lock, "stage"):  # the dead process's lock
        assert _json.loads(lock.read_text())["pid"] == os.getpid()
    assert not lock.exists()
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    lock.write_text(_json.dumps({"host": "node-b", "pid": 1, "started": "", "slurm_job": "77"}))
    with exclusive(lock, "stage"):  # this very job, requeued on another node
        pass
    lock.write_text(_json.dumps({"host": "node-b", "pid": 1, "started": "", "slurm_job": ""}))
    with pytest.raises(SpanftError, match="another job \\(pid 1 on node-b\\) holds"):
        with exclusive(lock, "stage"):  # another host, no scheduler to ask: never taken
            pass


def test_the_job_folder_must_be_the_fanouts_own(head):
    from spanft.cluster.fanout import check_folder, fanout

    for folder in (head, head.parent):
        with pytest.raises(SpanftError, match="that is the repo or a folder above it"):
            check_folder(head, folder)
    with pytest.raises(SpanftError, match="it holds files git tracks"):
        check_folder(head, head / "src")
    check_folder(head, head / ".fanout")
    mine = head / "scratch"
    mine.mkdir()
    (mine / ".gitignore").write_text("mine\n", encoding="utf-8")
    settings = ClusterSettings(executor="local", folder=str(mine), remote="nosuch")
    with pytest.raises(SpanftError, match=r"cluster.remote 'nosuch': no such DVC remote .*none"):
        fanout(head, settings, jobs=1, allow_dirty=False, join=False)
    assert (mine / ".gitignore").read_text() == "mine\n"  # a user's file is never overwritten


def test_without_squeue_nobody_can_tell_what_runs_so_nothing_is_sent(tmp_path, monkeypatch):
    from spanft.cluster.tracking import still_active

    earlier = tmp_path / "jobs" / "20260101-000000-1"
    earlier.mkdir(parents=True)
    (earlier / "jobs.tsv").write_text("stage\texecutor\tjob\tlog\nglue_sf@tiny-cola-1\tslurm\t7_0\tx.err\n")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SpanftError, match="squeue is not on the PATH: cannot tell whether"):
        still_active(tmp_path)
    fake = tmp_path / "bin" / "squeue"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'squeue: error: Unable to contact slurm controller' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    with pytest.raises(SpanftError, match="squeue failed \\(squeue: error: Unable to contact slurm controller\\)"):
        still_active(tmp_path)


def test_a_stopped_command_takes_its_whole_process_group_with_it(tmp_path):
    """dvc's children (the training) must not outlive a stopped job: they would race its requeued copy."""
    import psutil

    pid_file = tmp_path / "grandchild.pid"
    script = ("import signal, sys\n"
              "from spanft.cluster.processes import run_group\n"
              "signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))\n"
              f"run_group(['bash', '-c', 'sleep 300 & echo $! > {pid_file}; wait'], '.')\n")
    caller = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(SRC)})
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline and caller.poll() is None
        time.sleep(0.05)
    grandchild = int(pid_file.read_text())
    caller.terminate()
    assert caller.wait(timeout=30) == 143
    gone = not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE
    assert gone, "the grandchild outlived its stopped caller"


@pytest.mark.parametrize("threads", [1, 2], ids=["one thread", "a second thread"])
def test_a_sigterm_while_the_command_starts_still_stops_its_group(tmp_path, threads):
    """The signal lands inside Popen (after the fork, before Popen returns): the command must still be stopped,
    also when another thread of the caller (a progress bar's monitor, a library's) is the one that receives it."""
    import psutil

    pid_file = tmp_path / "grandchild.pid"
    script = ("import os, signal, subprocess, sys, threading, time\n"
              "from spanft.cluster.processes import run_group\n"
              "signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))\n"
              f"for _ in range({threads} - 1):\n"
              "    threading.Thread(target=time.sleep, args=(120,), daemon=True).start()\n"
              "start = subprocess.Popen.__init__\n"
              "def start_then_terminated(self, *args, **kwargs):\n"
              "    start(self, *args, **kwargs)\n"
              f"    while not os.path.getsize({str(pid_file)!r}) if os.path.exists({str(pid_file)!r}) else True:\n"
              "        time.sleep(0.01)\n"
              "    os.kill(os.getpid(), signal.SIGTERM)\n"
              "subprocess.Popen.__init__ = start_then_terminated\n"
              f"run_group(['bash', '-c', 'sleep 300 & echo $! > {pid_file}; wait'], '.')\n")
    caller = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=60)
    assert caller.returncode == 143
    grandchild = int(pid_file.read_text())
    gone = not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE
    if not gone:
        os.kill(grandchild, signal.SIGKILL)
    assert gone, "the command outlived a caller stopped while it started"


def test_the_time_limit_signal_reaches_submitit_only():
    from spanft.cluster.job import time_limit_signal
    from spanft.cluster.processes import run_group

    command = ["bash", "-c", "kill -USR2 $$; echo still here"]
    assert run_group(command, ".", ignore=(time_limit_signal(),)) == 0
    assert run_group(command, ".") != 0  # SIGUSR2's default action ends the process


def test_a_directory_dvc_cannot_open_is_one_line(tmp_path):
    project = tmp_path / "not-dvc"
    project.mkdir()
    (project / "params.yaml").write_text((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "x")
    done = subprocess.run(["spanft", "fanout", "--root", str(project), "--executor", "local"], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"spanft: error: {project}: dvc: you are not inside of a DVC repository")


@pytest.fixture
def dvc_head(tmp_path) -> Path:
    """A committed DVC project whose one stage runs pipeline/finetune.py (a fine-tuning stage), run once."""
    repo = tmp_path / "dvc-head"
    (repo / "pipeline").mkdir(parents=True)
    (repo / "pipeline" / "finetune.py").write_text(
        "import yaml\nopen('run.txt', 'w').write(str(yaml.safe_load(open('params.yaml'))['lr']))\n")
    (repo / "params.yaml").write_text("lr: 1\n")
    (repo / "dvc.yaml").write_text("stages:\n  ft:\n    cmd: python pipeline/finetune.py\n"
                                   "    deps: [pipeline/finetune.py]\n    params: [lr]\n    outs: [run.txt]\n")
    git(repo, "init", "-q")
    subprocess.run(["dvc", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["dvc", "repro", "-q"], cwd=repo, check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one run")
    return repo


def dvc_repro(repo: Path, *args: str) -> str:
    done = subprocess.run(["dvc", "repro", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout + done.stderr


def test_a_lock_record_of_a_run_made_elsewhere_is_dropped_so_dvc_restores_the_jobs_run(dvc_head):
    """A clone's dvc.lock records outputs another machine made; DVC then runs the stage again although the
    run-cache holds the job's run (it reads the run-cache only without an applicable record)."""
    from spanft.cluster.stages import forget_uncached_records, stale_training_stages

    lock_path = dvc_head / "dvc.lock"
    lock = yaml.safe_load(lock_path.read_text())
    lock["stages"]["ft"]["outs"][0]["md5"] = "f" * 32
    lock_path.write_text(yaml.safe_dump(lock, sort_keys=False))
    (dvc_head / "run.txt").unlink()
    assert "Running stage 'ft'" in dvc_repro(dvc_head, "--dry")  # DVC itself, as the record stands
    assert stale_training_stages(dvc_head) == ([], 0, 1)  # the fan-out sends nothing: the run is cached
    assert forget_uncached_records(dvc_head) == ["ft"]
    assert "Stage 'ft' is cached - skipping run" in dvc_repro(dvc_head)
    assert (dvc_head / "run.txt").read_text() == "1"
    assert forget_uncached_records(dvc_head) == []  # a record of cached outputs stays


def test_the_join_never_fine_tunes_on_the_head(dvc_head):
    from spanft.cluster.fanout import refuse_stale_join
    from spanft.cluster.stages import stage_paths

    sent = head_state(dvc_head, *stage_paths(dvc_head), allow_dirty=False)
    refuse_stale_join(dvc_head, sent)  # the runs match the head: the join may go on
    (dvc_head / "params.yaml").write_text("lr: 2\n")  # edited while the jobs ran
    with pytest.raises(SpanftError, match="1 training stages are stale after the jobs ended"):
        refuse_stale_join(dvc_head, sent)


def test_a_history_rewrite_with_equal_contents_still_joins(dvc_head):
    """`git commit --amend` (a new message) and `git gc --prune` while the jobs ran: the same files, so the
    join goes on; an amend that changed a file is still refused."""
    from spanft.cluster.fanout import refuse_stale_join
    from spanft.cluster.sending import pin, unpin
    from spanft.cluster.stages import stage_paths

    sent = head_state(dvc_head, *stage_paths(dvc_head), allow_dirty=False)
    pin(dvc_head, sent.commit, dvc_head / "jobs" / "20260101-000000-1")
    git(dvc_head, "commit", "-q", "--amend", "-m", "reworded")
    git(dvc_head, "reflog", "expire", "--expire=now", "--all")
    git(dvc_head, "gc", "-q", "--prune=now")
    unpin(dvc_head)  # as the fan-out does before the join
    assert git(dvc_head, "rev-parse", "HEAD").strip() != sent.commit
    refuse_stale_join(dvc_head, sent)
    (dvc_head / "notes.txt").write_text("n\n")
    git(dvc_head, "add", "notes.txt")
    git(dvc_head, "commit", "-q", "--amend", "-m", "with a file more")
    with pytest.raises(SpanftError, match="the head's commit or files changed after the jobs ended"):
        refuse_stale_join(dvc_head, sent)


# --- checks before anything is spent (spanft.cluster.preflight), failure causes, the watch's deadline ---


@pytest.mark.parametrize("minutes, delay, startup, every, refused", [
    (1, 90, 60, 1200, True),   # the case a user met: the signal came inside the job's own start-up, for ever
    (60, 90, 60, 1200, False),
    (30, 90, 60, 1620, False),  # 1800 - (90 + 30) - 60 = 1620: exactly one interval is enough
    (30, 90, 60, 1621, True),  # SLURM's signal may come 30 s before the configured lead: the check counts it
])
def test_a_time_limit_that_leaves_no_checkpoint_interval_is_refused(minutes, delay, startup, every, refused):
    from spanft.cluster.preflight import check_time_limit

    settings = ClusterSettings(time_min=minutes, signal_delay_s=delay, startup_s=startup, checkpoint_every_s=every)
    if refused:
        with pytest.raises(SpanftError, match=rf"cluster.time_min {minutes}: {minutes * 60} s less .*"
                                              rf"leaves {minutes * 60 - delay - 30 - startup} s to train"):
            check_time_limit(settings, "slurm")
    else:
        check_time_limit(settings, "slurm")
    check_time_limit(ClusterSettings(time_min=1, startup_s=0, checkpoint_every_s=60), "local")  # no signal lead


def test_an_unwritable_folder_or_cache_is_named_with_its_cause(tmp_path):
    from spanft.cluster.preflight import check_cache, check_writable

    with pytest.raises(SpanftError, match=r"the DVC cache /sys/fs/x/cache/files: cannot be written \(") as error:
        check_cache("/sys/fs/x/cache")  # /sys: not writable, even by root
    assert "dvc cache dir --local" in str(error.value) and "\n" not in str(error.value)
    check_writable(tmp_path / "not" / "yet", "cluster.folder", "fix")  # the nearest existing parent takes files
    assert list(tmp_path.iterdir()) == []  # and the check leaves nothing


def test_the_job_folder_needs_room_for_the_checkpoints_of_the_jobs_at_once(tmp_path, monkeypatch):
    from spanft.cluster import preflight

    (tmp_path / "data" / "backbones" / "big").mkdir(parents=True)
    (tmp_path / "data" / "backbones" / "big" / "model.safetensors").write_bytes(b"\0" * 1000)
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages:\n  b:\n    outs:\n    - path: data/backbones/huge\n"
                                       "      size: 5000\n", encoding="utf-8")
    assert preflight.backbone_bytes(tmp_path, {"big", "huge", "unknown"}) == {"big": 1000, "huge": 5000}
    assert preflight.checkpoint_bytes(tmp_path, {"big", "unknown"}) is None
    per_job = preflight.checkpoint_bytes(tmp_path, {"big", "huge"})
    assert per_job == 5000 * preflight.CHECKPOINTS_PER_RUN * preflight.COPIES_PER_CHECKPOINT
    usage = type("Usage", (), {"free": per_job * 4})
    monkeypatch.setattr(preflight.shutil, "disk_usage", lambda path: usage)
    preflight.check_room(tmp_path / ".fanout", per_job, 4)
    with pytest.raises(SpanftError, match=r"cluster.folder .*: 0.1 MB free, but 5 jobs at once keep checkpoints"):
        preflight.check_room(tmp_path / ".fanout", per_job, 5)


def test_a_site_default_that_keeps_the_environment_from_jobs_is_lifted_for_the_submission_alone(monkeypatch):
    from spanft.cluster.preflight import (
        ENVIRONMENT_TOKEN,
        check_job_environment,
        submission_environment,
    )

    monkeypatch.setenv("SBATCH_EXPORT", "NONE")
    monkeypatch.setenv("SLURM_EXPORT_ENV", "NONE")
    monkeypatch.delenv(ENVIRONMENT_TOKEN, raising=False)
    with submission_environment("sub-1"):
        assert "SBATCH_EXPORT" not in os.environ and "SLURM_EXPORT_ENV" not in os.environ
        check_job_environment("sub-1")  # a job started now gets it
    assert os.environ["SBATCH_EXPORT"] == "NONE" and os.environ["SLURM_EXPORT_ENV"] == "NONE"
    monkeypatch.delenv(ENVIRONMENT_TOKEN)
    with pytest.raises(SpanftError, match=r"the job did not get your environment .* in cluster.setup"):
        check_job_environment("sub-1")


class _Finished:
    """A submitit job whose result file holds ``error``, with logs in ``folder``."""

    def __init__(self, folder: Path, error: Exception | None, err: str = "", out: str = ""):
        self.job_id, self.state = "9_0", "FAILED"
        result = folder / "9_0_result.pkl"
        if error is not None or not (err or out):
            result.write_bytes(b"")
        self._error = error
        (folder / "9_0.err").write_text(err)
        (folder / "9_0.out").write_text(out)
        self.paths = type("Paths", (), {"result_pickle": result, "stderr": folder / "9_0.err",
                                        "stdout": folder / "9_0.out"})()

    def exception(self):
        return self._error


def test_a_job_that_timed_out_too_often_says_how_far_it_got_and_what_to_change(tmp_path):
    from submitit.core.utils import UncompletedJobError

    from spanft.cluster.tracking import Submitted, outcome

    workspace = tmp_path / "ws"
    for step, epoch in ((24, 1.0), (36, 1.5)):
        folder = workspace / "data" / "checkpoints" / "glue" / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "trainer_state.json").write_text(json.dumps(
            {"epoch": epoch, "num_train_epochs": 3, "global_step": step, "max_steps": 72}))
    error = UncompletedJobError("Job not requeued because: timed-out too many times.")
    entry = Submitted("glue_sf@tiny-cola-1", _Finished(tmp_path, error), workspace=str(workspace), max_timeouts=3)
    assert outcome(entry, {}) == ("timed out 4 times, last checkpoint epoch 1.50 of 3 (step 36 of 72): raise "
                                  "cluster.time_min (or cluster.max_timeouts), then run spanft fanout again "
                                  "(it resumes)")
    (tmp_path / "9_0_result.pkl").unlink()
    (tmp_path / "9_0_result.pkl").write_bytes(b"")
    entry = Submitted("glue_sf@tiny-cola-1", _Finished(tmp_path, error), workspace=str(tmp_path / "none"))
    said = outcome(entry, {})
    assert "with no checkpoint written (each allocation ended before the first): raise cluster.time_min past the " \
           "start-up; spanft fanout counts the start-up these allocations recorded" in said and "(it resumes)" not in said


@pytest.mark.parametrize("err, out, free, said", [
    ("", "OSError: [Errno 28] No space left on device: '/x'\n", 10**9, "no space left on device: free space in"),
    ("slurmstepd: error: Detected 1 oom-kill event(s)\n", "", 10**9, "out of memory: the job used more than its "
                                                                     "cluster.mem_gb: raise cluster.mem_gb"),
    ("", "", 0, "no space left on device in"),  # .fanout full: the logs themselves are empty
    ("", "", 10**9, "wrote no log: it could not start, or could not write"),
    ("ERROR: failed to reproduce 'x': oops\n", "", 10**9, "ended without a result: ERROR: failed to reproduce"),
])
def test_a_job_without_a_result_is_told_by_the_cause_its_logs_name(tmp_path, monkeypatch, err, out, free, said):
    from spanft.cluster import tracking

    job = _Finished(tmp_path, None, err, out)
    job.paths.result_pickle.unlink(missing_ok=True)
    monkeypatch.setattr(tracking.shutil, "disk_usage", lambda path: type("Usage", (), {"free": free}))
    assert said in tracking.outcome(tracking.Submitted("s", job), {"9_0": "FAILED"})


def test_a_lost_scheduler_ends_the_watch_within_its_patience_and_leaves_the_jobs_alone(monkeypatch):
    from spanft.cluster import watching as module

    cancelled = []
    job = type("Job", (), {"job_id": "5_0", "cancel": lambda self, check: cancelled.append(1)})()
    entry = type("Entry", (), {"outcome": "", "job": job, "stage": "s"})()
    monkeypatch.setattr(module, "scheduler_states", lambda submitted: None)
    monkeypatch.setattr(module, "outcome", lambda entry, states: "")  # still queued, as far as anyone knows
    monkeypatch.setattr(module, "POLL_SECONDS", 0.05)
    started = time.monotonic()
    with pytest.raises(module.SchedulerLost, match=r"squeue has failed for 1 s .*the jobs may still run: run spanft "
                                                   r"fanout again to watch them again \(nothing is sent twice\)"):
        module.watch([entry], lambda: None, 1, patience_s=1)
    assert 1 <= time.monotonic() - started < 3 and cancelled == []


def test_jobs_get_the_paths_as_the_user_gave_them_not_symlink_resolved(tmp_path, monkeypatch):
    from spanft.cli.cluster import logical_path

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "mounted").symlink_to(real)
    monkeypatch.chdir(tmp_path / "mounted")
    monkeypatch.setenv("PWD", str(tmp_path / "mounted"))
    assert logical_path(".") == tmp_path / "mounted"
    assert ClusterSettings(folder=".fanout").folder_path(logical_path(".")) == tmp_path / "mounted" / ".fanout"
    monkeypatch.setenv("PWD", "/elsewhere")  # a stale PWD: the real directory, never another one
    assert logical_path(".") == real


def test_the_jobs_commit_is_pinned_against_gc_until_every_run_is_saved(head):
    from spanft.cluster.sending import pin, unpin

    first = git(head, "rev-parse", "HEAD").strip()
    pin(head, first, head / "jobs" / "20260101-000000-1")
    git(head, "commit", "-q", "--amend", "-m", "rewritten")  # the jobs' commit is now on no branch
    git(head, "reflog", "expire", "--expire=now", "--all")
    git(head, "gc", "-q", "--prune=now")
    assert git(head, "cat-file", "-t", first).strip() == "commit"
    unpin(head)
    git(head, "gc", "-q", "--prune=now")
    gone = subprocess.run(["git", "cat-file", "-t", first], cwd=head, capture_output=True, text=True)
    assert gone.returncode != 0


def test_a_failing_dvc_index_is_one_line(tmp_path, monkeypatch, capsys):
    import sqlite3

    import spanft.cluster.fanout
    from spanft.cli import main

    def broken(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(spanft.cluster.fanout, "fanout", broken)
    (tmp_path / "params.yaml").write_text((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["fanout", "--root", str(tmp_path), "--executor", "local"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spanft: error:") and "DVC's index failed (disk I/O error)" in err and "\n" not in err


def test_resources_no_node_offers_are_refused_before_anything_runs(tmp_path, monkeypatch):
    from spanft.cluster.preflight import check_resources

    fake = tmp_path / "bin" / "sbatch"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho \"$@\" > %s\necho 'allocation failure: Requested node configuration is not "
                    "available' >&2\nexit 1\n" % (tmp_path / "args"))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    with pytest.raises(SpanftError, match=r"SLURM would refuse the jobs \(allocation failure: Requested node "
                                          r"configuration is not available\): 64 CPUs, 16 GB, 1 GPUs, 60 min, partition gpu"):
        check_resources(ClusterSettings(cpus_per_job=64, gpus_per_job=1, partition="gpu"))
    said = (tmp_path / "args").read_text()
    assert "--test-only" in said and "--cpus-per-task=64" in said and "--gpus-per-node=1" in said


def test_a_workspace_whose_git_is_broken_is_cloned_again_never_the_heads_repo_touched(head, tmp_path):
    """A job killed while cloning leaves a .git git cannot read: git would then walk up to the head."""
    from spanft.cluster.workspace import prepare_workspace, snapshot

    commit = git(head, "rev-parse", "HEAD").strip()
    branch = git(head, "rev-parse", "--abbrev-ref", "HEAD").strip()
    folder = head / ".fanout"
    snap = snapshot(head_state(head, [], ["src"], allow_dirty=False), folder)
    workspace = folder / "workspaces" / "glue_sf@tiny-cola-1"
    (workspace / ".git").mkdir(parents=True)
    (workspace / ".git" / "HEAD").write_text("ref: refs/heads/master\n")
    (workspace / "data" / "checkpoints").mkdir(parents=True)
    (workspace / "data" / "checkpoints" / "kept").write_text("a run's checkpoint\n")
    prepare_workspace(head, commit, snap, workspace, str(tmp_path / "cache"))
    assert git(workspace, "rev-parse", "--show-toplevel").strip() == str(workspace)
    assert git(head, "rev-parse", "--abbrev-ref", "HEAD").strip() == branch  # the head stays on its branch
    assert not (head / ".dvc" / "config.local").exists()
    assert (workspace / "data" / "checkpoints" / "kept").read_text() == "a run's checkpoint\n"
    assert not (workspace / ".git" / "objects" / "info" / "alternates").exists()  # a gc of the head cannot break it


def test_a_head_reached_through_a_symbolic_link_opens_in_dvc(tmp_path, monkeypatch):
    """Home and scratch folders of clusters are often links: DVC relates stage paths to the working directory."""
    from spanft.cluster.stages import (
        finetune_upstream,
        stage_paths,
        stale_training_stages,
    )

    repo = tmp_path / "real"
    (repo / "pipeline").mkdir(parents=True)
    (repo / "pipeline" / "finetune.py").write_text("open('run.txt', 'w').write(open('data.txt').read())\n")
    (repo / "dvc.yaml").write_text("stages:\n  data:\n    cmd: echo x > data.txt\n    outs: [data.txt]\n"
                                   "  ft:\n    cmd: python pipeline/finetune.py\n"
                                   "    deps: [pipeline/finetune.py, data.txt]\n    outs: [run.txt]\n")
    git(repo, "init", "-q")
    subprocess.run(["dvc", "init", "-q"], cwd=repo, check=True)
    link = tmp_path / "link"
    link.symlink_to(repo)
    monkeypatch.chdir(link)
    assert finetune_upstream(link) == ["data"]
    assert stage_paths(link) == stage_paths(repo)
    assert [stage.name for stage in stale_training_stages(link)[0]] == ["ft"]
