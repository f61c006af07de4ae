"""A job's start-up, learned from the jobs that ran (spanft.cluster.startups), and the time-limit check that counts it:
the smallest limit the pre-flight names leaves one checkpoint interval of training after that start-up."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from spanft.cluster import startups
from spanft.cluster.preflight import check_time_limit, time_budget
from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings
from spanft.train.saves import CheckpointTriggers


def _line(executor: str, stage: str, seconds: int, kind: str = "trained") -> str:
    return "\t".join(["1700000000", executor, stage, "7_0", "n1", str(seconds), kind]) + "\n"


def test_the_slowest_recent_start_up_of_the_executor_is_learned(tmp_path):
    path = tmp_path / startups.RECORD
    assert startups.learned(path, "slurm") is None  # no job ran here yet
    old = [_line("slurm", "old", 900)]  # pushed out of the recent window by the ones after it
    recent = [_line("slurm", f"s{i}", 40 + i) for i in range(startups.RECENT - 1)] + [_line("slurm", "slow", 95)]
    path.write_text("".join([*old, *recent, _line("local", "l", 500), "garbage\n", "1\tslurm\tx\t1\tn\tNaN\ttrained\n"]))
    found = startups.learned(path, "slurm")
    assert (found.seconds, found.stage, found.records, found.cut) == (95, "slow", startups.RECENT, False)
    assert startups.learned(path, "local").seconds == 500


def test_records_are_appended_as_lines_the_learning_reads_back(tmp_path):
    path = tmp_path / "sub" / startups.RECORD
    startups.record(path, "slurm", "glue_sf@tiny-cola-1", "12_1", 61.4, cut=False)
    startups.record(path, "slurm", "glue_sf@tiny-cola-1", "12_1", 130.0, cut=True)
    assert len(path.read_text().splitlines()) == 2
    found = startups.learned(path, "slurm")
    assert (found.seconds, found.cut) == (130, True) and found.words().startswith("or more: the slowest of the last 2")


@pytest.mark.parametrize("recorded, configured", [(None, 30), (200, 30), (20, 90)])
def test_the_smallest_limit_the_check_names_leaves_one_checkpoint_interval_after_the_real_start_up(
        tmp_path, recorded, configured):
    if recorded is not None:
        (tmp_path / startups.RECORD).write_text(_line("slurm", "glue_sf@tiny-cola-1", recorded))
    startup = max(recorded or 0, configured)  # the oracle: the larger of the guess and what the jobs showed
    settings = ClusterSettings(time_min=1, signal_delay_s=10, startup_s=configured, checkpoint_every_s=40)
    with pytest.raises(SpanftError, match=rf"the start-up \(~{startup} s, .*--time-min (\d+) leaves one") as refused:
        check_time_limit(settings, "slurm", tmp_path)
    minimum = int(refused.value.args[0].split("--time-min ")[1].split()[0])
    fits = ClusterSettings(time_min=minimum, signal_delay_s=10, startup_s=configured, checkpoint_every_s=40)
    budget = check_time_limit(fits, "slurm", tmp_path)
    assert budget.left_s == minimum * 60 - (10 + 30) - startup >= 40 and budget.minimum_min == minimum
    below = ClusterSettings(time_min=minimum - 1, signal_delay_s=10, startup_s=configured, checkpoint_every_s=40)
    assert minimum == 1 or time_budget(below, "slurm", tmp_path).left_s < 40  # it is the smallest


def test_the_check_without_a_folder_counts_the_configured_start_up(tmp_path):
    settings = ClusterSettings(time_min=2, signal_delay_s=10, startup_s=30, checkpoint_every_s=40)
    assert check_time_limit(settings, "slurm").startup_words == "cluster.startup_s"


def _signal_file(path: Path, began: float | None) -> None:
    path.write_text(json.dumps({"pid": 1, "saves": 0, **({"began": began} if began is not None else {})}))


def test_a_watch_records_the_time_until_the_training_began(tmp_path, monkeypatch):
    monkeypatch.setattr(startups, "POLL_S", 0.05)
    told, record = tmp_path / "signal.json", tmp_path / startups.RECORD
    started = time.time() - 50
    _signal_file(told, started - 600)  # an earlier allocation's training: not this one's start
    watch = startups.Watch(told, record, "slurm", "glue_sf@x", "3_0", started).start()
    time.sleep(0.3)
    assert not record.exists()
    _signal_file(told, started + 42.0)
    deadline = time.monotonic() + 10
    while not record.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    watch.signalled()  # later: the start-up is recorded once
    watch.stop()
    assert [line.split("\t")[5:] for line in record.read_text().splitlines()] == [["42", "trained"]]


def test_a_signal_before_the_training_began_records_the_allocation_as_a_lower_bound(tmp_path):
    told, record = tmp_path / "signal.json", tmp_path / startups.RECORD
    watch = startups.Watch(told, record, "slurm", "glue_sf@x", "3_0", time.time() - 77)
    watch.signalled()
    fields = record.read_text().split("\t")
    assert fields[6].strip() == "cut" and 77 <= int(fields[5]) <= 80


def test_the_training_says_when_it_began(tmp_path):
    told = tmp_path / "signal.json"
    triggers = CheckpointTriggers(0.0, signal.SIGUSR2, told)
    before = time.time()
    state = SimpleNamespace(is_world_process_zero=True)
    triggers.on_train_begin(None, state, None)
    try:
        said = json.loads(told.read_text())
        assert before <= startups.training_began(told) <= time.time() and said["saves"] == 0
    finally:
        triggers.on_train_end(None, state, None)
    assert not told.exists()


def test_the_jobs_log_says_where_the_allocation_stood_at_the_signal(tmp_path):
    told = tmp_path / "signal.json"
    watch = startups.Watch(told, tmp_path / startups.RECORD, "slurm", "glue_sf@x", "3_0", time.time() - 100)
    assert watch.timeline() == "100 s into the allocation, its training not begun"
    _signal_file(told, watch.started + 61)
    assert watch.timeline() == "100 s into the allocation, its training began at 61 s"
