"""`dvc repro -s STAGE` in a fresh clone (README "Single stages"): a stage whose own inputs are there runs,
whatever else the graph has not built yet, with `data.dir` inside the repo, outside it, or through a symlink."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_graph import REDUCED, dvc, new_project, reduced_params  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("dvc") is None or shutil.which("git") is None, reason="needs dvc, git")


def _fresh_clone(tmp_path: Path, params: dict) -> Path:
    """A committed copy of the graph cloned with git: no output of any stage, as a user's first checkout."""
    origin = new_project(tmp_path / "origin", params)
    git = lambda *argv, cwd=origin: subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True)  # noqa: E731
    (origin / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    git("add", "-A")
    git("-c", "user.email=t@spanft", "-c", "user.name=t", "commit", "-qm", "the graph")
    git("clone", "-q", str(origin), str(tmp_path / "clone"), cwd=tmp_path)
    return tmp_path / "clone"


def _outside_data(tmp_path: Path) -> Path:
    data = tmp_path / "outside-data"
    for folder in REDUCED["tasks"].values():  # synthetic data: the folders are only the stages' dependencies
        (data / folder).mkdir(parents=True, exist_ok=True)
    return data


@pytest.mark.parametrize("where", ["repo", "outside", "symlink"])
def test_single_stages_run_in_a_fresh_clone(tmp_path, where):
    params = reduced_params()
    if where != "repo":
        outside = _outside_data(tmp_path)
        if where == "symlink":
            (tmp_path / "link").symlink_to(outside, target_is_directory=True)
            outside = tmp_path / "link"
        params["data"]["dir"] = str(outside)
    clone = _fresh_clone(tmp_path, params)
    for stage, out in (("prepare_task@cola", "data/tasks/cola"), ("corpus", "data/corpus/train.txt")):
        done = dvc(clone, "repro", "-s", stage, check=False)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert (clone / out).exists(), stage
    assert not (clone / "data" / "params-checked.txt").exists()  # -s built nothing else
