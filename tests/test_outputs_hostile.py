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

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanft.errors import SpanftError
from spanft.fileio import atomic_open
from spanft.params.cluster import ClusterSettings

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
_content = st.binary(max_size=5000)


def null_device(folder: Path) -> Path:
    """A character device like /dev/null: a private one where this user may make one (root), so that a
    regression replaces that one and never the system's; else /dev/null itself (which a user cannot replace)."""
    path = folder / "null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (OSError, AttributeError):
        return Path(os.devnull)
    return path


@SETTINGS
@given(content=_content, link=st.booleans())
def test_a_character_device_is_written_through_never_replaced(tmp_path_factory, content, link):
    folder = tmp_path_factory.mktemp("l")
    device = null_device(folder)
    target = device
    if link:
        target = folder / "sink"
        target.symlink_to(device)
    before = os.stat(device)
    with atomic_open(target, "wb") as handle:
        handle.write(content)
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert not link or target.is_symlink()
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*(["null"] if device.parent == folder else []), *(["sink"] if link else [])])
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


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
    params.write_bytes((ROOT / "profiles" / "embedded.yaml").read_bytes())
    params.chmod(0o444)
    done = subprocess.run([sys.executable, "-m", "spanft.cli", "profile", "paper", "--root", "."], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "read-only" in done.stderr, done.stderr
    assert params.read_bytes() == (ROOT / "profiles" / "embedded.yaml").read_bytes()


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
    (tmp_path / "params.yaml").write_bytes((ROOT / "profiles" / "embedded.yaml").read_bytes())
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
    monkeypatch.setattr(fanout_module, "check_before_spending", lambda *args: None)  # they need a DVC project
    settings_ = ClusterSettings(executor="local", folder=str(folder), max_parallel=1, startup_s=0,
                                checkpoint_every_s=60)
    with pytest.raises(SpanftError, match="uncommitted"):
        fanout_module.fanout(root, settings_, None, False, True)
    assert sorted(str(p) for p in root.rglob("*")) == before


# -- a user's file inside a directory output: DVC leaves it (persist), spanft refuses to replace the directory

_rel = st.lists(st.text(alphabet="abcdefghij_-", min_size=1, max_size=6), min_size=1, max_size=3).map("/".join)


@SETTINGS
@given(written=st.lists(_rel, min_size=1, max_size=4, unique=True), user=_rel)
def test_a_users_file_in_a_directory_output_is_refused_and_kept(tmp_path_factory, written, user):
    from spanft.fileio import atomic_path

    target = tmp_path_factory.mktemp("d") / "out"

    def write_output() -> None:
        with atomic_path(target, made_by="prepare-task") as tmp:
            for name in written:
                if any(name.startswith(other + "/") for other in written if other != name):
                    continue  # a name that is also a folder of another: not a file
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                (tmp / name).write_text(name, encoding="utf-8")

    write_output()
    write_output()  # its own output: replaced
    mine = target / user
    if mine.exists() or any(parent.is_file() for parent in mine.parents):
        return
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("the user's\n", encoding="utf-8")
    with pytest.raises(SpanftError, match="which `spanft prepare-task` did not write"):
        write_output()
    assert mine.read_text(encoding="utf-8") == "the user's\n"


def test_the_pipelines_directory_outputs_persist_so_dvc_deletes_no_users_file():
    import yaml

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    for name in ("prepare_task", "build_backbone", "fetch_backbone", "copy_backbone"):
        assert stages[name]["do"]["outs"][0] == {next(iter(stages[name]["do"]["outs"][0])): {"persist": True}}, name
    for name in ("segment_ngram", "segment_sweep"):
        out, record = stages[name]["outs"]  # the folder, and the params record (a file: nothing of yours in it)
        assert list(out.values()) == [{"persist": True}] and record.startswith("data/params-used/"), name
    report = {next(iter(o)): o[next(iter(o))] for o in stages["report"]["outs"] if isinstance(o, dict)}
    assert report["reports/tables"]["persist"] and report["reports/figures"]["persist"]


@pytest.mark.skipif(__import__("shutil").which("dvc") is None, reason="needs dvc")
def test_dvc_repro_keeps_a_users_file_in_prepared_task_data(tmp_path):
    import shutil

    import yaml

    project = tmp_path / "p"
    project.mkdir()
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    prepare = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["prepare_task"]["do"]
    out = prepare["outs"][0]
    stage = {"cmd": f"{sys.executable} -m spanft.cli -q prepare-task cola --source synthetic --train-size 8 "
                    f"--eval-size 4 --test-size 4 --seed ${{seed}} --out data/tasks/cola",
             "params": ["seed"], "outs": [{"data/tasks/cola": out["data/tasks/${key}"]}]}
    (project / "params.yaml").write_text("seed: 1\n", encoding="utf-8")
    (project / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"prepare": stage}}), encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["dvc", "init", "-q"], cwd=project, check=True, env=env)
    first = subprocess.run(["dvc", "repro"], cwd=project, capture_output=True, text=True, env=env)
    if "--seed" in first.stderr and "unrecognized" in first.stderr:
        pytest.skip("prepare-task takes no --seed here")
    assert first.returncode == 0, first.stderr
    notes = project / "data" / "tasks" / "cola" / "notes.txt"
    notes.write_text("mine\n", encoding="utf-8")
    (project / "params.yaml").write_text("seed: 2\n", encoding="utf-8")
    done = subprocess.run(["dvc", "repro"], cwd=project, capture_output=True, text=True, env=env)
    assert done.returncode != 0 and "notes.txt, which `spanft prepare-task` did not write" in done.stdout + done.stderr
    assert notes.read_text(encoding="utf-8") == "mine\n"
    shutil.move(notes, project / "notes.txt")  # moved out, the stage runs
    assert subprocess.run(["dvc", "repro"], cwd=project, capture_output=True, env=env).returncode == 0
