"""`spanft fanout` end to end: a real one-node SLURM cluster, and local processes, against a serial `dvc repro`.

A small embedded project (two GLUE tasks, one seed: four fine-tuning stages, CoLA's of three epochs) runs
serially with `dvc repro`; a copy of it without its runs (outputs and run-cache gone) is fanned out, one job is
killed once its first checkpoint is written, the next call sends only that stage (which resumes), the head's
`dvc repro` restores every run from the run-cache, and the reports equal the serial ones but for Table 3's
measured seconds. An edit to one task's hparams then sends that task's runs only. SLURM comes from
scripts/slurm-one-node.sh (it installs slurm-wlm and munge with apt-get where they are missing); where it
cannot start, the SLURM case says why and skips, except under CI, where it must start.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import psutil
import pytest
import yaml
from test_graph import ROOT, dvc, new_project, ran_stages, reduced_params

SLURM_SCRIPT = ROOT / "scripts" / "slurm-one-node.sh"
FINETUNE = {"glue_baseline@tiny-cola-1", "glue_sf@tiny-cola-1", "glue_baseline@tiny-mrpc-1", "glue_sf@tiny-mrpc-1"}
TRAINING = FINETUNE | {"step_cost"}  # the stages jobs run: fine-tuning, and Table 3's step costs
TRAINING_GROUPS = {name.split("@")[0] for name in TRAINING}
KILLED = "glue_sf@tiny-cola-1"
KILLED_RUN = "data/runs/glue/tiny/cola/sf/seed1"


def fanout_params() -> dict:
    params = reduced_params()
    params["tasks"] = {"cola": "glue_data/CoLA", "mrpc": "glue_data/MRPC"}
    params["studies"]["glue"] = {"backbones": ["tiny"], "tasks": ["cola", "mrpc"], "seeds": [1]}
    for study in ("backbones", "snli", "ablation", "ner", "dictsize"):  # left out: one study is enough here
        params["studies"][study]["backbones"] = []
        params["studies"][study].update({"tasks": []} if "tasks" in params["studies"][study] else {})
    params["studies"]["snli"]["encoders"] = []
    params["data"]["synthetic"]["train_size"] = 256  # epochs of a second or so: a kill lands between checkpoints
    params["hparams"] = {"cola": {**params["hparams"]["cola"], "epochs": 3}, "mrpc": params["hparams"]["mrpc"]}
    params["reports"]["figure2"]["tasks"] = ["cola"]
    return params


def committed_project(path: Path, params: dict | None = None) -> Path:
    project = new_project(path, params or fanout_params())
    (project / ".gitignore").write_text("__pycache__/\n/data/*\n!/data/raw/\n/.fanout/\n", encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "fan-out test project")
    return project


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args], cwd=project, check=True)


def env_for(project: Path, extra: dict | None = None) -> dict:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(project / "src")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return {**env, **(extra or {})}


def start_fanout(project: Path, args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(["spanft", "fanout", *args], cwd=project, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)


def run_fanout(project: Path, args: list[str], env: dict, timeout: float = 400) -> tuple[int, str]:
    process = start_fanout(project, args, env)
    output, _ = process.communicate(timeout=timeout)
    return process.returncode, output


def report_lines(project: Path) -> dict[str, list[str]]:
    """Every report file's lines, less Table 3 (measured seconds, threads) and the lines that quote it."""
    files = {}
    for path in sorted((project / "reports").rglob("*")):
        if path.is_file() and not path.name.startswith("table3."):
            text = path.read_bytes().decode("utf-8", errors="replace")
            files[str(path.relative_to(project))] = [line for line in text.splitlines()
                                                     if "fine-tuning time" not in line]
    return files


def head_after_serial(serial: Path, path: Path) -> Path:
    """A copy of the serial project as a clean clone sees it: its fine-tuning runs are not in the cache, and
    its dvc.lock records runs made elsewhere (output hashes this cache lacks, as when the lock was committed
    from another machine), which DVC would run again rather than restore from the run-cache unless the join
    drops them. Submissions and reports (made from the runs), their lock entries and the run-cache are gone.

    Its upstream stages stay done (the fan-out runs them as a no-op), so the jobs re-run exactly the
    training stages, and the reports the join builds can only come from the jobs' runs.
    """
    shutil.copytree(serial, path, symlinks=True)
    shutil.rmtree(path / ".dvc" / "cache" / "runs")
    for made_by_jobs in ("data/runs", "data/submissions", "reports"):
        shutil.rmtree(path / made_by_jobs)
    (path / "data" / "step_cost.json").unlink()
    lock = yaml.safe_load((path / "dvc.lock").read_text(encoding="utf-8"))
    for stage in [name for name in lock["stages"] if name.split("@")[0] in TRAINING_GROUPS]:
        for out in lock["stages"][stage]["outs"]:
            out["md5"] = "f" * 32 + (".dir" if out["md5"].endswith(".dir") else "")
    for stage in ("submission@tiny", "report"):
        del lock["stages"][stage]
    (path / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False), encoding="utf-8")
    return path


def slurm_conf(tmp_path_factory, nodes: int = 2) -> str:
    """Start a test cluster of ``nodes`` slurmd on this host (installing SLURM where it is missing); its
    SLURM_CONF, or skip saying why. Two nodes: the jobs of one array land on both, as on a real cluster."""
    folder = Path(os.environ.get("SPANFT_TEST_SLURM_DIR") or tmp_path_factory.mktemp("slurm"))
    done = subprocess.run(["bash", str(SLURM_SCRIPT), "start", str(folder), str(nodes)], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
        reason = f"a {nodes}-node SLURM could not start: {said}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return done.stdout.strip().split("=", 1)[1], folder


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    conf, folder = slurm_conf(tmp_path_factory)
    yield {"SLURM_CONF": conf}
    subprocess.run(["bash", str(SLURM_SCRIPT), "stop", str(folder)], check=False)


def manifest(project: Path) -> dict[str, tuple[str, str]]:
    lines = (project / ".fanout" / "jobs.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return {stage: (job, log) for stage, _, job, log, *_ in (line.split("\t") for line in lines)}


def checkpoint_written(project: Path, stage: str) -> bool:
    checkpoints = project / ".fanout" / "workspaces" / stage / "data" / "checkpoints"
    return any(checkpoints.glob("*/checkpoint-*/spanft_elapsed.json"))


def kill_job(project: Path, stage: str, executor: str, env: dict) -> None:
    """scancel on SLURM; locally, the job's process and everything it started (what a node failure does)."""
    job = manifest(project)[stage][0]
    if executor == "slurm":
        subprocess.run(["scancel", job], env=env, check=True)
        return
    root = psutil.Process(int(job))
    for process in [*root.children(recursive=True), root]:
        process.kill()


def sent_stages(output: str) -> set[str]:
    return set(re.findall(r"fanout job: dvc repro --single-item (\S+)", output))


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["slurm", "local"])
def test_fanout_joins_to_the_serial_reports_resumes_a_killed_job_and_resends_only_what_changed(
        executor, serial, tmp_path, request):
    extra = request.getfixturevalue("slurm") if executor == "slurm" else {}
    env = env_for(tmp_path / "head", extra)
    project = head_after_serial(serial, tmp_path / "head")
    args = ["--executor", executor, "--jobs", "2", "--cpus", "1", "--mem-gb", "2"]

    # 1. every training stage is a job; one is killed after its first checkpoint: reported, the rest kept
    process = start_fanout(project, args, env)
    deadline = time.monotonic() + 300
    while not checkpoint_written(project, KILLED):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0]
        time.sleep(0.05)
    kill_job(project, KILLED, executor, env)
    output, _ = process.communicate(timeout=300)
    assert process.returncode == 1, output
    jobs = manifest(project)
    assert set(jobs) == TRAINING
    if executor == "slurm":  # one array: <array id>_<index>
        assert len({job.split("_")[0] for job, _ in jobs.values()}) == 1 and all("_" in j for j, _ in jobs.values())
    failed = re.findall(r"FAILED (\S+): .*; log (\S+)", output)
    assert [stage for stage, _ in failed] == [KILLED], output
    assert failed[0][1] == jobs[KILLED][1]
    assert "4/5 done, 0 running, 1 failed" in output
    assert "Running stage 'report'" not in output  # no join after a failure

    # 2. the next call sends only the killed stage, which resumes from its checkpoint; the join runs no run
    code, output = run_fanout(project, args, env)
    assert code == 0, output
    assert "1 training stages to send, 0 up to date, 4 in the cache already" in output
    assert set(manifest(project)) == {KILLED}
    resumed, uninterrupted = (json.loads((p / KILLED_RUN / "metrics.json").read_text()) for p in (project, serial))
    assert (resumed["resumed_from"] or "").startswith("checkpoint-") and uninterrupted["resumed_from"] is None
    for key in ("metrics", "eval_loss", "best_epoch", "history"):
        assert resumed[key] == uninterrupted[key], key
    assert "5 dvc.lock records name outputs this cache lacks" in output  # the records of runs made elsewhere
    assert ran_stages(output) & TRAINING == set(), output
    assert all(f"Stage '{stage}' is cached - skipping run" in output for stage in TRAINING), output
    assert "Running stage 'report'" in output
    assert report_lines(project) == report_lines(serial)

    # 3. an edit to one task's hparams sends that task's runs only, and the step costs (they read every task's)
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    params["hparams"]["mrpc"]["lr"] = 2.0e-3
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    code, output = run_fanout(project, args, env)
    assert code == 2 and "uncommitted changes (params.yaml)" in output, output  # jobs run commits only
    git(project, "commit", "-qam", "mrpc: another learning rate")
    code, output = run_fanout(project, args, env)
    assert code == 0, output
    assert set(manifest(project)) == {"glue_baseline@tiny-mrpc-1", "glue_sf@tiny-mrpc-1", "step_cost"}
    assert "3 training stages to send, 2 up to date" in output
    assert ran_stages(output) & TRAINING == set(), output
    assert "up to date" in dvc(project, "status").stdout


def _set_cluster(project: Path, **values) -> None:
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    params["cluster"].update(values)
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    git(project, "commit", "-qam", f"cluster: {values}")


def _job_logs(project: Path, stage: str) -> str:
    """Every log of every job that ran ``stage`` (all submissions)."""
    text = []
    for manifest in (project / ".fanout" / "jobs").glob("*/jobs.tsv"):
        for line in manifest.read_text(encoding="utf-8").splitlines()[1:]:
            name, _, _, log, *_ = line.split("\t")
            if name == stage:
                for path in (Path(log), Path(log).with_suffix(".out")):
                    text.append(path.read_text(encoding="utf-8", errors="replace") if path.is_file() else "")
    return "\n".join(text)


@pytest.mark.slow
def test_on_slurm_nothing_is_spent_before_the_checks_and_no_finished_run_is_lost(serial, slurm, tmp_path):
    """Two nodes, a site default SBATCH_EXPORT=NONE, a commit error right after a run finished training, then
    --no-join and a plain dvc repro: each run trains once, and the reports equal the serial ones."""
    project = head_after_serial(serial, tmp_path / "head")
    env = env_for(project, {**slurm, "SBATCH_EXPORT": "NONE"})
    args = ["--executor", "slurm", "--jobs", "2", "--cpus", "1", "--mem-gb", "2"]

    # 1. refused in one line before any stage runs, and nothing left in .fanout
    dead = tmp_path / "dead.conf"
    dead.write_text(re.sub(r"(?m)^SlurmctldPort=.*$", "SlurmctldPort=1", Path(slurm["SLURM_CONF"]).read_text()))
    refusals = [
        (env_for(project, {"SLURM_CONF": str(dead)}), [], "SLURM does not answer: squeue --me failed"),
        (env, ["--time-min", "1"], "cluster.time_min 1: 60 s less the signal's lead (120 s, signal_delay_s + 30 s of SLURM's cycle)"),
    ]
    dvc(project, "cache", "dir", "--local", "/sys/fs/spanft-cache")  # a cache nobody can write, not even root
    code, output = run_fanout(project, args, env)
    dvc(project, "config", "--local", "--unset", "cache.dir")
    refusals_seen = [(code, output)]
    for extra_env, extra_args, _ in refusals:
        refusals_seen.append(run_fanout(project, args + extra_args, extra_env, timeout=120))
    said = ["the DVC cache /sys/fs/spanft-cache/files: cannot be written"] + [text for _, _, text in refusals]
    for (code, output), text in zip(refusals_seen, said):
        assert code == 2 and text in output, output
        assert "Running stage" not in output and "jobs through" not in output, output
        assert len([line for line in output.splitlines() if line.startswith("spanft: error:")]) == 1, output
        assert not (project / ".fanout").exists(), output

    # 2. one job at a time; while the killed stage trains, the run-cache stops taking entries: its training
    # finishes, DVC's save fails (the window between "trained" and "saved"), the job fails, the run is kept
    process = start_fanout(project, [*args[:2], "--jobs", "1", *args[4:], "--no-join"], env)
    workspace = project / ".fanout" / "workspaces" / KILLED
    runs = project / ".dvc" / "cache" / "runs"
    deadline = time.monotonic() + 400
    while not checkpoint_written(project, KILLED):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0]
        time.sleep(0.05)
    runs.rename(runs.with_name("runs.aside"))
    runs.write_text("not a folder: DVC cannot write the run's entry\n")
    try:
        output, _ = process.communicate(timeout=400)
    finally:
        runs.unlink()
        runs.with_name("runs.aside").rename(runs)
    assert process.returncode == 1, output
    failed = dict(re.findall(r"FAILED (\S+): (.*); log", output))
    assert KILLED in failed, output
    assert all("the DVC cache" in why for stage, why in failed.items() if stage != KILLED), output  # not started
    assert list((workspace / "data" / "checkpoints").glob("**/spanft_finished.json"))

    # 3. sent again, it saves the finished run instead of training again
    code, output = run_fanout(project, [*args, "--no-join"], env)
    assert code == 0, output
    assert f"{len(failed)} training stages to send" in output and "every run is in the cache" in output, output
    logs = _job_logs(project, KILLED)
    assert logs.count(f"Running stage '{KILLED}'") == 1, logs  # trained once
    assert "finished training before the job was stopped: saving it (dvc commit)" in logs, logs
    assert not list((workspace / "data" / "checkpoints").glob("**/checkpoint-*"))  # cleared once saved
    assert not subprocess.run(["git", "for-each-ref", "refs/spanft"], cwd=project, capture_output=True,
                              text=True).stdout.strip()  # the commit's pin is gone with the last job

    # 4. after --no-join a plain dvc repro restores every run and trains nothing
    done = dvc(project, "repro")
    assert ran_stages(done.stdout) & TRAINING == set(), done.stdout
    assert report_lines(project) == report_lines(serial)


@pytest.mark.slow
def test_on_slurm_a_lost_scheduler_stops_the_watch_in_time_and_a_second_call_watches_again(serial, slurm, tmp_path):
    project = head_after_serial(serial, tmp_path / "head")
    _set_cluster(project, scheduler_patience_s=8)
    shim = tmp_path / "bin" / "squeue"
    shim.parent.mkdir()
    real = shutil.which("squeue")
    lost = tmp_path / "lost"
    shim.write_text(f"#!/bin/sh\n[ -e {lost} ] && {{ echo 'squeue: error: Unable to contact slurm controller' >&2; "
                    f"exit 1; }}\nexec {real} \"$@\"\n")
    shim.chmod(0o755)
    env = env_for(project, {**slurm, "PATH": f"{shim.parent}:{os.environ['PATH']}"})
    args = ["--executor", "slurm", "--jobs", "2", "--cpus", "1", "--mem-gb", "2"]
    process = start_fanout(project, args, env)
    deadline = time.monotonic() + 300
    while not (project / ".fanout" / "jobs.tsv").exists():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0]
        time.sleep(0.05)
    lost.touch()
    started = time.monotonic()
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 2 and time.monotonic() - started < 8 + 30, output
    assert "squeue has failed for 8 s (cluster.scheduler_patience_s): stopped watching; the jobs may still run" in output
    lost.unlink()
    code, output = run_fanout(project, args, env)
    assert code == 0, output
    assert "watching again" in output or "0 training stages to send" in output, output
    assert "jobs through" not in output, output  # nothing sent twice
    for run in ("data/runs/glue/tiny/cola/sf/seed1", "data/runs/glue/tiny/mrpc/baseline/seed1"):
        ours, theirs = (json.loads((p / run / "metrics.json").read_text()) for p in (project, serial))
        assert ours["metrics"] == theirs["metrics"] and ours["history"] == theirs["history"], run
