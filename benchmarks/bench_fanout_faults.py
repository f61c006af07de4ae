"""`spanft fanout` under its fault cases (issue 50): per case, the runs trained more than once (goal 0) and the time
from the send to the first checkpoint.

    python benchmarks/bench_fanout_faults.py                        # the local cases
    python benchmarks/bench_fanout_faults.py --cases plain killed   # some of them
    python benchmarks/bench_fanout_faults.py --slurm                # and the SLURM cases (a one-node test SLURM
                                                                    # started with scripts/slurm-one-node.sh)

Every case runs the tests' small project (tests/test_fanout.py: two GLUE tasks, one seed, four fine-tuning runs
and the step costs) in a copy of one head whose upstream stages ran once, so that the cases time the fan-out,
not the upstream stages. The cases:

- ``plain``: one fan-out, nothing goes wrong.
- ``killed``: a job killed after its first checkpoint (a node lost), then a second fan-out (it resumes).
- ``no-join``: ``--no-join``, then a plain ``dvc repro`` (it restores every run).
- ``two-heads``: two clones of one commit sharing one DVC cache, sent at once (claims: each run once).
- ``resend`` (SLURM): jobs queued on a drained node when the sending session ends; a commit that changes one
  task's runs is sent with ``--cancel-changed``; the node returns.

A run *trained more than once* is one whose training started from its first step in more than one allocation
(a resumed allocation, or a finished run saved by ``dvc commit``, is no second training), counted over every
job log of every head of the case. The time to the first checkpoint is from the case's first ``spanft fanout``
to the first ``checkpoint-*`` that any job's workspace holds (polled every 0.2 s).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_fanout import (  # noqa: E402  (the tests' small project and helpers)
    SLURM_SCRIPT,
    TRAINING,
    checkpoint_written,
    committed_project,
    env_for,
    git,
    kill_job,
    run_fanout,
    start_fanout,
)
from test_graph import dvc  # noqa: E402

from spanft.cluster.stages import finetune_upstream  # noqa: E402

LOCAL = ["--executor", "local", "--jobs", "2"]
SLURM = ["--executor", "slurm", "--jobs", "2", "--cpus", "1", "--mem-gb", "2"]


class FirstCheckpoint:
    """Polls the heads' job workspaces for the first checkpoint (checkpoints are cleared once a run is saved)."""

    def __init__(self, heads: list[Path]):
        self.heads, self.started, self.seen = heads, time.time(), None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while self.seen is None and not self._stop.wait(0.2):
            for head in self.heads:
                if any((head / ".fanout" / "workspaces").glob("*/data/checkpoints/**/checkpoint-*")):
                    self.seen = time.time() - self.started
                    break

    def stop(self) -> float | None:
        self._stop.set()
        self._thread.join()
        return self.seen


def fresh_trainings(heads: list[Path]) -> dict[str, int]:
    """Per stage, the allocations whose training started at its first step, over every job log of ``heads``."""
    logs = {Path(line.split("\t")[3]) for head in heads for path in (head / ".fanout" / "jobs").glob("*/jobs.tsv")
            for line in path.read_text(encoding="utf-8").splitlines()[1:]}
    counts = dict.fromkeys(TRAINING, 0)
    for log in logs:
        out = log.with_suffix(".out").read_text(encoding="utf-8", errors="replace") if log.with_suffix(".out").is_file() else ""
        err = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        for stage in TRAINING:
            starts = out.count(f"Running stage '{stage}'")
            if starts:
                counts[stage] += max(0, starts - len(re.findall(r"resuming from \S*checkpoint-", err)))
    return counts


def base_head(work: Path) -> Path:
    """The small project, committed, with its upstream stages run once (every case copies it)."""
    head = committed_project(work / "base")
    dvc(head, "repro", *finetune_upstream(head))
    return head


def copy_head(base: Path, path: Path) -> Path:
    shutil.copytree(base, path, symlinks=True)
    return path


def case_plain(base: Path, work: Path, args: list[str], env: dict) -> list[Path]:
    head = copy_head(base, work / "head")
    code, output = run_fanout(head, args, env_for(head, env), timeout=1800)
    assert code == 0, output[-2000:]
    return [head]


def case_killed(base: Path, work: Path, args: list[str], env: dict) -> list[Path]:
    head = copy_head(base, work / "head")
    stage = "glue_sf@tiny-cola-1"
    process = start_fanout(head, args, env_for(head, env))
    deadline = time.monotonic() + 900
    while not checkpoint_written(head, stage):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0][-2000:]
        time.sleep(0.05)
    kill_job(head, stage, args[1], env_for(head, env))
    process.communicate(timeout=900)
    code, output = run_fanout(head, args, env_for(head, env), timeout=1800)
    assert code == 0, output[-2000:]
    return [head]


def case_no_join(base: Path, work: Path, args: list[str], env: dict) -> list[Path]:
    head = copy_head(base, work / "head")
    code, output = run_fanout(head, [*args, "--no-join"], env_for(head, env), timeout=1800)
    assert code == 0, output[-2000:]
    done = dvc(head, "repro")
    retrained = [stage for stage in TRAINING if f"Running stage '{stage}'" in done.stdout]
    print(f"    dvc repro after --no-join trained: {retrained or 'nothing'}")
    return [head]


def case_two_heads(base: Path, work: Path, args: list[str], env: dict) -> list[Path]:
    first, second = copy_head(base, work / "first"), copy_head(base, work / "second")
    dvc(second, "cache", "dir", "--local", str(first / ".dvc" / "cache"))
    processes = [start_fanout(head, args, env_for(head, env)) for head in (first, second)]
    for process in processes:
        output, _ = process.communicate(timeout=1800)
        assert process.returncode == 0, output[-2000:]
    return [first, second]


def case_resend(base: Path, work: Path, args: list[str], env: dict) -> list[Path]:
    head = copy_head(base, work / "head")
    env = env_for(head, env)
    node = subprocess.run(["sinfo", "--noheader", "--format=%N"], env=env, capture_output=True, text=True,
                          check=True).stdout.split()[0]
    subprocess.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=bench"], env=env, check=True)
    try:
        process = start_fanout(head, [*args, "--no-join"], env)
        while not (head / ".fanout" / "jobs.tsv").exists():
            assert process.poll() is None, process.communicate()[0][-2000:]
            time.sleep(0.2)
        process.send_signal(signal.SIGHUP)
        process.communicate(timeout=60)
        params = yaml.safe_load((head / "params.yaml").read_text(encoding="utf-8"))
        params["hparams"]["mrpc"]["lr"] = 2.0e-3
        (head / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
        git(head, "commit", "-qam", "mrpc: another learning rate")
        before = (head / ".fanout" / "jobs.tsv").read_text(encoding="utf-8")
        process = start_fanout(head, [*args, "--cancel-changed"], env)
        while (head / ".fanout" / "jobs.tsv").read_text(encoding="utf-8") == before:  # cancelled and sent
            assert process.poll() is None, process.communicate()[0][-2000:]
            time.sleep(0.2)
    finally:
        subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], env=env, check=False)
    output, _ = process.communicate(timeout=1800)
    assert process.returncode == 0, output[-2000:]
    return [head]


CASES = {"plain": (case_plain, False), "killed": (case_killed, False), "no-join": (case_no_join, False),
         "two-heads": (case_two_heads, False), "resend": (case_resend, True)}


def run_case(name: str, base: Path, work: Path, executor: str, env: dict) -> None:
    call, slurm_only = CASES[name]
    if slurm_only and executor != "slurm":
        return
    folder = work / f"{name}-{executor}"
    folder.mkdir(parents=True)
    watcher = FirstCheckpoint([folder / "head", folder / "first", folder / "second"])
    started = time.perf_counter()
    heads = call(base, folder, SLURM if executor == "slurm" else LOCAL, env)
    wall, first = time.perf_counter() - started, watcher.stop()
    counts = fresh_trainings(heads)
    twice = {stage: count for stage, count in counts.items() if count > 1}
    never = [stage for stage, count in counts.items() if count == 0]
    first_words = f"{first:.1f} s" if first is not None else "none seen"
    print(f"{name} ({executor}): runs trained more than once: {len(twice)} {twice or ''}; first checkpoint "
          f"{first_words} after the send; wall {wall:.1f} s" + (f"; no training logged for {never}" if never else ""),
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=sorted(CASES))
    parser.add_argument("--slurm", action="store_true", help="also on a one-node test SLURM (started and stopped here)")
    parser.add_argument("--work", default=None, help="folder for the heads (default: a temporary one, kept)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-fanout-faults-"))
    started = time.perf_counter()
    base = base_head(work)
    print(f"the small project's upstream stages, once: {time.perf_counter() - started:.1f} s", flush=True)
    for name in args.cases:
        run_case(name, base, work, "local", {})
    if args.slurm:
        cluster = work / "slurm"
        done = subprocess.run(["bash", str(SLURM_SCRIPT), "start", str(cluster), "1"], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"the test SLURM did not start: {done.stderr.strip().splitlines()[-1:]}")
        env = {"SLURM_CONF": done.stdout.strip().split("=", 1)[1]}
        try:
            for name in args.cases:
                run_case(name, base, work, "slurm", env)
        finally:
            subprocess.run(["bash", str(SLURM_SCRIPT), "stop", str(cluster)], check=False)
    print(f"heads and logs: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
