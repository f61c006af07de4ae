"""Issue 32, class 3: never replace or delete what the command did not make.

Generated cases: a file output that is a character device, a FIFO, a link to one or a pipe (process
substitution) is written through, never replaced; a read-only file is refused and kept; `spanft report --out`
into a folder of the user's is refused; a refused `spanft fanout` leaves nothing in the folder it was given.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanft.errors import SpanftError
from spanft.fileio import atomic_open

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
_content = st.binary(max_size=5000)


@SETTINGS
@given(content=_content, link=st.booleans())
def test_dev_null_is_written_through_never_replaced(tmp_path_factory, content, link):
    target = Path(os.devnull)
    if link:
        target = tmp_path_factory.mktemp("l") / "sink"
        target.symlink_to(os.devnull)
    before = os.stat(os.devnull)
    with atomic_open(target, "wb") as handle:
        handle.write(content)
    after = os.stat(os.devnull)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert not link or target.is_symlink()
    assert not list(Path("/dev").glob(".null.*.tmp"))


def _read_in_background(path: Path, into: list) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as handle:
            into.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


@SETTINGS
@given(content=_content, link=st.booleans())
def test_a_fifo_receives_the_output_and_stays_a_fifo(tmp_path_factory, content, link):
    folder = tmp_path_factory.mktemp("f")
    fifo = folder / "pipe"
    os.mkfifo(fifo)
    target = fifo
    if link:
        target = folder / "link"
        target.symlink_to(fifo)
    received: list[bytes] = []
    reader = _read_in_background(fifo, received)
    with atomic_open(target, "wb") as handle:
        handle.write(content)
    reader.join(10)
    assert received == [content]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and sorted(p.name for p in folder.iterdir()) == sorted(
        ["pipe", *(["link"] if link else [])])


def test_a_process_substitution_receives_the_counts(tmp_path):
    (tmp_path / "c.txt").write_text("the cat sat\n" * 20, encoding="utf-8")
    done = subprocess.run(["bash", "-c", f"{sys.executable} -m spanft.cli count-ngrams c.txt --min-count 1 "
                           "--out >(cat > got.tsv); wait"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for _ in range(50):
        if (tmp_path / "got.tsv").exists() and (tmp_path / "got.tsv").read_text():
            break
        threading.Event().wait(0.1)
    assert "the cat\t" in (tmp_path / "got.tsv").read_text(encoding="utf-8")


@SETTINGS
@given(content=st.binary(min_size=1, max_size=200), mode=st.sampled_from([0o444, 0o400, 0o440, 0o555, 0o000]))
def test_a_read_only_file_is_refused_and_kept(tmp_path_factory, content, mode):
    target = tmp_path_factory.mktemp("r") / "out.txt"
    target.write_bytes(content)
    target.chmod(mode)
    with pytest.raises(SpanftError, match=f"output {target} is read-only"):
        with atomic_open(target, "wb") as handle:
            handle.write(b"new")
    assert target.read_bytes() == content and stat.S_IMODE(target.stat().st_mode) == mode
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.txt"]


def test_profile_respects_a_read_only_params_file(tmp_path):
    import shutil

    shutil.copytree(ROOT / "profiles", tmp_path / "profiles")
    params = tmp_path / "params.yaml"
    params.write_bytes((ROOT / "params.yaml").read_bytes())
    params.chmod(0o444)
    done = subprocess.run([sys.executable, "-m", "spanft.cli", "profile", "paper", "--root", "."], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "read-only" in done.stderr, done.stderr
    assert params.read_bytes() == (ROOT / "params.yaml").read_bytes()


_name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-.", min_size=1, max_size=10).filter(lambda n: n not in (".", ".."))


@SETTINGS
@given(names=st.lists(_name, min_size=1, max_size=5, unique=True), index=st.sampled_from([None, "# my notes\n", ""]))
def test_report_refuses_a_folder_of_the_users(tmp_path_factory, names, index):
    from spanft.cli.report import check_report_folder

    folder = tmp_path_factory.mktemp("u") / "mine"
    folder.mkdir()
    for name in names:
        (folder / name).write_text("user's\n", encoding="utf-8")
    if index is not None:
        (folder / "index.md").write_text(index, encoding="utf-8")
    with pytest.raises(SpanftError, match=f"--out {folder}: holds files the report did not write"):
        check_report_folder(str(folder))
    (folder / "index.md").write_text("Profile: embedded — synthetic data.\n\n# Summary\n", encoding="utf-8")
    check_report_folder(str(folder))  # the report's own folder


def test_report_cli_refuses_before_writing(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "index.md").write_text("my index\n", encoding="utf-8")
    (tmp_path / "params.yaml").write_bytes((ROOT / "params.yaml").read_bytes())
    done = subprocess.run([sys.executable, "-m", "spanft.cli", "report", "--out", "notes"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "holds files the report did not write" in done.stderr, done.stderr
    assert [p.name for p in (tmp_path / "notes").iterdir()] == ["index.md"]
    assert (tmp_path / "notes" / "index.md").read_text(encoding="utf-8") == "my index\n"


@SETTINGS
@given(depth=st.integers(0, 3), existing=st.booleans(), user_file=st.booleans())
def test_a_refused_fanout_leaves_nothing_behind(tmp_path_factory, monkeypatch, depth, existing, user_file):
    from spanft.cluster import fanout as fanout_module

    root = tmp_path_factory.mktemp("proj")
    folder = root.joinpath(".fanout", *[f"d{i}" for i in range(depth)])
    if existing:
        folder.mkdir(parents=True)
        if user_file:
            (folder / "keep.txt").write_text("mine\n", encoding="utf-8")
    before = sorted(str(p) for p in root.rglob("*"))

    def refuse(*args, **kwargs):
        raise SpanftError(f"{root}: uncommitted changes (params.yaml): commit them first")

    monkeypatch.setattr(fanout_module, "_fanout", refuse)
    monkeypatch.setattr(fanout_module, "executor_name", lambda settings: "local")
    settings_ = SimpleNamespace(folder_path=lambda r: folder, remote="", max_parallel=1)
    with pytest.raises(SpanftError, match="uncommitted"):
        fanout_module.fanout(root, settings_, None, False, True)
    assert sorted(str(p) for p in root.rglob("*")) == before
