"""Experiments that diff cleanly: ``dvc exp run -S key=value`` changes exactly the lines of that value in
params.yaml (the profiles are written in the style DVC's YAML round trip keeps), and the reports' header names
every param that differs from the profile's file (spanft.params.changes)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from dvc.utils.hydra import apply_overrides

from spanft.params.changes import changed_from_profile
from spanft.params.plan import load_plan
from spanft.readme import committed
from spanft.report.cells import profile_line

ROOT = Path(__file__).resolve().parents[1]
PARAMS_FILES = sorted((ROOT / "profiles").glob("*.yaml"))  # params.yaml: committed as embedded.yaml (below)


@pytest.mark.parametrize("path", PARAMS_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_params_file_is_a_fixed_point_of_dvcs_round_trip(path, tmp_path):
    copy = tmp_path / "params.yaml"
    shutil.copy(path, copy)
    profile = yaml.safe_load(path.read_text(encoding="utf-8"))["profile"]
    apply_overrides(copy, [f"profile={profile}"])  # DVC's own -S: load, set, dump the whole file
    assert copy.read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), \
        f"{path.name}: not in DVC's style; run python scripts/dvc_style_params.py {path.relative_to(ROOT)}"


def test_params_yaml_is_the_embedded_profile():
    # as committed: a user's `spanft profile small` or `dvc exp run -S` rewrites the working tree's params.yaml
    assert committed(ROOT, "params.yaml") == (ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8")


HEADER_SCRIPT = textwrap.dedent("""\
    from spanft.params.changes import with_changes
    from spanft.params.plan import load_plan
    from spanft.report.cells import profile_line
    plan = with_changes(load_plan("params.yaml"))  # as pipeline/report.py and spanft report do
    open("header.txt", "w").write(profile_line(plan.profile_label) + "\\n")
""")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _project(root: Path, profile: str) -> Path:
    """A one-stage DVC project whose params.yaml is ``profile``'s file and whose stage writes the reports'
    header line; committed, as ``dvc exp run`` needs."""
    shutil.copytree(ROOT / "profiles", root / "profiles")
    shutil.copy(ROOT / "profiles" / f"{profile}.yaml", root / "params.yaml")
    (root / "header.py").write_text(HEADER_SCRIPT, encoding="utf-8")
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"header": {
        "cmd": f"{sys.executable} header.py", "deps": ["header.py", "profiles"],
        "params": ["dict_size", "studies.glue.seeds"], "outs": [{"header.txt": {"cache": False}}]}}}),
        encoding="utf-8")
    _git(root, "init", "-q")
    subprocess.run(["dvc", "init", "-q"], cwd=root, check=True)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "project")
    return root


@pytest.mark.parametrize("profile, override, removed, added, named", [
    ("embedded", "dict_size=100000", ["dict_size: 200000"], ["dict_size: 100000"], "dict_size=100000"),
    ("paper", "studies.glue.seeds=[1,2]", ["    - 3"], [], "studies.glue.seeds=[1, 2]"),
])
def test_dvc_exp_run_set_param_changes_only_that_value(tmp_path, profile, override, removed, added, named):
    root = _project(tmp_path, profile)
    done = subprocess.run(["dvc", "exp", "run", "-S", override], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    diff = _git(root, "diff", "-U0", "--", "params.yaml").splitlines()
    changed = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert sorted(changed) == sorted([f"-{line}" for line in removed] + [f"+{line}" for line in added])
    header = (root / "header.txt").read_text(encoding="utf-8")
    assert header.endswith(f"Changed from profiles/{profile}.yaml: {named}.\n"), header


def test_changed_params_name_each_leaf_that_differs(tmp_path):
    (tmp_path / "profiles").mkdir()
    shutil.copy(ROOT / "profiles" / "embedded.yaml", tmp_path / "profiles" / "embedded.yaml")
    params = tmp_path / "params.yaml"
    shutil.copy(ROOT / "profiles" / "embedded.yaml", params)
    assert changed_from_profile(params) == []
    apply_overrides(params, ["hparams.cola.lr=3e-5", "~reports.figure2.examples", "+extra=true",
                             "data.dir=''", "studies.glue.tasks=[cola]"])
    assert changed_from_profile(params) == ["data.dir=''", "hparams.cola.lr=3e-05", "studies.glue.tasks=[cola]",
                                            "extra=true", "reports.figure2.examples removed"]  # in file order


def test_a_params_file_without_its_profile_names_no_change(tmp_path):
    params = tmp_path / "params.yaml"
    shutil.copy(ROOT / "profiles" / "embedded.yaml", params)
    assert changed_from_profile(params) == []  # no profiles/ beside it


def test_the_header_keeps_the_profiles_words_and_adds_the_changes():
    plan = load_plan(ROOT / "profiles" / "embedded.yaml")
    assert profile_line(plan.profile_label) == profile_line("embedded")
    import dataclasses

    changed = dataclasses.replace(plan, changed=("dict_size=100000",))
    assert profile_line(changed.profile_label) == (f"{profile_line('embedded')} Changed from profiles/embedded.yaml: "
                                                   "dict_size=100000.")
