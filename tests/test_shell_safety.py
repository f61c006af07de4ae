"""No text from params.yaml reaches a shell: a key or list entry that is a shell command runs nothing.

DVC pastes ``${key}`` / ``${item...}`` into a stage's ``cmd`` and runs it through a shell. Each case puts a
command substitution into params (a task key, a hub backbone key, a study's backbone), makes the stage's
inputs exist so DVC gets as far as running it, runs ``dvc repro --single-item`` on it, and checks that the
substitution created no file and that the stage stopped at spanft's params check with one line.
"""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from dvc.repo import Repo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_graph import dvc, new_project  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EVIL = "x$(touch${IFS}pwned)"  # run by a shell, creates ./pwned in the stage's working directory


def _embedded() -> dict:
    return yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))


def _evil_task(params: dict) -> str:
    params["tasks"][f"cola{EVIL}"] = "glue_data/CoLA"
    return f"prepare_task@cola{EVIL}"


def _evil_hub_backbone(params: dict) -> str:
    params["backbones"]["hub"] = {f"bert{EVIL}": {"hub_id": "bert-base-uncased"}}
    return f"fetch_backbone@bert{EVIL}"


def _evil_study_backbone(params: dict) -> str:
    params["backbones"]["build"][f"tiny{EVIL}"] = copy.deepcopy(params["backbones"]["build"]["tiny"])
    params["studies"]["glue"]["backbones"] = [f"tiny{EVIL}"]
    return f"glue_baseline@tiny{EVIL}-cola-1"


def _make_inputs(project: Path, stage_name: str) -> None:
    """Every dependency of the stage that no earlier stage made here: an empty file (DVC then runs it)."""
    with Repo(str(project)) as repo:
        (stage,) = [s for s in repo.index.stages if s.name == stage_name]
        missing = [Path(dep.fs_path) for dep in stage.deps if not Path(dep.fs_path).exists()]
    for path in missing:
        path.mkdir(parents=True, exist_ok=True)
        (path / "placeholder").write_text("x\n", encoding="utf-8")


@pytest.mark.parametrize("inject", [_evil_task, _evil_hub_backbone, _evil_study_backbone],
                         ids=["tasks-key", "backbones-hub-key", "studies-entry"])
def test_params_text_is_never_run_by_a_shell(tmp_path, inject):
    if shutil.which("dvc") is None:
        pytest.skip("dvc is not installed")
    params = _embedded()
    stage = inject(params)
    project = new_project(tmp_path / "project", params)
    _make_inputs(project, stage)
    done = dvc(project, "repro", "--single-item", stage, check=False)
    created = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("pwned"))
    print(f"{stage}: exit {done.returncode}, created {created}")
    assert created == []
    errors = [line for line in done.stderr.splitlines() if line.startswith("spanft: error:")]
    assert done.returncode != 0 and len(errors) == 1 and "params.yaml" in errors[0], done.stderr[-2000:]
