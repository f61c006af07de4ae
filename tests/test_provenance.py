"""Provenance records: content digests computed by hand, hub commits from the hub or the hub cache."""

from __future__ import annotations

import hashlib

import pytest

import spanft.data.provenance as provenance
from spanft.data.provenance import (
    directory_digest,
    hub_commit,
    paths_digest,
    read_provenance,
    write_provenance,
)
from spanft.errors import SpanftError


def test_directory_digest_is_sha256_of_names_and_bytes(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "b.txt").write_bytes(b"second")
    (tmp_path / "sub" / "a.bin").write_bytes(b"\x00first")
    (tmp_path / "provenance.json").write_text("{}")  # the record itself is not part of the content
    by_hand = hashlib.sha256(b"b.txt\0second\0sub/a.bin\0\x00first\0").hexdigest()
    assert directory_digest(tmp_path) == by_hand
    (tmp_path / "b.txt").write_bytes(b"changed")
    assert directory_digest(tmp_path) != by_hand


def test_paths_digest_names_files_relative_to_root(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_bytes(b"1")
    assert paths_digest([tmp_path / "x" / "f"], tmp_path) == hashlib.sha256(b"x/f\x001\0").hexdigest()
    assert paths_digest([tmp_path / "x" / "f"]) == hashlib.sha256(b"f\x001\0").hexdigest()


def test_commit_from_the_hub_then_from_the_cache(tmp_path, monkeypatch):
    import huggingface_hub
    from huggingface_hub import constants

    class Info:
        sha = "a" * 40

    class Api:
        def dataset_info(self, repo_id, revision=None):
            return Info()

    from spanft.data import hub

    monkeypatch.setattr(hub, "_reachable", lambda endpoint: True)  # the hub answers (spanft.data.hub's probe)
    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    assert hub_commit("nyu-mll/glue") == "a" * 40
    assert hub_commit("nyu-mll/glue", "b" * 40) == "b" * 40  # a commit is its own resolution

    class Offline:
        def dataset_info(self, repo_id, revision=None):
            raise ConnectionError("offline")

    monkeypatch.setattr(huggingface_hub, "HfApi", Offline)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    ref = tmp_path / "datasets--eriktks--conll2003" / "refs" / "refs" / "convert" / "parquet"
    ref.parent.mkdir(parents=True)
    ref.write_text("c" * 40)
    assert hub_commit("eriktks/conll2003", "refs/convert/parquet") == "c" * 40
    assert hub_commit("eriktks/conll2003") is None  # main was never downloaded


def test_record_round_trip_and_bad_record(tmp_path):
    record = provenance.local_record("local", tmp_path, "d" * 64, files={"train": "CoLA/train.tsv"})
    write_provenance(tmp_path, record)
    assert read_provenance(tmp_path) == record
    (tmp_path / "provenance.json").write_text("[1]")
    with pytest.raises(SpanftError, match="provenance.json: not a provenance record"):
        read_provenance(tmp_path)
    assert read_provenance(tmp_path / "none") is None


def test_local_prepared_data_records_its_files_digest(tmp_path):
    from spanft.data.prepare import prepare_task

    raw = tmp_path / "raw" / "CoLA"
    raw.mkdir(parents=True)
    (raw / "train.tsv").write_text("s1\t1\t\tA wug sang .\n", encoding="utf-8")
    (raw / "dev.tsv").write_text("s2\t0\t*\tSang wug .\n", encoding="utf-8")
    record = prepare_task("cola", tmp_path / "out", "local", raw)  # the task's folder, as params tasks.cola names it
    by_hand = hashlib.sha256(b"dev.tsv\0s2\t0\t*\tSang wug .\n\0train.tsv\0s1\t1\t\tA wug sang .\n\0")
    assert record == {"source": "local", "id_or_path": str(raw.resolve()),
                      "digest": by_hand.hexdigest(),
                      "files": {"train": "train.tsv", "validation": "dev.tsv"},
                      "splits": ["train", "validation"], "absent_splits": ["test"]}
