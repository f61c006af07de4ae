"""One training per run: claims in the shared cache (two heads, one cache), and a new commit sent while the
jobs of an earlier one run (the unchanged runs watched, the changed ones refused or cancelled)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


