"""Issue 32, class 1: a stage's record must match what it did.

A stage whose params change on disk while it runs fails with one line naming the key and saying "re-run", so
that DVC records nothing (generated edits: any key of params.yaml, any new value, added or removed keys).
End to end: `dvc repro` of a stage whose params.yaml is edited mid-run writes no dvc.lock entry, and `dvc
status` does not say clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanft.stage.run import run_stage

ROOT = Path(__file__).resolve().parents[1]
TREE = yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))


def _paths(node, prefix=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))


PATHS = sorted(_paths(TREE), key=str)
_value = st.one_of(st.integers(-5, 10**6), st.floats(allow_nan=False, allow_infinity=False), st.booleans(),
                   st.text(alphabet="abcxyz_-", max_size=8), st.lists(st.integers(0, 9), max_size=3))


def _parent(path: tuple):
    node = TREE
    for part in path[:-1]:
        node = node[part]
    return node


def changed_keys(path: tuple, value, delete: bool) -> list[str]:
    """The dotted keys, in the file's order, that an edit of ``path`` changes, read from the edit itself: the
    values drawn are never mappings, so they are ``path`` and every key that a YAML alias makes the same entry
    (params.yaml's hparams blocks share one anchor); none when the edit writes the same value of the same type."""
    old = _parent(path)[path[-1]]
    if not delete and old == value and type(old) is type(value):
        return []
    return [".".join(map(str, p)) for p in _paths(TREE) if p[-1] == path[-1] and _parent(p) is _parent(path)]


def changed_key(path: tuple, value, delete: bool) -> str | None:
    """The first key an edit changes: the one a stage that reads the whole file names."""
    return next(iter(changed_keys(path, value, delete)), None)


def _set(tree: dict, path: tuple, value, delete: bool) -> dict:
    node = tree
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return tree


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(path=st.sampled_from(PATHS), value=_value, delete=st.booleans())
def test_params_edited_while_a_stage_runs_fail_it_naming_the_key(tmp_path_factory, monkeypatch, capsys, path,
                                                                  value, delete):
    workdir = tmp_path_factory.mktemp("stage")
    params = workdir / "params.yaml"
    params.write_text(yaml.safe_dump(TREE, sort_keys=False), encoding="utf-8")
    monkeypatch.chdir(workdir)
    import copy

    changed = _set(copy.deepcopy(TREE), path, value, delete)
    expected = changed_key(path, value, delete)

    def body(plan) -> None:  # the params change on disk while the stage works
        params.write_text(yaml.safe_dump(changed, sort_keys=False), encoding="utf-8")

    status = run_stage(body)
    err = capsys.readouterr().err
    if expected is None:  # the same value written again: nothing changed
        assert status == 0, err
        return
    lines = [line for line in err.splitlines() if line.startswith("spanft: error:")]
    assert status == 2 and len(lines) == 1, err
    assert f"params.yaml: {expected} changed while this stage ran" in lines[0]
    assert "re-run" in lines[0]


def test_an_unchanged_params_file_lets_the_stage_pass(tmp_path, monkeypatch, capsys):
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(TREE, sort_keys=False), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    ran = []
    assert run_stage(lambda plan: ran.append(plan.profile)) == 0
    assert ran == [TREE["profile"]]


STAGE_SCRIPT = '''
import sys, yaml
from pathlib import Path
from spanft.stage.run import run_stage

def body(plan):
    Path("out.txt").write_text(f"dict_size {plan.dict_size}\\n")
    tree = yaml.safe_load(Path("params.yaml").read_text())
    tree["dict_size"] = tree["dict_size"] + 1  # what a `dvc exp run -S` or an editor does mid-run
    Path("params.yaml").write_text(yaml.safe_dump(tree, sort_keys=False))

sys.exit(run_stage(body))
'''


@pytest.mark.skipif(shutil.which("dvc") is None, reason="needs dvc")
def test_dvc_records_nothing_when_params_change_mid_stage(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["dvc", "init", "-q"], cwd=project, check=True, env=env)
    (project / "params.yaml").write_text(yaml.safe_dump(TREE, sort_keys=False), encoding="utf-8")
    shutil.copytree(ROOT / "data" / "raw", project / "data" / "raw")  # the local paths params name
    (project / "stage.py").write_text(STAGE_SCRIPT, encoding="utf-8")
    (project / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"s": {
        "cmd": f"{sys.executable} stage.py", "deps": ["stage.py"], "params": ["dict_size"],
        "outs": [{"out.txt": {"cache": False}}]}}}), encoding="utf-8")
    done = subprocess.run(["dvc", "repro"], cwd=project, capture_output=True, text=True, env=env)
    assert done.returncode != 0
    assert "dict_size changed while this stage ran" in done.stderr + done.stdout
    lock = project / "dvc.lock"
    assert not lock.exists() or "s:" not in lock.read_text(encoding="utf-8")
    status = subprocess.run(["dvc", "status"], cwd=project, capture_output=True, text=True, env=env)
    assert "up to date" not in status.stdout, status.stdout


# The keys each stage declares in dvc.yaml (what DVC writes into dvc.lock for it), written out by hand here.
DECLARED = {"count_ngrams": ["ngrams", "words"], "glue_baseline@tiny-cola-1": ["hparams.cola", "threads"],
            "prepare_task@cola": ["data", "corpus.seed", "tasks.cola"],
            "report": ["profile", "dict_sizes", "chunker", "studies", "reports", "backbones"]}



@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(stage=st.sampled_from(sorted(DECLARED)), path=st.sampled_from(PATHS), value=_value, delete=st.booleans())
def test_only_the_keys_a_stage_declares_fail_it(tmp_path_factory, monkeypatch, capsys, stage, path, value, delete):
    import copy

    workdir = tmp_path_factory.mktemp("stage")
    params = workdir / "params.yaml"
    params.write_text(yaml.safe_dump(TREE, sort_keys=False), encoding="utf-8")
    shutil.copy(ROOT / "dvc.yaml", workdir / "dvc.yaml")
    shutil.copytree(ROOT / "data" / "raw", workdir / "data" / "raw")  # the local paths params name
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("DVC_STAGE", stage)
    changed = _set(copy.deepcopy(TREE), path, value, delete)
    edited = changed_keys(path, value, delete)
    hit = [key for key in DECLARED[stage] for e in edited
           if f"{e}.".startswith(f"{key}.") or f"{key}.".startswith(f"{e}.")]

    def body(plan) -> None:
        params.write_text(yaml.safe_dump(changed, sort_keys=False), encoding="utf-8")

    status = run_stage(body)
    err = capsys.readouterr().err
    if not hit:  # another stage's key: what DVC records for this one is still what it read
        assert status == 0, err
        return
    assert status == 2 and "changed while this stage ran" in err and "re-run" in err, err
    assert f"params.yaml: {hit[0]}" in err, err
