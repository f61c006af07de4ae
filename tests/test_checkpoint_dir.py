"""`--checkpoint-dir` never removes what the run did not make: the user's files, or a directory made before."""

from __future__ import annotations

from pathlib import Path

import pytest

from spanft.data.registry import get_task
from spanft.errors import SpanftError
from spanft.train.checkpoints import (
    RUN_MARKER,
    check_checkpoint_dir,
    clear_checkpoints,
    prepare_checkpoint_dir,
)
from spanft.train.options import FinetuneOptions


@pytest.fixture()
def options(tmp_path) -> FinetuneOptions:
    data = tmp_path / "data"
    data.mkdir()
    for split in get_task("sst2").all_splits:
        (data / f"{split}.parquet").write_bytes(split.encode())  # only hashed here
    return FinetuneOptions(task="sst2", backbone="unused", variant="baseline", data=str(data),
                           out=str(tmp_path / "run"), checkpoint_dir=str(tmp_path / "ckpt"))


def _fake_checkpoint(directory: Path, step: int) -> Path:
    checkpoint = directory / f"checkpoint-{step}"
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    return checkpoint


def test_a_users_directory_is_refused_and_left_alone(options, tmp_path):
    mine = tmp_path / "ckpt"
    _fake_checkpoint(mine, 500)  # checkpoints of the user's own training, no run marker
    with pytest.raises(SpanftError, match=f"holds files that spanft finetune did not write \\(no {RUN_MARKER}\\)"):
        check_checkpoint_dir(mine)
    with pytest.raises(SpanftError, match="did not write"):
        prepare_checkpoint_dir(options, get_task("sst2"))
    clear_checkpoints(mine)
    assert (mine / "checkpoint-500" / "model.safetensors").read_bytes() == b"weights"


def test_a_directory_made_before_the_run_is_kept_and_one_made_by_it_removed(options, tmp_path):
    (tmp_path / "ckpt").mkdir()  # empty, made by the user
    assert prepare_checkpoint_dir(options, get_task("sst2")) is None
    _fake_checkpoint(tmp_path / "ckpt", 3)
    clear_checkpoints(tmp_path / "ckpt")
    assert (tmp_path / "ckpt").is_dir() and list((tmp_path / "ckpt").iterdir()) == []

    (tmp_path / "ckpt").rmdir()  # now the run makes it: then it may remove it
    prepare_checkpoint_dir(options, get_task("sst2"))
    _fake_checkpoint(tmp_path / "ckpt", 3)
    clear_checkpoints(tmp_path / "ckpt")
    assert not (tmp_path / "ckpt").exists()


def test_another_runs_checkpoints_are_ours_to_clear_but_not_the_users_files_beside_them(options, tmp_path):
    prepare_checkpoint_dir(options, get_task("sst2"))
    _fake_checkpoint(tmp_path / "ckpt", 3)
    (tmp_path / "ckpt" / "notes.txt").write_text("mine")
    changed = FinetuneOptions(**{**options.__dict__, "lr": 1e-3, "extra_callbacks": []})
    assert prepare_checkpoint_dir(changed, get_task("sst2")) is None
    assert not (tmp_path / "ckpt" / "checkpoint-3").exists()
    clear_checkpoints(tmp_path / "ckpt")
    assert (tmp_path / "ckpt" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("where, relation", [("data", "is also an input"), ("data/ckpt", "lies inside the input"),
                                             ("run", "is also an input")])
def test_the_checkpoint_dir_is_not_among_the_inputs_or_the_run(options, tmp_path, where, relation):
    with pytest.raises(SpanftError, match=relation):
        check_checkpoint_dir(tmp_path / where, inputs=[options.data, options.out])
