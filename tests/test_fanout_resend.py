"""A new commit sent while the jobs of the last one wait, on a real one-node SLURM (issue 50, item 4).

The jobs of a first `spanft fanout` wait in the queue (the node is drained for maintenance: SLURM keeps them
pending) when that command's session ends (SIGHUP: the jobs stay). A new commit changes one task's
hyper-parameters, which changes that task's runs and the step costs (they read every task's); the other task's
runs are the same runs. Sent again, the fan-out refuses, naming the changed stages' jobs only; with
`--cancel-changed` it cancels exactly those, sends them anew, and watches the jobs of the unchanged runs again.
When the node returns, every stage trains once, and the join restores every run: the head is up to date.
"""

from __future__ import annotations

import getpass
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from test_fanout import (
    SLURM_SCRIPT,
    TRAINING,
    committed_project,
    env_for,
    git,
    manifest,
    run_fanout,
    slurm_conf,
    start_fanout,
)
from test_graph import dvc, ran_stages

pytestmark = pytest.mark.slow  # in the end-to-end group: tests/conftest.py E2E

CHANGED = {"glue_baseline@tiny-mrpc-1", "glue_sf@tiny-mrpc-1", "step_cost"}  # what an mrpc hparams edit changes
UNCHANGED = TRAINING - CHANGED
ARGS = ["--executor", "slurm", "--jobs", "2", "--cpus", "1", "--mem-gb", "2"]


def _node(env: dict, state: str) -> None:
    node = subprocess.run(["sinfo", "--noheader", "--format=%N"], env=env, capture_output=True, text=True,
                          check=True).stdout.split()[0]
    subprocess.run(["scontrol", "update", f"NodeName={node}", f"State={state}",
                    *(["Reason=maintenance"] if state == "DRAIN" else [])], env=env, check=True)


def _queued(env: dict) -> dict[str, str]:
    listed = subprocess.run(["squeue", "--noheader", "--array", "--format=%i %T"], env=env, capture_output=True,
                            text=True, check=True).stdout
    return dict(line.split() for line in listed.splitlines() if line.strip())


def _wait_for_new_manifest(project: Path, process: subprocess.Popen, before: str, seconds: float) -> None:
    path = project / ".fanout" / "jobs.tsv"
    deadline = time.monotonic() + seconds
    while not path.exists() or path.read_text(encoding="utf-8") == before:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0]
        time.sleep(0.2)


def trainings(project: Path) -> dict[str, int]:
    """How many times each stage trained, over every job of every submission (each log read once)."""
    logs = {Path(line.split("\t")[3]) for path in (project / ".fanout" / "jobs").glob("*/jobs.tsv")
            for line in path.read_text(encoding="utf-8").splitlines()[1:]}
    text = "\n".join(log.with_suffix(".out").read_text(encoding="utf-8", errors="replace")
                     for log in logs if log.with_suffix(".out").is_file())
    return {stage: text.count(f"Running stage '{stage}'") for stage in TRAINING}


def test_a_new_commit_cancels_and_resends_only_the_changed_stages_and_watches_the_rest(tmp_path_factory, tmp_path):
    conf, folder = slurm_conf(tmp_path_factory, nodes=1)
    project = committed_project(tmp_path / "head")
    env = env_for(project, {"SLURM_CONF": conf})
    try:
        # 1. sent while the node is drained: every job waits; the sending session ends, the jobs stay queued
        _node(env, "DRAIN")
        first_call = start_fanout(project, [*ARGS, "--no-join"], env)
        _wait_for_new_manifest(project, first_call, "", 900)
        first_call.send_signal(signal.SIGHUP)
        first_call.communicate(timeout=60)
        first = manifest(project)
        assert set(first) == TRAINING
        assert {_queued(env).get(job) for job, _ in first.values()} == {"PENDING"}

        # 2. a commit that changes mrpc's runs (and the step costs): refused, naming those jobs only
        params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
        params["hparams"]["mrpc"]["lr"] = 2.0e-3
        (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
        git(project, "commit", "-qam", "mrpc: another learning rate")
        code, output = run_fanout(project, ARGS, env)
        assert code == 2, output
        refusal = [line for line in output.splitlines() if line.startswith("spanft: error:")]
        assert len(refusal) == 1 and "run stages this commit or its files changed" in refusal[0], output
        named = set(re.findall(r"(\S+@\S+|step_cost) \(job (\S+)\)", refusal[0]))
        assert named == {(stage, first[stage][0]) for stage in CHANGED}, refusal
        assert {_queued(env).get(job) for job, _ in first.values()} == {"PENDING"}  # nothing cancelled

        # 3. --cancel-changed: those jobs cancelled and sent anew, the others watched; then the node returns
        before = (project / ".fanout" / "jobs.tsv").read_text(encoding="utf-8")
        second_call = start_fanout(project, [*ARGS, "--cancel-changed"], env)
        _wait_for_new_manifest(project, second_call, before, 600)
        second = manifest(project)
        assert {stage: second[stage][0] for stage in UNCHANGED} == {stage: first[stage][0] for stage in UNCHANGED}
        assert all(second[stage][0] != first[stage][0] for stage in CHANGED), (first, second)
        assert not any(first[stage][0] in _queued(env) for stage in CHANGED)  # cancelled: gone from the queue
        _node(env, "RESUME")
        output, _ = second_call.communicate(timeout=1200)
        assert second_call.returncode == 0, output
        cancelled = set(re.findall(r"cancelling job (\S+) of an earlier call: this commit changed (\S+)", output))
        assert cancelled == {(first[stage][0], stage) for stage in CHANGED}, output
        assert f"watching again {len(UNCHANGED)} jobs of an earlier call" in output, output
        assert f"{len(CHANGED)} jobs through slurm" in output, output

        # 4. each stage trained once, by its one job; the join trained nothing, and the head is up to date
        assert trainings(project) == {stage: 1 for stage in TRAINING}
        assert ran_stages(output) & TRAINING == set(), output
        assert "up to date" in dvc(project, "status").stdout
    finally:
        subprocess.run(["scancel", f"--user={getpass.getuser()}"], env=env, check=False)  # this test's cluster
        subprocess.run(["bash", str(SLURM_SCRIPT), "stop", str(folder)], check=False)
