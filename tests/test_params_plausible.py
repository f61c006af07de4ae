"""Issue 32, class 2: params are checked for plausibility, not only type, and even when no stage runs.

Generated cases: learning rates above 1 (``2e5`` for ``2e-5``), revisions of data and corpus outside git's ref
grammar, unknown task names in ``reports.*`` lists, empty seed lists where a study has backbones, backbone
names holding a dot, ``max_seq_len`` above a built backbone's ``max_len``, and ``--min-n``/``--max-n`` flags
with the bounds of ``ngrams.*``. The ``check_params`` stage is keyed on the whole params.yaml and every other
stage depends on its output, so ``dvc repro`` on an up-to-date project stops at a typo'd key.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanft.data.registry import TASKS
from spanft.errors import SpanftError
from spanft.params.load import load_params
from spanft.params.schema import check_params

ROOT = Path(__file__).resolve().parents[1]
TREE = load_params(ROOT / "profiles" / "embedded.yaml")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def _refused(tree: dict, *expected: str) -> str:
    with pytest.raises(SpanftError) as caught:
        check_params(tree, "params.yaml")
    message = str(caught.value)
    assert all(part in message for part in expected), message
    return message


@SETTINGS
@given(task=st.sampled_from(sorted(TREE["hparams"])), lr=st.one_of(
    st.floats(1.0, 1e12, exclude_min=True), st.sampled_from([2e5, 3e4, 5.0, 1e3])))
def test_an_implausible_learning_rate_is_refused(task, lr):
    tree = copy.deepcopy(TREE)
    tree["hparams"][task] = {**tree["hparams"][task], "lr": lr}  # blocks share one YAML anchor
    _refused(tree, f"params.yaml: hparams.{task}.lr: must satisfy 0 < lr <= 1")


@SETTINGS
@given(lr=st.floats(1e-8, 1.0))
def test_a_plausible_learning_rate_passes(lr):
    tree = copy.deepcopy(TREE)
    tree["hparams"]["cola"]["lr"] = lr
    check_params(tree, "params.yaml")


@SETTINGS
@given(lr=st.sampled_from(["2e5", "1.5", "100"]))
def test_the_lr_flag_has_the_params_bounds(lr):
    from spanft.params.hparams import hparam_problem

    assert "must satisfy 0 < lr <= 1" in hparam_problem("lr", float(lr))


_bad_ref = st.one_of(
    st.builds(lambda a, b, bad: f"{a}{bad}{b}", st.text("abc", min_size=1, max_size=4),
              st.text("abc", min_size=1, max_size=4), st.sampled_from([" ", "..", "~", "^", ":", "?", "*", "[", "\\",
                                                                       "@{", "//", "\t"])),
    st.sampled_from(["-main", "@", "main.lock", "main/", "/main", "main.", ".hidden", "a/.b"]))


@SETTINGS
@given(revision=_bad_ref, where=st.sampled_from(["data", "corpus"]))
def test_data_and_corpus_revisions_follow_git_ref_grammar(revision, where):
    tree = copy.deepcopy(TREE)
    if where == "data":
        tree["data"]["revisions"] = {"cola": revision}
        _refused(tree, "data.revisions.cola", "is not a git revision")
    else:
        tree["corpus"]["hf_revision"] = revision
        _refused(tree, "corpus.hf_revision", "is not a git revision")


_unknown_task = st.text("abcdefghijklmnopqrstuvwxyz0-", min_size=1, max_size=10).filter(lambda t: t not in TASKS)


@SETTINGS
@given(task=_unknown_task, key=st.sampled_from(["mcnemar_tasks", "figure2"]))
def test_report_task_lists_name_known_tasks(task, key):
    tree = copy.deepcopy(TREE)
    if key == "figure2":
        tree["reports"]["figure2"]["tasks"] = [*tree["reports"]["figure2"]["tasks"], task]
        _refused(tree, "reports.figure2.tasks", repr(task))
    else:
        tree["reports"]["mcnemar_tasks"] = [task, *tree["reports"]["mcnemar_tasks"]]
        _refused(tree, "reports.mcnemar_tasks", repr(task))


@SETTINGS
@given(name=st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6))
def test_paper_names_name_defined_backbones(name):
    tree = copy.deepcopy(TREE)
    defined = {n for group in tree["backbones"].values() for n in group}
    if name in defined:
        return
    tree["reports"]["paper_names"][name] = "bert-base-uncased"
    _refused(tree, "reports.paper_names", repr(name))


@SETTINGS
@given(study=st.sampled_from(sorted(TREE["studies"])))
def test_a_study_with_backbones_needs_seeds(study):
    tree = copy.deepcopy(TREE)
    tree["studies"][study]["seeds"] = []
    if not tree["studies"][study]["backbones"]:
        check_params(tree, "params.yaml")
        return
    _refused(tree, f"studies.{study}.seeds is empty")


@SETTINGS
@given(left=st.text("abcxyz", min_size=1, max_size=5), right=st.text("abcxyz0-", min_size=1, max_size=5),
       source=st.sampled_from(["build", "hub", "local"]))
def test_a_backbone_name_with_a_dot_is_refused(left, right, source):
    tree = copy.deepcopy(TREE)
    spec = {"build": copy.deepcopy(TREE["backbones"]["build"]["tiny"]), "hub": {"hub_id": "bert-base-uncased"},
            "local": {"path": "models/x"}}[source]
    tree["backbones"][source] = {**(tree["backbones"][source] or {}), f"{left}.{right}": spec}
    _refused(tree, f"'{left}.{right}' is not a name", "no '.'")


@SETTINGS
@given(extra=st.integers(1, 1000))
def test_max_seq_len_above_a_built_backbones_max_len_is_refused(extra):
    tree = copy.deepcopy(TREE)
    max_len = tree["backbones"]["build"]["tiny"]["max_len"]
    tree["hparams"]["cola"] = {**tree["hparams"]["cola"], "max_seq_len": max_len + extra}
    _refused(tree, f"hparams.cola.max_seq_len {max_len + extra} exceeds backbones.build.tiny.max_len {max_len}")


@SETTINGS
@given(min_n=st.integers(-2, 8), max_n=st.integers(-2, 8))
def test_ngram_flags_have_the_bounds_of_their_params(tmp_path_factory, capsys, min_n, max_n):
    from spanft.cli import main

    tmp = tmp_path_factory.mktemp("n")
    (tmp / "c.txt").write_text("the cat sat on the mat\n" * 5, encoding="utf-8")
    tree = copy.deepcopy(TREE)
    tree["ngrams"].update(min_n=min_n, max_n=max_n)
    try:
        check_params(tree, "params.yaml")
        params_ok = True
    except SpanftError:
        params_ok = False
    status = main(["count-ngrams", str(tmp / "c.txt"), "--out", str(tmp / "out.tsv"), "--min-count", "1",
                   "--min-n", str(min_n), "--max-n", str(max_n)])
    err = capsys.readouterr().err
    assert (status == 0) == params_ok, err
    assert params_ok or "--min-n/--max-n (ngrams.min_n/max_n) must satisfy 2 <= min_n <= max_n <= 5" in err


@SETTINGS
@given(max_n=st.integers(-3, 12))
def test_segment_max_n_flag_has_the_bounds_of_its_param(tmp_path_factory, capsys, max_n):
    from spanft.cli import main

    tmp = tmp_path_factory.mktemp("s")
    (tmp / "d.tsv").write_text("the cat\t5\n", encoding="utf-8")
    (tmp / "in.txt").write_text("the cat sat\n", encoding="utf-8")
    status = main(["segment", "--dict", str(tmp / "d.tsv"), "--max-n", str(max_n), str(tmp / "in.txt")])
    err = capsys.readouterr().err
    assert (status == 0) == (2 <= max_n <= 5), err
    assert 2 <= max_n <= 5 or "--max-n (ngrams.max_n) must be from 2 to 5" in err


def test_no_stage_needs_the_checks_output_and_every_script_runs_the_whole_check():
    """`dvc repro -s STAGE` builds no other stage's output, so none may depend on data/params-checked.txt; each
    stage script checks the whole file itself (run_stage -> load_plan), which is what that edge gave."""
    from dvc.repo import Repo

    with Repo(str(ROOT)) as repo:
        stages = list(repo.index.stages)
    assert "check_params" in {stage.addressing for stage in stages}
    for stage in stages:
        assert "data/params-checked.txt" not in {dep.def_path for dep in stage.deps}, stage.addressing
        assert "data/params-checked.txt" not in {out.def_path for out in stage.outs} or stage.name == "check_params"
    for script in sorted((ROOT / "pipeline").glob("*.py")):
        assert "run_stage" in script.read_text(encoding="utf-8"), script.name


@pytest.mark.skipif(shutil.which("dvc") is None or shutil.which("git") is None, reason="needs dvc and git")
def test_a_typod_key_stops_dvc_repro_of_an_up_to_date_project(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    (project / "pipeline").mkdir()
    shutil.copy(ROOT / "pipeline" / "check_params.py", project / "pipeline" / "check_params.py")
    shutil.copy(ROOT / "profiles" / "embedded.yaml", project / "params.yaml")
    shutil.copytree(ROOT / "data" / "raw", project / "data" / "raw")  # the local paths params name (dvc.yaml's deps)
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["check_params"]
    stage = {**stage, "cmd": stage["cmd"].replace("python", sys.executable, 1), "deps": ["pipeline/check_params.py"]}
    (project / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"check_params": stage}}), encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["dvc", "init", "-q"], cwd=project, check=True, env=env)
    assert subprocess.run(["dvc", "repro"], cwd=project, capture_output=True, env=env).returncode == 0
    checked = (project / "data" / "params-checked.txt").read_bytes()
    with open(project / "params.yaml", "a", encoding="utf-8") as handle:
        handle.write("dict_sise: 100000\n")
    done = subprocess.run(["dvc", "repro"], cwd=project, capture_output=True, text=True, env=env)
    assert done.returncode != 0 and "unknown key dict_sise (did you mean dict_size?)" in done.stdout + done.stderr
    # a change that passes re-runs the check, whose output is the same bytes: nothing after it re-runs
    text = (project / "params.yaml").read_text(encoding="utf-8").replace("dict_sise: 100000\n", "")
    (project / "params.yaml").write_text(text.replace("dict_size: ", "dict_size: 1", 1), encoding="utf-8")
    assert subprocess.run(["dvc", "repro"], cwd=project, capture_output=True, env=env).returncode == 0
    assert (project / "data" / "params-checked.txt").read_bytes() == checked
