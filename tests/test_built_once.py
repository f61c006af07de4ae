"""tests/conftest.py's built_once: a build that several xdist workers ask for runs once, and a failed one is
never taken for built."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest
from conftest import built_once


class _Factory:
    """What built_once reads of pytest's TempPathFactory: the worker's base folder, in the run's folder."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def getbasetemp(self) -> Path:
        return self.base


def _count_builds(folder: Path) -> None:
    (folder / "built-by").write_text("me\n", encoding="utf-8")
    with (folder.parent / "builds.log").open("a", encoding="utf-8") as log:
        log.write("built\n")
    time.sleep(0.5)  # the others ask meanwhile


def _ask(run: str, worker: str, go: float) -> None:
    import os

    os.environ["PYTEST_XDIST_WORKER"] = worker
    while time.time() < go:
        time.sleep(0.001)
    folder = built_once(_Factory(Path(run) / f"popen-{worker}"), "thing", _count_builds)
    assert (folder / "built-by").read_text(encoding="utf-8") == "me\n"


def test_workers_asking_at_once_share_one_build(tmp_path):
    context = multiprocessing.get_context("spawn")
    go = time.time() + 2.0
    workers = [context.Process(target=_ask, args=(str(tmp_path), f"gw{i}", go)) for i in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0] * 4
    assert (tmp_path / "builds.log").read_text(encoding="utf-8") == "built\n"


def test_a_failed_build_fails_the_later_askers_with_its_message(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    calls = []

    def broken(folder: Path) -> None:
        calls.append(folder)
        (folder / "half").write_text("x", encoding="utf-8")
        raise RuntimeError("dvc repro failed (1): stage 'corpus'")

    with pytest.raises(RuntimeError, match="stage 'corpus'"):
        built_once(_Factory(tmp_path / "popen-gw0"), "thing", broken)
    with pytest.raises(pytest.fail.Exception, match=r"'thing' failed earlier in this run: RuntimeError: dvc repro "
                                                    r"failed \(1\): stage 'corpus'"):
        built_once(_Factory(tmp_path / "popen-gw1"), "thing", broken)
    assert len(calls) == 1 and not (tmp_path / "built-thing.done").exists()


def test_without_xdist_the_build_lives_in_the_runs_own_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    (tmp_path / "pytest-7").mkdir()
    folder = built_once(_Factory(tmp_path / "pytest-7"), "thing", lambda f: (f / "x").write_text("1"))
    assert folder == tmp_path / "pytest-7" / "built-thing" and (folder / "x").read_text() == "1"
    assert built_once(_Factory(tmp_path / "pytest-7"), "thing", lambda f: pytest.fail("built twice")) == folder
