"""The typed plan: one definition of the runs, the variants and the hyper-parameters, and dvc.yaml held to it."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from itertools import product
from pathlib import Path

import pytest
import yaml

from spanft.cli import build_parser
from spanft.errors import SpanftError
from spanft.params.hparams import HPARAM_FIELDS, HParams
from spanft.params.load import load_params
from spanft.params.plan import VARIANTS, load_plan, plan_from_tree
from spanft.stage.dvc_yaml import (
    BEGIN,
    finetune_section,
    section_in,
    write_finetune_section,
)
from spanft.train.options import MODEL_VARIANTS, SETTINGS_ORDER, FinetuneOptions

ROOT = Path(__file__).resolve().parents[1]
PROFILES = sorted(p.stem for p in (ROOT / "profiles").glob("*.yaml"))


def test_dvc_yaml_fine_tuning_groups_are_the_variant_table():
    assert section_in(ROOT / "dvc.yaml") == finetune_section()
    groups = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert [g for g in groups if g in {v.group for v in VARIANTS}] == [v.group for v in VARIANTS]


def test_dvc_yaml_command_rewrites_a_stale_section(tmp_path):
    stale = tmp_path / "dvc.yaml"
    text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    stale.write_text(text.replace("/sf/seed${item.seed}", "/SF/seed${item.seed}", 1), encoding="utf-8")
    check = [sys.executable, "-m", "spanft.cli", "dvc-yaml", str(stale), "--check"]
    refused = subprocess.run(check, capture_output=True, text=True, cwd=ROOT)
    assert refused.returncode == 1 and "differ from the variant table" in refused.stderr
    assert write_finetune_section(stale) is True
    assert stale.read_text(encoding="utf-8") == text
    assert write_finetune_section(stale) is False
    crlf = text.replace("/sf/seed${item.seed}", "/SF/seed${item.seed}", 1).replace("\n", "\r\n").encode()
    stale.write_bytes(crlf)
    assert write_finetune_section(stale) is True
    assert stale.read_bytes() == text.replace("\n", "\r\n").encode()  # the rest and its line ends kept
    stale.write_text("stages: {}\n", encoding="utf-8")
    missing = subprocess.run(check, capture_output=True, text=True, cwd=ROOT)
    assert missing.returncode == 2
    assert "'fine-tuning groups' is not one clear block: no begin markers; no end markers" in missing.stderr
    stale.write_text(text + text[text.index(BEGIN):], encoding="utf-8")
    with pytest.raises(SpanftError, match=r"2 begin markers \(lines \d+, \d+\); 2 end markers"):
        write_finetune_section(stale)


@pytest.mark.parametrize("profile", PROFILES)
def test_planned_runs_are_each_study_expanded_by_hand(profile):
    """Against a direct reading of params: every study's backbones x tasks x seeds x its variants' names."""
    tree = load_params(ROOT / "profiles" / f"{profile}.yaml")
    plan = plan_from_tree(tree)
    studies, sizes = tree["studies"], tree["dict_sizes"]
    names = {"glue": ["baseline", "sf"], "backbones": ["baseline", "sf"], "ner": ["baseline", "sf"],
             "snli": ["baseline", "sf", *(f"sf-{e}" for e in studies["snli"]["encoders"])],
             "ablation": ["cnn-noseg", "random-seg", "chunker-seg"],
             "dictsize": [f"{m}-{s}" for m in studies["dictsize"]["methods"] for s in sizes]}
    tasks = {"snli": ["snli"], "ner": ["conll2003"]}
    expected = {(study, b, t, v, s) for study, spec in studies.items()
                for b, t, s, v in product(spec["backbones"], tasks.get(study, spec.get("tasks")), spec["seeds"],
                                          names[study])}
    keys = [run.key() for run in plan.runs()]
    assert len(keys) == len(set(keys)) and set(keys) == expected


def test_every_variant_is_a_model_variant_with_its_input():
    assert {v.finetune for v in VARIANTS} <= set(MODEL_VARIANTS)
    plan = load_plan(ROOT / "profiles" / "embedded.yaml")
    for run in plan.runs():
        prepared = run.data.startswith("data/tasks/")
        assert prepared == (run.finetune_variant in ("baseline", "cnn-noseg")), run
        assert run.out.endswith(f"/{run.variant}/seed{run.seed}") and run.task in run.data


def test_hyper_parameters_have_one_definition():
    """Defaults, help and flags: the CLI and the run options read HParams' fields."""
    fields = {f.name: f for f in dataclasses.fields(HParams)}
    assert set(fields) == set(HPARAM_FIELDS) and all(f.metadata["help"] for f in fields.values())
    options = FinetuneOptions(task="cola", backbone="b", variant="sf", data="d", out="o")
    assert all(getattr(options, name) == f.default for name, f in fields.items())
    finetune = build_parser()._subparsers._group_actions[0].choices["finetune"]
    flags = {a.dest: a for a in finetune._actions}
    for name, spec in fields.items():
        assert flags[name].default is None and flags[name].help.startswith(spec.metadata["help"]), name
    skipped = {"out", "checkpoint_dir", "extra_callbacks",
               "threads"}  # recorded as the count it resolved to: metrics.json and the checkpoint marker "threads"
    assert sorted(SETTINGS_ORDER) == sorted(f.name for f in dataclasses.fields(FinetuneOptions)
                                            if f.name not in skipped)


def test_a_task_block_sets_only_what_it_names():
    plan = load_plan(ROOT / "profiles" / "embedded.yaml")
    block = yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))["hparams"]["cola"]
    hparams = plan.hparams["cola"]
    assert all(getattr(hparams, key) == value for key, value in block.items())
    assert hparams.dropout == HParams().dropout and "dropout" not in block
    with pytest.raises(dataclasses.FrozenInstanceError):
        hparams.lr = 1.0  # type: ignore[misc]


def test_errors_name_the_file_once_where_params_are_read(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8").replace("batch_size: 16", "batch_size: 0"),
                   encoding="utf-8")
    with pytest.raises(SpanftError) as error:
        load_plan(bad)
    assert str(error.value) == f"{bad}: hparams.sst2.batch_size: must be at least 1, found 0"  # the first block
    plan = load_plan(ROOT / "profiles" / "embedded.yaml")
    with pytest.raises(SpanftError, match=rf"^{ROOT / 'profiles' / 'embedded.yaml'}: studies.glue plans no run tiny/cola/sf/seed9$"):
        plan.find_run("glue", "tiny", "cola", "sf", 9)


def test_every_embedded_run_draws_a_training_curve_of_at_least_ten_points():
    """The curves are worth plotting: each run of the embedded profile logs its training loss at least ten times
    (every log_every_steps optimizer steps; its steps counted by the cost model from the task's size)."""
    from spanft.cost.model import train_steps

    plan = load_plan(ROOT / "profiles" / "embedded.yaml")
    points = {run.task: train_steps(run.task, plan) // plan.hparams[run.task].log_every_steps for run in plan.runs()}
    assert points and min(points.values()) >= 10, points
