"""Issue 43, item 7: DVC's bare "disk I/O error" (its sqlite index and state under a file-size limit or on a
full disk) becomes one line naming the limit or the folder, said by the stage before its work
(src/spanft/stage/dvc_room.py) and by `spanft fanout`."""

from __future__ import annotations

import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from spanft.errors import SpanftError
from spanft.stage import dvc_room

ROOT = Path(__file__).resolve().parents[1]
MiB = 2**20


def _project(folder: Path) -> Path:
    """A folder DVC would run a stage in: `.dvc` and a copy of the repo's params.yaml."""
    (folder / ".dvc").mkdir(parents=True)
    shutil.copy(ROOT / "profiles" / "embedded.yaml", folder / "params.yaml")
    shutil.copytree(ROOT / "data" / "raw", folder / "data" / "raw")  # the local paths params name
    return folder


def _stage_under_limit(project: Path, limit: int | None) -> subprocess.CompletedProcess:
    """pipeline/check_params.py run as DVC runs a stage (DVC_STAGE, DVC_ROOT), under `ulimit -f` of ``limit`` bytes."""
    env = {**os.environ, "DVC_STAGE": "check_params", "DVC_ROOT": str(project),
           "DVC_SITE_CACHE_DIR": str(project / "site")}
    limited = None if limit is None else (lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    return subprocess.run([sys.executable, str(ROOT / "pipeline" / "check_params.py"), "out.txt"], cwd=project,
                          env=env, capture_output=True, text=True, timeout=120, preexec_fn=limited)


@pytest.mark.skipif(resource.getrlimit(resource.RLIMIT_FSIZE)[1] != resource.RLIM_INFINITY,
                    reason="the hard file-size limit is already finite here")
def test_a_stage_under_a_low_file_size_limit_stops_before_its_work_in_one_line(tmp_path):
    free = _stage_under_limit(_project(tmp_path / "free"), None)
    assert free.returncode == 0 and (tmp_path / "free" / "out.txt").exists(), free.stderr[-500:]
    assert "file-size limit" not in free.stderr

    project = _project(tmp_path / "low")
    low = _stage_under_limit(project, MiB)
    assert low.returncode == 2, low.stderr[-500:]
    assert low.stderr == (f"spanft: error: the file-size limit (ulimit -f) is 1,048,576 bytes: DVC's index and cache "
                          f"(.dvc/cache, .dvc/tmp, site/repo) need {dvc_room.FLOOR:,} and would fail with 'disk I/O "
                          f"error'; lift it: `ulimit -f unlimited`\n")
    assert sorted(p.name for p in project.iterdir()) == [".dvc", "data", "params.yaml"]  # it stopped before its work

    high = _stage_under_limit(_project(tmp_path / "high"), 2 * dvc_room.FLOOR)
    assert high.returncode == 0 and (tmp_path / "high" / "out.txt").exists(), high.stderr[-500:]
    warned = [line for line in high.stderr.splitlines() if "file-size limit" in line]
    assert warned == [f"spanft: the file-size limit (ulimit -f) is {2 * dvc_room.FLOOR:,} bytes: a file or DVC "
                      f"index (.dvc/cache, .dvc/tmp, site/repo) beyond it fails ('File too large', DVC's 'disk I/O "
                      f"error'); `ulimit -f unlimited` lifts it"], high.stderr


def _low_disk(low: Path, free: int):
    """shutil.disk_usage, with ``free`` bytes left on the disk of every path under ``low``."""
    real = shutil.disk_usage

    def usage(path):
        found = real(path)
        return found._replace(free=free) if Path(path).resolve().is_relative_to(low.resolve()) else found

    return usage


@pytest.mark.parametrize("folder", ["site cache", "cache", "tmp"])
def test_a_nearly_full_disk_under_a_dvc_folder_is_named_with_its_free_bytes(tmp_path, monkeypatch, folder):
    project = _project(tmp_path / "project")
    (project / ".dvc" / "config").write_text("[cache]\n    dir = ../../elsewhere\n", encoding="utf-8")
    monkeypatch.setenv("DVC_SITE_CACHE_DIR", str(tmp_path / "site"))
    low = {"site cache": tmp_path / "site", "cache": tmp_path / "elsewhere", "tmp": project / ".dvc" / "tmp"}[folder]
    low.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(dvc_room.shutil, "disk_usage", _low_disk(low, 5 * MiB))
    shown = {"site cache": f"{tmp_path / 'site' / 'repo'}", "cache": f"{tmp_path / 'elsewhere'}",
             "tmp": ".dvc/tmp"}[folder]
    problem = dvc_room.room_problem(project)
    assert problem is not None and problem.startswith(
        f"{shown} (DVC's {folder}): 5,242,880 bytes free on its disk, under the {dvc_room.FLOOR:,} DVC needs"), problem
    with pytest.raises(SpanftError, match="5,242,880 bytes free"):
        dvc_room.check_dvc_room(project)
    monkeypatch.setattr(dvc_room.shutil, "disk_usage", _low_disk(low, dvc_room.FLOOR))
    assert dvc_room.room_problem(project) is None


def test_fanout_and_its_dvc_index_error_name_the_limit(tmp_path, monkeypatch, capsys):
    """`spanft fanout` checks the head before any job (after the cache's write check, which names an unwritable
    cache better), and DVC's sqlite error there uses the same line."""
    from spanft.cli import main

    project = _project(tmp_path / "head")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)  # a head: checked after its job folder, cache
    monkeypatch.setenv("DVC_SITE_CACHE_DIR", str(tmp_path / "site"))
    monkeypatch.setattr(dvc_room, "file_size_limit", lambda: MiB)
    assert main(["fanout", "--root", str(project), "--executor", "local"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spanft: error: the file-size limit (ulimit -f) is 1,048,576 bytes") and err.count("\n") == 1
    said = dvc_room.index_failed(project, sqlite3.OperationalError("disk I/O error"))
    assert said.startswith(f"{project}: DVC's index failed (disk I/O error): the file-size limit (ulimit -f) is "
                           f"1,048,576 bytes"), said


def _dvc_says(project: Path) -> tuple[Path, Path]:
    """The oracle: DVC's own config, read afresh (cache folder, site cache folder)."""
    from dvc.config import Config
    from dvc.dirs import site_cache_dir

    config = Config(dvc_dir=str(project / ".dvc"))
    cache = config["cache"].get("dir")
    return (Path(cache) if cache else project / ".dvc" / "cache",
            Path(site_cache_dir(config["core"].get("site_cache_dir"))) / "repo")


def test_what_dvc_s_config_said_is_kept_only_while_it_is_the_same(tmp_path, monkeypatch):
    project = _project(tmp_path / "p")
    (project / ".dvc" / "tmp").mkdir()
    monkeypatch.setenv("DVC_GLOBAL_CONFIG_DIR", str(tmp_path / "global"))
    monkeypatch.setenv("DVC_SYSTEM_CONFIG_DIR", str(tmp_path / "system"))

    def check() -> None:
        found = dvc_room.dvc_folders(project)
        assert (found["cache"], found["site cache"]) == _dvc_says(project)
        assert (project / ".dvc" / dvc_room.MEMO).is_file()

    check()
    check()  # from what was kept
    (project / ".dvc" / "config").write_text("[cache]\n    dir = ../elsewhere\n", encoding="utf-8")
    check()
    (tmp_path / "global").mkdir()
    (tmp_path / "global" / "config").write_text("[core]\n    site_cache_dir = /tmp/spanft-site-x\n", encoding="utf-8")
    check()
    monkeypatch.setenv("DVC_SITE_CACHE_DIR", str(tmp_path / "site"))
    check()
    assert dvc_room.dvc_folders(project)["site cache"] == tmp_path / "site" / "repo"
