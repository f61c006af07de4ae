"""params.yaml: the schema check, the profile switch, and per-task --hparams blocks."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spanft.errors import SpanftError
from spanft.params.hparams import load_hparams
from spanft.params.load import load_params
from spanft.params.profiles import use_profile
from spanft.params.schema import check_params, check_params_file

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def tree() -> dict:
    return load_params(ROOT / "params.yaml")


def test_params_yaml_is_the_embedded_profile():
    assert (ROOT / "params.yaml").read_bytes() == (ROOT / "profiles" / "embedded.yaml").read_bytes()


@pytest.mark.parametrize("name", ["embedded", "paper"])
def test_profiles_pass_the_check(name):
    tree = check_params_file(ROOT / "profiles" / f"{name}.yaml")
    assert tree["profile"] == name


def test_paper_profile_uses_the_paper_backbones_by_hub_id():
    tree = load_params(ROOT / "profiles" / "paper.yaml")
    assert tree["backbones"]["build"] == {} and tree["backbones"]["local"] == {}
    hub_ids = {spec["hub_id"] for spec in tree["backbones"]["hub"].values()}
    assert hub_ids == {"bert-base-uncased", "bert-large-uncased-whole-word-masking", "bert-large-uncased",
                       "roberta-large", "SpanBERT/spanbert-large-cased"}
    assert all(study["seeds"] == [1, 2, 3] for name, study in tree["studies"].items() if name != "dictsize")


def _error(tree: dict) -> str:
    with pytest.raises(SpanftError) as info:
        check_params(tree, "params.yaml")
    return str(info.value)


def test_typo_at_the_top_level_names_the_key_and_suggests(tree):
    tree["dict_sise"] = tree.pop("dict_size")
    message = _error(tree)
    assert "unknown key dict_sise" in message and "did you mean dict_size" in message


def test_typo_in_a_nested_key(tree):
    tree["corpus"]["tokns"] = 5
    assert "unknown key corpus.tokns (did you mean corpus.tokens?)" in _error(tree)


def test_typo_in_a_task_hparams_block(tree):
    tree["hparams"]["cola"] = dict(tree["hparams"]["cola"], learning_rate=1e-5)
    assert "unknown key hparams.cola.learning_rate" in _error(tree)


@pytest.mark.parametrize("size", [0, -5])
def test_dict_size_must_be_positive(tree, size):
    tree["dict_size"] = size
    assert "dict_size must be a positive" in _error(tree)


def test_wrong_type(tree):
    tree["dict_size"] = "big"
    assert "dict_size must be an integer, found 'big'" in _error(tree)


def test_unknown_profile_value(tree):
    tree["profile"] = "papr"
    assert "profile: 'papr' is not one of embedded, paper" in _error(tree)


def test_study_naming_an_undefined_backbone(tree):
    tree["studies"]["glue"]["backbones"] = ["bert-huge"]
    assert "studies.glue.backbones: 'bert-huge' is not defined under backbones" in _error(tree)


def test_unknown_task(tree):
    tree["tasks"] = tree["tasks"] + ["squad"]
    assert "unknown task 'squad'" in _error(tree)


def test_missing_key(tree):
    del tree["studies"]["ner"]
    assert "missing key studies.ner" in _error(tree)


def test_hub_backbone_needs_an_id(tree):
    tree["backbones"]["hub"]["bert"] = {"revision": "main"}
    assert "backbones.hub.bert needs hub_id" in _error(tree)


def test_a_backbone_name_under_two_sources(tree):
    tree["backbones"]["local"]["tiny"] = {"path": "models/tiny"}
    assert "backbone 'tiny' is defined under both backbones.build and backbones.local" in _error(tree)


def test_a_source_reads_only_its_own_settings(tree):
    tree["backbones"]["hub"]["bert"] = {"hub_id": "bert-base-uncased", "vocab_size": 10}
    assert "unknown key backbones.hub.bert.vocab_size" in _error(tree)


def test_invalid_yaml_names_file_and_line(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("profile: embedded\nwords: [unclosed\n", encoding="utf-8")
    with pytest.raises(SpanftError, match=r"params.yaml:\d+: not valid YAML"):
        load_params(bad)


def test_use_profile_copies_the_checked_file(tmp_path):
    shutil.copytree(ROOT / "profiles", tmp_path / "profiles")
    (tmp_path / "params.yaml").write_text("old", encoding="utf-8")
    use_profile("paper", tmp_path)
    assert (tmp_path / "params.yaml").read_bytes() == (ROOT / "profiles" / "paper.yaml").read_bytes()
    with pytest.raises(SpanftError, match="unknown profile 'gpu'; available profiles: embedded, paper"):
        use_profile("gpu", tmp_path)
    assert (tmp_path / "params.yaml").read_bytes() == (ROOT / "profiles" / "paper.yaml").read_bytes()


def test_stage_scripts_refuse_a_params_file_with_a_typo(tmp_path):
    tree = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    bad = copy.deepcopy(tree)
    bad["studies"]["glue"]["seed"] = bad["studies"]["glue"].pop("seeds")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(bad), encoding="utf-8")
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(ROOT / "pipeline" / "prepare_task.py"), "cola", "out"], cwd=tmp_path,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "spanft: error: params.yaml: unknown key studies.glue.seed (did you mean studies.glue.seeds?); "
        "valid keys here: backbones, tasks, seeds"
    ]


def test_hparams_block_is_read_and_checked(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("hparams:\n  cola: {epochs: 2, lr: 5e-4, max_seq_len: 64}\n", encoding="utf-8")
    assert load_hparams(f"{path}:hparams.cola") == {"epochs": 2, "lr": 5e-4, "max_seq_len": 64}
    with pytest.raises(SpanftError, match="key hparams.sst2 not found"):
        load_hparams(f"{path}:hparams.sst2")
    path.write_text("hparams:\n  cola: {epochs: two}\n", encoding="utf-8")
    with pytest.raises(SpanftError, match="hparams.cola.epochs: expected int, found 'two'"):
        load_hparams(f"{path}:hparams.cola")
    with pytest.raises(SpanftError, match="expected FILE:KEY"):
        load_hparams("params.yaml")
