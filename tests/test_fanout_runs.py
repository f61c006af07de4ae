"""One training per run: claims in the shared cache (two heads, one cache), and a new commit sent while the
jobs of an earlier one run (the unchanged runs watched, the changed ones refused or cancelled)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_fanout import env_for, slurm  # noqa: F401  (a fixture; `serial`: tests/conftest.py)

from spanft.errors import SpanftError


def test_an_earlier_jobs_of_another_commit_are_watched_only_where_the_run_is_the_same(tmp_path, monkeypatch):
    from spanft.cluster import watching as module
    from spanft.cluster.stages import StaleStage
    from spanft.cluster.tracking import Active

    earlier = {name: Active(job, "slurm", tmp_path / "jobs" / "1")
               for name, job in (("glue_sf@tiny-cola-1", "7_0"), ("glue_sf@tiny-mrpc-1", "7_1"))}
    monkeypatch.setattr(module, "still_active", lambda folder: earlier)
    stale = [StaleStage("glue_sf@tiny-cola-1", (), "k-cola-new"), StaleStage("glue_sf@tiny-mrpc-1", (), "k-mrpc")]
    runs = {"7_0": ("old", "snap", "k-cola-old"), "7_1": ("old", "snap", "k-mrpc")}
    monkeypatch.setattr(module, "_runs", lambda entry: runs[entry.job])
    keys = {stage.name: stage.key for stage in stale}
    same = lambda name, key: keys[name] == key  # noqa: E731
    with pytest.raises(module.ChangedStages, match=r"run stages this commit or its files changed: "
                                                   r"glue_sf@tiny-cola-1 \(job 7_0\); .*--cancel-changed") as refused:
        module.still_running(tmp_path, stale, "new", "snap", same)
    assert [name for name, _ in refused.value.changed] == ["glue_sf@tiny-cola-1"]  # mrpc's run is unchanged
    runs["7_0"] = ("old", "snap", "k-cola-new")  # the new commit left cola's run as it was too: both watched
    assert module.still_running(tmp_path, stale, "new", "snap", same) == earlier
    runs["7_0"] = runs["7_1"] = ("", "", "")  # unreadable records: never taken for this call's jobs
    with pytest.raises(module.ChangedStages, match="cola-1 \\(job 7_0\\), glue_sf@tiny-mrpc-1 \\(job 7_1\\)"):
        module.still_running(tmp_path, stale, "new", "snap", lambda name, key: bool(key) and same(name, key))


def test_cancel_changed_cancels_only_the_changed_stages_jobs(tmp_path, monkeypatch):
    from spanft.cluster import sending, watching
    from spanft.cluster.stages import StaleStage
    from spanft.cluster.tracking import Active

    earlier = {name: Active(job, "slurm", tmp_path / "jobs" / "1")
               for name, job in (("glue_sf@tiny-cola-1", "7_0"), ("glue_sf@tiny-mrpc-1", "7_1"))}
    monkeypatch.setattr(watching, "still_active", lambda folder: dict(earlier))
    monkeypatch.setattr(watching, "_runs", lambda entry: ("old", "snap", {"7_0": "k-old", "7_1": "k-mrpc"}[entry.job]))
    cancelled = []
    monkeypatch.setattr(sending.submitit.SlurmJob, "cancel", lambda self, check: cancelled.append(self.job_id))
    monkeypatch.setattr(sending, "gone", lambda jobs: None)
    stale = [StaleStage("glue_sf@tiny-cola-1", (), "k-new"), StaleStage("glue_sf@tiny-mrpc-1", (), "k-mrpc")]
    with pytest.raises(watching.ChangedStages):
        sending.earlier_jobs(tmp_path, stale, "new", "snap", cancel_changed=False)
    assert cancelled == []
    kept = sending.earlier_jobs(tmp_path, stale, "new", "snap", cancel_changed=True)
    assert cancelled == ["7_0"] and list(kept) == ["glue_sf@tiny-mrpc-1"]


def _claim_in_child(cache: str, go: float, out: str) -> None:
    from spanft.cluster import claims

    while time.time() < go:
        time.sleep(0.001)
    found = claims.claim(cache, "glue_sf@tiny-cola-1", "k" * 64, "c", out)
    Path(out).write_text(json.dumps(found.mine), encoding="utf-8")
    time.sleep(1.0)  # a live holder while the others look


def test_one_claim_per_run_however_many_heads_race_for_it(tmp_path):
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    go = time.time() + 3.0
    (tmp_path / "cache").mkdir()
    outs = [tmp_path / f"head{i}.json" for i in range(6)]
    children = [context.Process(target=_claim_in_child, args=(str(tmp_path / "cache"), go, str(out))) for out in outs]
    for child in children:
        child.start()
    for child in children:
        child.join(60)
    assert sorted(json.loads(out.read_text()) for out in outs) == [False] * 5 + [True]


def test_a_live_claim_is_kept_and_a_dead_ones_is_taken_over(tmp_path):
    from spanft.cluster import claims
    from spanft.cluster.tracking import process_start

    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    path = claims.claims_dir(tmp_path)
    path.mkdir()
    record = {"stage": "s", "key": "k1", "host": socket.gethostname(), "pid": holder.pid,
              "started": process_start(str(holder.pid)), "time": time.time(), "job": ""}
    (path / "k1.json").write_text(json.dumps(record), encoding="utf-8")
    try:
        found = claims.claim(tmp_path, "s", "k1", "c", "head")
        assert not found.mine and found.record["pid"] == holder.pid  # still sending: watched, not sent twice
    finally:
        holder.kill()
        holder.wait()
    found = claims.claim(tmp_path, "s", "k1", "c", "head")
    assert found.mine and json.loads((path / "k1.json").read_text())["pid"] == os.getpid()
    claims.release(found)
    assert not (path / "k1.json").exists()


@pytest.mark.parametrize("state, alive", [("PENDING", True), ("RUNNING", True), ("REQUEUED", True),
                                          (None, False), ("CANCELLED", False)])
def test_a_claim_on_a_slurm_job_lives_while_squeue_lists_the_job_active(tmp_path, monkeypatch, state, alive):
    from spanft.cluster import claims

    monkeypatch.setattr(claims, "slurm_states", lambda jobs: {job: state or "COMPLETED" for job in jobs})
    record = {"host": "node7", "pid": 1, "executor": "slurm", "job": "12_3", "time": 0.0}
    assert claims.holder_alive(record) is alive
    monkeypatch.setattr(claims, "slurm_states", lambda jobs: (_ for _ in ()).throw(SpanftError("squeue failed")))
    assert claims.holder_alive(record)  # nobody can tell: keep off
    sending = {"host": "elsewhere", "pid": 1, "job": "", "time": time.time()}
    assert claims.holder_alive(sending) and not claims.holder_alive({**sending, "time": time.time() - 3600})


def test_a_claimed_run_is_watched_until_saved_or_its_holder_is_gone(tmp_path, monkeypatch):
    from spanft.cluster import claims

    key = "ab" + "c" * 62
    monkeypatch.setattr(claims, "slurm_states", lambda jobs: {job: "RUNNING" for job in jobs})
    path = claims.claims_dir(tmp_path)
    path.mkdir()
    record = {"stage": "s", "key": key, "host": "node7", "pid": 1, "executor": "slurm", "job": "12_3",
              "submission": str(tmp_path / "jobs" / "x"), "head": "/other/head", "time": 0.0}
    (path / f"{key}.json").write_text(json.dumps(record), encoding="utf-8")
    entry = claims.watched(claims.read(path / f"{key}.json"), str(tmp_path), "ws", 3)
    assert entry.job.outcome() == ""
    entry.job.cancel(check=False)  # another head's job: never cancelled from here
    assert (path / f"{key}.json").exists()
    monkeypatch.setattr(claims, "slurm_states", lambda jobs: {job: "COMPLETED" for job in jobs})
    assert entry.job.outcome().startswith("claimed by node7's spanft fanout (pid 1, head /other/head); its job "
                                          "12_3 ended without saving the run: run spanft fanout again to take it over")
    (tmp_path / "runs" / key[:2] / key).mkdir(parents=True)
    (tmp_path / "runs" / key[:2] / key / "entry").write_text("run", encoding="utf-8")
    assert entry.job.outcome() == "done"
    claims.release_key(tmp_path, key)  # the job that saved it
    assert not (path / f"{key}.json").exists()


def test_dvc_gc_and_status_leave_the_claims_alone(tmp_path):
    from spanft.cluster import claims

    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    run = lambda *args: subprocess.run(args, cwd=tmp_path, env=env, check=True, capture_output=True)  # noqa: E731
    run("git", "init", "-q")
    run("dvc", "init", "-q")
    (tmp_path / "kept").write_text("kept\n", encoding="utf-8")
    run("dvc", "add", "-q", "kept")
    found = claims.claim(tmp_path / ".dvc" / "cache", "s", "k" * 64, "c", str(tmp_path))
    run("dvc", "gc", "--workspace", "--force")
    run("dvc", "status")
    assert found.path.is_file() and found.mine


def _sent(head: Path) -> list[str]:
    """Every stage any submission of this head sent (one row per job, all submissions)."""
    rows = []
    for listing in sorted((head / ".fanout" / "jobs").glob("*/jobs.tsv")):
        rows += [line.split("\t")[0] for line in listing.read_text(encoding="utf-8").splitlines()[1:]]
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["local", "slurm"])
def test_two_heads_on_one_cache_train_each_run_once_and_a_killed_one_is_taken_over(executor, serial, tmp_path,
                                                                                   request):
    from test_fanout import (
        KILLED,
        TRAINING,
        checkpoint_written,
        head_after_serial,
        kill_job,
        start_fanout,
    )

    extra = request.getfixturevalue("slurm") if executor == "slurm" else {}
    heads = [head_after_serial(serial, tmp_path / name) for name in ("a", "b")]  # one commit, two clones
    shared = heads[0] / ".dvc" / "cache"
    subprocess.run(["dvc", "cache", "dir", "--local", str(shared)], cwd=heads[1], check=True)
    envs = [env_for(head, extra) for head in heads]
    args = ["--executor", executor, "--jobs", "2", "--cpus", "1", "--mem-gb", "2", "--no-join"]

    # 1. sent at once: one head sends each run, the other watches it; one job is killed mid-run
    processes = [start_fanout(head, args, env) for head, env in zip(heads, envs)]
    deadline = time.monotonic() + 400
    while not any(checkpoint_written(head, KILLED) for head in heads):
        assert all(p.poll() is None for p in processes) and time.monotonic() < deadline, \
            [p.communicate()[0] for p in processes]
        time.sleep(0.05)
    sender = next(index for index, head in enumerate(heads) if checkpoint_written(head, KILLED))
    kill_job(heads[sender], KILLED, executor, envs[sender])
    outputs = [p.communicate(timeout=400)[0] for p in processes]
    assert [p.returncode for p in processes] == [1, 1], outputs
    assert sorted(_sent(heads[0]) + _sent(heads[1])) == sorted(TRAINING), outputs  # each run sent once
    assert "claimed by another head sharing this cache" in "".join(outputs), outputs
    watcher = 1 - sender
    if KILLED not in _sent(heads[watcher]):  # the watcher saw the sender's job end without the run
        assert re.search(rf"FAILED {re.escape(KILLED)}: claimed by .*ended without saving the run: run spanft "
                         rf"fanout again to take it over", outputs[watcher]), outputs[watcher]

    # 2. the dead claim is taken over by the other head, which trains that run (and only it)
    again = subprocess.run(["spanft", "fanout", *args], cwd=heads[watcher], env=envs[watcher], capture_output=True,
                           text=True, timeout=400)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 training stages to send" in again.stdout + again.stderr
    assert sorted(_sent(heads[0]) + _sent(heads[1])) == sorted([*TRAINING, KILLED])
    assert not list((shared / "spanft-claims").glob("*.json"))  # every claim released once its run was saved


def test_the_refusal_keeps_every_changed_job_and_the_way_out_in_its_one_line(tmp_path):
    from spanft.cluster.tracking import Active
    from spanft.cluster.watching import ChangedStages
    from spanft.errors import MAX_LINE, one_line

    changed = [(name, Active(job, "slurm", tmp_path)) for name, job in (
        ("glue_baseline@tiny-mrpc-1", "12345_3"), ("glue_sf@tiny-mrpc-1", "12345_4"), ("step_cost", "12345_5"))]
    line = one_line(ChangedStages(changed).args[0], MAX_LINE - len("spanft: error: "))
    assert all(f"{name} (job {entry.job})" in line for name, entry in changed) and "--cancel-changed" in line, line
