"""Issue 52, item 2: a fix an error line gives, followed as written, loses nothing. The cache-linked and
read-only outputs: tests/test_cache_links.py; the lying lock's `dvc repro -f -s STAGE`:
tests/test_params_window.py. Here the refusals of a directory output that holds what spanft did not write."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from spanft.errors import SpanftError
from spanft.fileio import atomic_path


def write_dir(target: Path) -> None:
    with atomic_path(target, made_by="prepare-task") as tmp:
        tmp.mkdir()
        (tmp / "train.parquet").write_text("new", encoding="utf-8")


def test_move_them_out_first_keeps_your_files(tmp_path):
    target = tmp_path / "data" / "tasks" / "cola"
    write_dir(target)
    (target / "notes.txt").write_text("mine\n", encoding="utf-8")
    (target / "sub").mkdir()
    (target / "sub" / "more.txt").write_text("mine too\n", encoding="utf-8")
    with pytest.raises(SpanftError) as caught:
        write_dir(target)
    line = str(caught.value)
    assert line.endswith("move them out first"), line
    named = re.search(r"holds (.+), which `spanft prepare-task` did not write", line).group(1).split(", ")
    assert named == ["notes.txt", "sub/more.txt"]
    keep = tmp_path / "kept"
    for name in named:  # the fix: move each named file out
        (keep / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(target / name, keep / name)
    write_dir(target)
    assert (target / "train.parquet").read_text(encoding="utf-8") == "new"
    assert (keep / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert (keep / "sub" / "more.txt").read_text(encoding="utf-8") == "mine too\n"


def test_a_folder_of_yours_is_moved_away_not_removed(tmp_path):
    target = tmp_path / "results"
    target.mkdir()
    (target / "thesis.tex").write_text("mine\n", encoding="utf-8")
    with pytest.raises(SpanftError) as caught:
        write_dir(target)
    line = str(caught.value)
    assert "move it away yourself (mv)" in line and "remove" not in line, line
    shutil.move(target, tmp_path / "results.mine")  # the fix, as `mv results results.mine`
    write_dir(target)
    assert (tmp_path / "results.mine" / "thesis.tex").read_text(encoding="utf-8") == "mine\n"
