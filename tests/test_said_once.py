"""A by-design warning prints once per dvc run, not once per stage (issue 49): the session folder remembers it."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from spanft.stage import session as session_module
from spanft.stage.session import FOLDER, Session, first_time_this_session


def _in_session(monkeypatch, root: Path, pid: int) -> None:
    log = root / FOLDER / f"{pid}-1000.jsonl"
    monkeypatch.setattr(session_module, "find_session", lambda folder: Session(pid, 1.0, ("repro",), log))


def test_the_first_stage_of_a_run_says_it_the_others_do_not(tmp_path, monkeypatch):
    _in_session(monkeypatch, tmp_path, 41)
    said = [first_time_this_session("warning: cased data, uncased backbone", tmp_path) for _ in range(5)]
    assert said == [True, False, False, False, False]
    assert first_time_this_session("another warning", tmp_path)  # each message once
    _in_session(monkeypatch, tmp_path, 42)  # the next `dvc repro`: said again, once
    assert [first_time_this_session("warning: cased data, uncased backbone", tmp_path) for _ in range(2)] == [True, False]


def test_outside_a_dvc_run_every_call_speaks(tmp_path, monkeypatch):
    monkeypatch.setattr(session_module, "find_session", lambda folder: None)
    assert all(first_time_this_session("w", tmp_path) for _ in range(3))


def _ask(args) -> bool:
    root, key = args
    log = Path(root) / FOLDER / "7-1000.jsonl"
    session_module.find_session = lambda folder: Session(7, 1.0, ("repro",), log)
    return first_time_this_session(key, Path(root))


def test_stages_running_side_by_side_say_it_once(tmp_path):
    with multiprocessing.get_context("fork").Pool(4) as pool:
        said = pool.map(_ask, [(str(tmp_path), "w")] * 12)
    assert said.count(True) == 1
