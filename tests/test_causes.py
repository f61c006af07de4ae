"""Every failure named by its real cause (spanft.cluster.causes, through tracking.outcome), from SLURM's own
words as recorded on a Debian slurmd (22.05) where a real case cannot be made here, and one wording per cause
however the race between the result file and squeue falls."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from submitit.core.utils import UncompletedJobError

from spanft.cluster import causes, tracking
from spanft.errors import SpanftError

SCANCEL_ERROR = SpanftError("glue_sf@tiny-cola-1: dvc repro exited with -15 (SIGTERM)")
STEP_CANCELLED = "slurmstepd: error: *** STEP 12.0 ON n1 CANCELLED AT 2026-11-29T06:40:02 ***"


class _Job:
    """A submitit job as outcome() reads it: optional result (``error``), logs, cancel()."""

    def __init__(self, folder: Path, error: Exception | None = None, result: bool = False, err: str = "",
                 out: str = "", state: str = "RUNNING"):
        self.job_id, self.state, self._error, self.cancelled = "12_0", state, error, 0
        folder = Path(tempfile.mkdtemp(dir=folder))  # each job its own files
        self.paths = type("Paths", (), {"result_pickle": folder / "12_0_result.pkl", "stderr": folder / "12_0.err",
                                        "stdout": folder / "12_0.out"})()
        if result:
            self.paths.result_pickle.write_bytes(b"")
        self.paths.stderr.write_text(err)
        self.paths.stdout.write_text(out)

    def exception(self):
        return self._error

    def cancel(self, check: bool = True):
        self.cancelled += 1


def _outcome(job: _Job, states: dict, stage: str = "glue_sf@tiny-cola-1") -> str:
    return tracking.outcome(tracking.Submitted(stage, job), states)


@pytest.mark.parametrize("line, cause", [
    ("slurmstepd: error: Job 31 exceeded memory limit (1132462080 > 1073741824), being killed",
     "out of memory: the job used more than its cluster.mem_gb (1.0 GiB, SLURM said): raise cluster.mem_gb"),
    ("slurmstepd: error: Exceeded job memory limit", "out of memory: the job used more than its cluster.mem_gb:"),
    ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=31.0. Some of your processes may have been killed "
     "by the cgroup out-of-memory handler.", "out of memory: the job used more than its cluster.mem_gb:"),
    ("slurmstepd: error: *** JOB 31 ON n2 CANCELLED AT 2026-11-29T06:41:10 DUE TO NODE FAILURE, SEE SLURMCTLD "
     "LOG FOR DETAILS ***", "its node failed (NODE_FAIL)"),
    ("slurmstepd: error: *** JOB 31 ON n1 CANCELLED AT 2026-11-29T06:41:10 DUE TO PREEMPTION ***",
     "pre-empted, before it could requeue: pick a cluster.partition"),
    ("slurmstepd: error: *** JOB 31 ON n1 CANCELLED AT 2026-11-29T06:41:10 DUE TO TIME LIMIT ***",
     "its time limit, before it could requeue: raise cluster.signal_delay_s"),
    ("/var/spool/slurmd/job00031/slurm_script: line 9: 4242 File size limit exceeded (core dumped) srun ...",
     "a file-size limit on the node (ulimit -f): add `ulimit -f unlimited` to cluster.setup"),
    ("spanft.errors.SpanftError: /w/.fanout/workspaces/s: git checkout -q abc: killed by SIGXFSZ",
     "a file-size limit on the node"),
    ("OSError: [Errno 27] File too large: 'data/runs/x/predictions/test.tsv'", "a file-size limit on the node"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "out of GPU memory"),
    (STEP_CANCELLED, "cancelled (scancel, or an administrator)"),
])
def test_slurms_own_words_name_the_cause_and_the_setting(tmp_path, line, cause):
    failed = _outcome(_Job(tmp_path, SpanftError("s: dvc repro exited with 1"), result=True, err=line + "\n"), {})
    assert failed.startswith(cause), failed
    assert _outcome(_Job(tmp_path, err=line + "\n", state="FAILED"), {"12_0": "FAILED"}).startswith(cause)


@pytest.mark.parametrize("state, cause", [("OUT_OF_MEMORY", "out of memory"), ("NODE_FAIL", "its node failed"),
                                          ("PREEMPTED", "pre-empted"), ("TIMEOUT", "its time limit"),
                                          ("BOOT_FAIL", "its node failed to boot")])
def test_a_job_state_names_the_cause_when_the_logs_do_not(tmp_path, state, cause):
    job = _Job(tmp_path, SpanftError("s: dvc repro exited with -9 (SIGKILL)"), result=True, err="noise\n")
    assert _outcome(job, {"12_0": state}).startswith(cause)
    assert _outcome(_Job(tmp_path, err="noise\n", state=state), {"12_0": state}).startswith(cause)


def test_one_scancel_is_one_wording_however_the_race_falls(tmp_path, monkeypatch):
    """The job's result ("dvc repro exited with -15") may come before squeue's CANCELLED and slurmstepd's line."""
    now = [100.0]
    monkeypatch.setattr(tracking.time, "monotonic", lambda: now[0])
    seen = {
        _outcome(_Job(tmp_path, SCANCEL_ERROR, result=True), {"12_0": "CANCELLED"}),
        _outcome(_Job(tmp_path, SCANCEL_ERROR, result=True, err=STEP_CANCELLED), {"12_0": "RUNNING"}),
        _outcome(_Job(tmp_path, SCANCEL_ERROR, result=True, err=STEP_CANCELLED), {"12_0": "COMPLETED"}),  # forgotten
        _outcome(_Job(tmp_path, err=STEP_CANCELLED, state="CANCELLED"), {"12_0": "CANCELLED"}),
        _outcome(_Job(tmp_path, state="CANCELLED"), {"12_0": "CANCELLED"}),
    }
    assert seen == {causes.CANCELLED}
    entry = tracking.Submitted("s", _Job(tmp_path, SCANCEL_ERROR, result=True))  # nothing said yet: wait for it
    assert tracking.outcome(entry, {"12_0": "COMPLETING"}) == ""
    now[0] += tracking.RESULT_GRACE_SECONDS - 1
    assert tracking.outcome(entry, {"12_0": "COMPLETING"}) == ""
    entry.job.paths.stderr.write_text(STEP_CANCELLED + "\n")  # slurmstepd's line lands
    assert tracking.outcome(entry, {"12_0": "COMPLETING"}) == causes.CANCELLED


def test_an_earlier_allocations_requeue_is_no_cause_of_a_later_failure(tmp_path):
    """A requeued job appends to its logs: what an earlier allocation said there (as recorded on the one-node
    SLURM: the requeue's CANCELLED lines, the stage's `terminated (SIGTERM)`) is not the last one's cause."""
    from spanft.cluster.job import ALLOCATION_START

    err = (f"{ALLOCATION_START} (glue_sf@tiny-cola-1)\n"
           "slurmstepd-vm: error: *** STEP 4.0 ON vm CANCELLED AT 2026-11-29T07:14:58 DUE TO JOB REQUEUE ***\n"
           "slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT 2026-11-29T06:00:00 DUE TO TIME LIMIT ***\n"
           "spanft: error: terminated (SIGTERM)\nsrun: error: vm: task 0: Killed\n"
           f"{ALLOCATION_START} (glue_sf@tiny-cola-1)\n"
           "ERROR: failed to reproduce 'glue_sf@tiny-cola-1': exited with 2\n")
    said = _outcome(_Job(tmp_path, SpanftError("s: dvc repro exited with 2"), result=True, err=err), {})
    assert said == "ERROR: failed to reproduce 'glue_sf@tiny-cola-1': exited with 2"
    out = ("submitit INFO (2026-11-29 06:02:00,000) - Starting with JobEnvironment(job_id=12_0)\n"
           "slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT 2026-11-29T06:00:00 DUE TO TIME LIMIT ***\n"
           "submitit INFO (2026-11-29 06:04:00,000) - Starting with JobEnvironment(job_id=12_0)\n"
           "spanft: error: params.yaml: hparams.cola.lr must be a number\n")
    said = _outcome(_Job(tmp_path, SpanftError("s: dvc repro exited with 2"), result=True, out=out), {})
    assert said == "spanft: error: params.yaml: hparams.cola.lr must be a number"


def test_a_job_pending_for_a_reason_that_never_clears_is_cancelled_and_named(tmp_path):
    job = _Job(tmp_path, state="PENDING")
    states = tracking.States({"12_0": "PENDING"}, {"12_0": "PartitionTimeLimit"})
    said = _outcome(job, states)
    assert said.startswith("never starts: SLURM holds it pending (PartitionTimeLimit): cluster.time_min is above "
                           "the partition's MaxTime") and job.cancelled == 1
    job = _Job(tmp_path, state="PENDING")
    said = _outcome(job, tracking.States({"12_0": "PENDING"}, {"12_0": "QOSMaxCpuPerJobLimit"}))
    assert "lower cluster.time_min, cpus_per_job, mem_gb or gpus_per_job" in said and job.cancelled == 1
    for reason in ("ReqNodeNotAvail, UnavailableNodes:n1", "Resources", "Priority", "BeginTime"):
        job = _Job(tmp_path, state="PENDING")
        assert _outcome(job, tracking.States({"12_0": "PENDING"}, {"12_0": reason})) == "" and not job.cancelled


def test_a_reason_that_may_clear_is_told_once(caplog, monkeypatch):
    monkeypatch.setattr(causes, "_said", set())
    with caplog.at_level(logging.INFO, logger="spanft"):
        for _ in range(3):
            causes.pending_note({"1_0": "ReqNodeNotAvail, UnavailableNodes:n1", "1_1": "ReqNodeNotAvail, x",
                                 "1_2": "Priority"})
    told = [r.getMessage() for r in caplog.records]
    assert told == ["fanout: 2 jobs pending (ReqNodeNotAvail): the nodes it may use are down, drained or reserved; "
                    "they start when it clears"]


def test_the_advice_after_too_many_time_outs_fits_the_stage(tmp_path):
    error = UncompletedJobError("Job not requeued because: timed-out too many times.")
    state = tmp_path / "ws" / "data" / "checkpoints" / "glue" / "checkpoint-36" / "trainer_state.json"
    state.parent.mkdir(parents=True)
    state.write_text('{"epoch": 1.5, "num_train_epochs": 3, "global_step": 36, "max_steps": 72}')
    job = _Job(tmp_path, error, result=True)
    entry = tracking.Submitted("glue_sf@tiny-cola-1", job, workspace=str(tmp_path / "ws"))
    assert tracking.outcome(entry, {}).endswith("then run spanft fanout again (it resumes)")
    nothing = _outcome(_Job(tmp_path, error, result=True), {})  # every allocation ended in its start-up
    assert "no checkpoint written" in nothing and "raise cluster.time_min past the start-up" in nothing
    assert "(it resumes)" not in nothing
    step_cost = _outcome(_Job(tmp_path, error, result=True), {}, stage="step_cost")
    assert step_cost == ("timed out 4 times: step_cost keeps no checkpoint, so each allocation starts it over: raise "
                         "cluster.time_min above its whole run, then run spanft fanout again")


def test_a_real_file_size_limit_kills_git_and_is_named(tmp_path):
    """A node's `ulimit -f`: git dies of SIGXFSZ while it writes the checkout, and says nothing itself."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@t"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "big.bin").write_bytes(b"x" * 200_000)
    subprocess.run(["git", "add", "big.bin"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "big"], cwd=repo, check=True)
    (repo / "big.bin").unlink()
    script = ("import resource, sys\nresource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))\n"
              "from spanft.cluster.workspace import git\nfrom pathlib import Path\n"
              "from spanft.errors import SpanftError\n"
              "try:\n    git(Path(sys.argv[1]), 'checkout', '-q', '--', 'big.bin')\n"
              "except SpanftError as error:\n    print(error)\n")
    said = subprocess.run([sys.executable, "-c", script, str(repo)], capture_output=True, text=True).stdout.strip()
    assert said.endswith("git checkout -q -- big.bin: killed by SIGXFSZ"), said
    assert causes.cause_in([said]).startswith("a file-size limit on the node (ulimit -f)")
    assert causes.exit_words(-25) == "-25 (SIGXFSZ)" and causes.exit_words(2) == "2"


EAT = "x = bytearray(600 * 2**20)\nfor i in range(0, len(x), 4096): x[i] = 1\nimport time; time.sleep(30)\n"


@pytest.fixture(scope="module")
def memory_enforced(tmp_path_factory):
    """A one-node SLURM that kills a job over its --mem, as real clusters do."""
    from test_fanout import SLURM_SCRIPT, slurm_conf

    saved = os.environ.get("SLURM_ONE_NODE_MEMORY")
    os.environ["SLURM_ONE_NODE_MEMORY"] = "enforce"
    try:
        conf, folder = slurm_conf(tmp_path_factory, nodes=1)
    finally:
        os.environ.pop("SLURM_ONE_NODE_MEMORY") if saved is None else os.environ.update(SLURM_ONE_NODE_MEMORY=saved)
    yield conf
    subprocess.run(["bash", str(SLURM_SCRIPT), "stop", str(folder)], check=False)


def test_on_real_slurm_a_job_over_its_memory_is_named_out_of_memory(memory_enforced, tmp_path, monkeypatch):
    """SLURM's own words ("exceeded memory limit (... > 209715200), being killed", then a CANCELLED line for the
    step) name the cause and the setting, not "killed or out of time" nor "cancelled"."""
    import submitit

    monkeypatch.setenv("SLURM_CONF", memory_enforced)
    executor = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="slurm")
    executor.update_parameters(timeout_min=3, slurm_mem="200M", cpus_per_task=1)
    job = executor.submit(subprocess.check_call, [sys.executable, "-c", EAT])
    entry = tracking.Submitted("glue_sf@tiny-cola-1", job)
    deadline = time.monotonic() + 240
    while not entry.outcome and time.monotonic() < deadline:
        states = tracking.slurm_states({job.job_id})
        entry.outcome = tracking.outcome(entry, states)
        time.sleep(1)
    assert entry.outcome.startswith("out of memory: the job used more than its cluster.mem_gb (0.2 GiB, SLURM "
                                    "said): raise cluster.mem_gb"), entry.outcome


def test_on_real_slurm_scancel_is_one_wording_every_time(memory_enforced, tmp_path, monkeypatch):
    """scancel while the job's command runs: the command dies of SIGTERM and the job writes its result, racing
    squeue and slurmstepd; three jobs (running or pending), one wording."""
    import submitit

    monkeypatch.setenv("SLURM_CONF", memory_enforced)
    executor = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="slurm")
    executor.update_parameters(timeout_min=20, slurm_mem="200M", cpus_per_task=1)  # no time-limit signal
    jobs = [executor.submit(subprocess.check_call, ["sleep", "600"]) for _ in range(3)]
    entries = [tracking.Submitted("glue_sf@tiny-cola-1", job) for job in jobs]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not any(Path(job.paths.stdout).exists() for job in jobs):
        time.sleep(0.5)
    time.sleep(2)  # the commands run (a job the node has no CPU for yet is cancelled pending)
    subprocess.run(["scancel", *(job.job_id for job in jobs)], check=True)
    while time.monotonic() < deadline and not all(entry.outcome for entry in entries):
        states = tracking.slurm_states({job.job_id for job in jobs})
        for entry in entries:
            entry.outcome = entry.outcome or tracking.outcome(entry, states)
        time.sleep(0.2)
    assert {entry.outcome for entry in entries} == {causes.CANCELLED}
