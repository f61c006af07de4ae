"""Atomic outputs and careful UTF-8 input."""

from __future__ import annotations

import pytest

from spanft.errors import SpanftError
from spanft.fileio import atomic_open, atomic_path, read_text, read_text_lines


def test_atomic_open_writes_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_open(target) as out:
            out.write("half")
            raise RuntimeError("stage failed")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    with atomic_open(target) as out:
        out.write("new\n")
    assert target.read_text() == "new\n"


def test_atomic_path_replaces_a_directory(tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    (target / "stale.bin").write_text("x")
    with atomic_path(target) as tmp:
        tmp.mkdir()
        (tmp / "config.json").write_text("{}")
    assert sorted(p.name for p in target.iterdir()) == ["config.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_read_text_lines_names_file_and_line_on_bad_bytes(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes("\ufeffgood line\nsecond\n".encode() + b"bad \xff byte\n")
    lines = read_text_lines(path)
    assert next(lines) == (1, "good line")
    assert next(lines) == (2, "second")
    with pytest.raises(SpanftError, match=r"corpus.txt:3: not valid UTF-8"):
        next(lines)
    with pytest.raises(SpanftError, match=r"corpus.txt:3: not valid UTF-8"):
        read_text(path)


def test_missing_file_is_one_line_error(tmp_path):
    with pytest.raises(SpanftError, match="nope.txt: corpus not found"):
        list(read_text_lines(tmp_path / "nope.txt", what="corpus"))


def test_a_killed_writers_temporary_is_swept_by_the_next_write(tmp_path):
    target = tmp_path / "counts.tsv"
    stale_file = tmp_path / ".counts.tsv.abc123.tmp"
    stale_file.write_text("half", encoding="utf-8")
    stale_dir = tmp_path / ".counts.tsv.def456.tmp"
    stale_dir.mkdir()
    other = tmp_path / ".other.tsv.abc123.tmp"
    other.write_text("not ours", encoding="utf-8")
    with atomic_open(target) as handle:
        handle.write("done\n")
    assert target.read_text(encoding="utf-8") == "done\n"
    assert not stale_file.exists() and not stale_dir.exists()
    assert other.exists()
