"""Pre-flight without false answers (spanft.cluster.partition): a drained or down node is no resource mismatch,
a time limit above the partition's MaxTime is refused before anything is sent. From recorded sinfo output,
and on the real one-node SLURM (scripts/slurm-one-node.sh)."""

from __future__ import annotations

import logging
import os
import subprocess

import pytest
from test_fanout import SLURM_SCRIPT, slurm_conf

from spanft.cluster import partition
from spanft.cluster.preflight import check_resources
from spanft.errors import SpanftError
from spanft.params.cluster import ClusterSettings

REFUSED = "allocation failure: Requested node configuration is not available"
NODES = ("n1|8|31000|gpu:a100:2(S:0-1)|drained|gpu\n"  # sinfo -N: one line per node and partition
         "n1|8|31000|gpu:a100:2(S:0-1)|drained|debug*\n"
         "n2|4|15000|(null)|idle|debug*\n"
         "n3|64|500000|(null)|down*|big\n")
PARTITIONS = "debug*|1:00:00\ngpu|2-00:00:00\nbig|infinite\n"


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """sinfo answering what a real one said (the recorded lines above); sbatch --test-only refusing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "nodes").write_text(NODES)
    (tmp_path / "partitions").write_text(PARTITIONS)
    (bin_dir / "sinfo").write_text(f"#!/bin/sh\ncase \"$*\" in *--Node*) cat {tmp_path}/nodes;; "
                                   f"*) cat {tmp_path}/partitions;; esac\n")
    (bin_dir / "sbatch").write_text(f"#!/bin/sh\necho '{REFUSED}' >&2\nexit 1\n")
    for tool in ("sinfo", "sbatch"):
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return tmp_path


def test_nodes_in_any_state_are_read_with_their_sizes_and_partitions(fake_slurm):
    found = {node.name: node for node in partition.nodes()}
    assert (found["n1"].cpus, found["n1"].mem_mb, found["n1"].gpus, found["n1"].usable) == (8, 31000, 2, False)
    assert set(found["n1"].partitions) == {"gpu", "debug", ""} and found["n2"].usable
    assert not found["n3"].usable and found["n3"].partitions == ("big",)
    assert partition.partitions() == {"debug": 3600, "": 3600, "gpu": 172800, "big": None}


def test_a_drained_node_that_fits_is_no_mismatch_the_jobs_queue(fake_slurm, caplog):
    with caplog.at_level(logging.INFO, logger="spanft"):
        check_resources(ClusterSettings(partition="gpu", gpus_per_job=2, cpus_per_job=8, mem_gb=16, time_min=60))
    assert "the nodes that fit are n1 drained; the jobs queue until they return" in caplog.text
    check_resources(ClusterSettings(partition="big", cpus_per_job=32, mem_gb=100, time_min=600))  # n3, down


def test_a_request_no_node_offers_in_any_state_is_refused_with_the_sizes(fake_slurm):
    with pytest.raises(SpanftError, match=r"SLURM would refuse the jobs \(allocation failure: .*\): 16 CPUs, .*"
                                          r"partition \(default\); the partition's nodes offer at most 8 CPUs, "
                                          r"30 GB, 2 GPUs; set --partition"):
        check_resources(ClusterSettings(cpus_per_job=16, mem_gb=4, time_min=30))
    with pytest.raises(SpanftError, match="8 CPUs, 16 GB, 0 GPUs"):  # n2 usable is too small; n1 is big enough
        check_resources(ClusterSettings(cpus_per_job=8, mem_gb=16, time_min=30, partition="nosuch"))


@pytest.mark.parametrize("where, minutes, refused", [("", 60, False), ("", 61, True), ("gpu", 2880, False),
                                                      ("gpu", 2881, True), ("big", 100000, False)])
def test_a_time_limit_above_the_partitions_maxtime_is_refused_before_anything_is_sent(fake_slurm, where, minutes,
                                                                                       refused):
    settings = ClusterSettings(partition=where, time_min=minutes)
    if refused:
        with pytest.raises(SpanftError, match=rf"cluster.time_min {minutes}: partition .*'s MaxTime is "
                                              rf"\d+ min; SLURM would hold the jobs pending \(PartitionTimeLimit\)"):
            partition.check_max_time(settings)
    else:
        partition.check_max_time(settings)


def test_sinfo_that_fails_decides_nothing(tmp_path, monkeypatch):
    (tmp_path / "sinfo").write_text("#!/bin/sh\necho 'slurm_load_partitions: Unable to contact controller' >&2\n"
                                    "exit 1\n")
    (tmp_path / "sinfo").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert partition.nodes() is None and partition.held_nodes_that_fit(ClusterSettings()) is None
    partition.check_max_time(ClusterSettings(time_min=10**6))


@pytest.fixture(scope="module")
def one_node(tmp_path_factory):
    conf, folder = slurm_conf(tmp_path_factory, nodes=1)
    yield {**os.environ, "SLURM_CONF": conf}
    subprocess.run(["bash", str(SLURM_SCRIPT), "stop", str(folder)], check=False)


def _scontrol(env: dict, *args: str) -> None:
    subprocess.run(["scontrol", "update", *args], env=env, check=True)


def test_on_real_slurm_a_drained_node_queues_and_maxtime_is_refused(one_node, monkeypatch, caplog):
    monkeypatch.setenv("SLURM_CONF", one_node["SLURM_CONF"])
    node = partition.nodes()[0]
    fits = ClusterSettings(cpus_per_job=1, mem_gb=1, time_min=5)
    check_resources(fits)
    _scontrol(one_node, f"NodeName={node.name}", "State=DRAIN", "Reason=spanft-test")
    try:
        with caplog.at_level(logging.INFO, logger="spanft"):
            check_resources(fits)  # sbatch --test-only refuses; a plain sbatch would queue
        assert f"the nodes that fit are {node.name} drained" in caplog.text
        with pytest.raises(SpanftError, match=r"SLURM would refuse the jobs .*nodes offer at most"):
            check_resources(ClusterSettings(cpus_per_job=node.cpus + 1, mem_gb=1, time_min=5))
    finally:
        _scontrol(one_node, f"NodeName={node.name}", "State=RESUME")
    _scontrol(one_node, "PartitionName=debug", "MaxTime=2")
    try:
        with pytest.raises(SpanftError, match=r"cluster.time_min 5: partition \(the default\)'s MaxTime is 2 min"):
            check_resources(fits)
    finally:
        _scontrol(one_node, "PartitionName=debug", "MaxTime=INFINITE")
