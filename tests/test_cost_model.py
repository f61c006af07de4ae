"""The arithmetic of benchmarks/cost_model.py: run counts per study, steps, GPU-hours, the measured overhead."""

from __future__ import annotations

import copy
import importlib.util
import math
import sys
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from spanft.errors import SpanftError
from spanft.params.load import load_params
from spanft.params.plan import Plan, plan_from_tree
from spanft.params.schema import check_params

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("cost_model", ROOT / "benchmarks" / "cost_model.py")
cost_model = importlib.util.module_from_spec(_spec)
sys.modules["cost_model"] = cost_model  # dataclasses look their module up while the file executes
_spec.loader.exec_module(cost_model)

GLUE8 = ["cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte"]
HP = {"epochs": 3, "lr": 2e-5, "batch_size": 32, "max_seq_len": 128}


@lru_cache(maxsize=1)
def _paper_tree() -> dict:
    return load_params(ROOT / "profiles" / "paper.yaml")


def params_tree(**blocks) -> dict:
    """profiles/paper.yaml with the given top-level blocks replaced; with ``studies``, the studies it leaves out
    get no backbones (they run nothing), the others take its keys over the profile's."""
    tree = copy.deepcopy(_paper_tree())
    studies = blocks.pop("studies", None)
    tree.update(copy.deepcopy(blocks))
    if studies is not None:
        for name, spec in tree["studies"].items():
            spec.update(copy.deepcopy(studies[name]) if name in studies else {"backbones": []})
    defined = {name for group in tree["backbones"].values() for name in (group or {})}
    names = tree["reports"]["paper_names"]  # labels of the profile's backbones that these blocks replaced go too
    tree["reports"]["paper_names"] = {name: label for name, label in names.items() if name in defined}
    return tree


def plan_of(tree: dict) -> Plan:
    """The plan of a params tree, after the full schema check (what load_plan does with a file)."""
    check_params(tree, "test.yaml")
    return plan_from_tree(tree, "test.yaml")


def paper_like_tree() -> dict:
    """The paper profile's studies, backbones and sizes, written out here."""
    return params_tree(**{
        "profile": "paper",
        "dict_sizes": [20000, 50000, 100000, 200000, 300000, 400000],
        "backbones": {"build": {}, "local": {}, "hub": {
            "bert-base": {"hub_id": "bert-base-uncased"},
            "bert-large-wwm": {"hub_id": "bert-large-uncased-whole-word-masking"},
            "bert-large": {"hub_id": "bert-large-uncased"},
            "roberta-large": {"hub_id": "roberta-large"},
            "spanbert-large": {"hub_id": "SpanBERT/spanbert-large-cased"},
        }},
        "hparams": {task: dict(HP) for task in [*GLUE8, "wnli", "snli", "conll2003"]},
        "studies": {
            "glue": {"backbones": ["bert-base", "bert-large-wwm"], "tasks": [*GLUE8, "wnli"], "seeds": [1, 2, 3]},
            "backbones": {"backbones": ["spanbert-large", "roberta-large"], "tasks": GLUE8, "seeds": [1, 2, 3]},
            "snli": {"backbones": ["bert-large-wwm"], "seeds": [1, 2, 3],
                     "encoders": ["cnn-max", "attention-max", "attention-attention"]},
            "ablation": {"backbones": ["bert-base"], "tasks": GLUE8, "seeds": [1, 2, 3]},
            "ner": {"backbones": ["bert-base", "bert-large"], "seeds": [1, 2, 3]},
            "dictsize": {"backbones": ["bert-base"], "tasks": ["cola", "mrpc"], "seeds": [1], "methods": ["ngram", "random"]},
        },
    })


def paper_like_plan() -> Plan:
    return plan_of(paper_like_tree())


def test_run_counts_follow_each_studys_variants():
    table = cost_model.cost_table(paper_like_plan(), cost_model.Assumptions(100, 3, 1.1))
    counts = table.groupby("study").size().to_dict()
    assert counts == {
        "glue": 2 * 9 * 3 * 2,  # backbones x tasks x seeds x (baseline, sf)
        "backbones": 2 * 8 * 3 * 2,
        "snli": 1 * 3 * (2 + 3),  # baseline, sf and the three other encoders
        "ablation": 1 * 8 * 3 * 3,  # cnn-noseg, random-seg, chunker-seg
        "ner": 2 * 3 * 2,
        "dictsize": 1 * 2 * 1 * 2 * 6,  # tasks x seeds x methods x sizes
    }
    assert set(table.loc[table.study == "dictsize", "variant"]) == {f"{m}-{s}" for m in ("ngram", "random")
                                                                    for s in (20000, 50000, 100000, 200000, 300000, 400000)}
    assert set(table.loc[table.study == "ner", "task"]) == {"conll2003"}
    assert dict(zip(table.backbone, table["size"])) == {"bert-base": "base", "bert-large-wwm": "large", "bert-large": "large",
                                                        "roberta-large": "large", "spanbert-large": "large"}


def test_gpu_hours_by_hand():
    plan = plan_of(params_tree(
        backbones={"build": {}, "local": {},
                   "hub": {"b": {"hub_id": "bert-base-uncased"}, "l": {"hub_id": "bert-large-uncased"}}},
        hparams={"rte": {"epochs": 3, "batch_size": 32, "max_seq_len": 128}},
        studies={"glue": {"backbones": ["b", "l"], "tasks": ["rte"], "seeds": [1, 2]}},
    ))
    table = cost_model.cost_table(plan, cost_model.Assumptions(100.0, 3.0, 1.5, eval_fraction=0.1))
    steps = math.ceil(2490 / 32) * 3
    assert steps == 234 and set(table.steps) == {234}
    one = 234 * 0.100 * 1.1 / 3600  # hours of one base baseline run: 234 steps of 0.1 s, +10% evaluation
    expected = {("b", "baseline"): one, ("b", "sf"): one * 1.5, ("l", "baseline"): one * 3, ("l", "sf"): one * 4.5}
    for row in table.itertuples():
        assert row.gpu_hours == pytest.approx(expected[(row.backbone, row.variant)])
    assert table.gpu_hours.sum() == pytest.approx(2 * one * (1 + 1.5) * (1 + 3))


def test_batch_and_length_scale_the_step_time_by_tokens():
    plan = plan_of(params_tree(backbones={"build": {}, "local": {}, "hub": {"x": {"hub_id": "some/base-model"}}},
                               hparams={"mrpc": {"epochs": 2, "batch_size": 16, "max_seq_len": 256}},
                               studies={"glue": {"backbones": ["x"], "tasks": ["mrpc"], "seeds": [1]}}))
    table = cost_model.cost_table(plan, cost_model.Assumptions(80.0, 3.0, 1.2, eval_fraction=0.0))
    baseline = table[table.variant == "baseline"].iloc[0]
    assert baseline.steps == math.ceil(3668 / 16) * 2 == 460
    assert baseline.step_ms == pytest.approx(80.0)  # 16 x 256 = 32 x 128 tokens
    assert table[table.variant == "sf"].iloc[0].step_ms == pytest.approx(96.0)


def test_measured_overhead_prefers_a_gpu_row(tmp_path):
    results = tmp_path / "RESULTS.md"
    minilm = "| training step, all-MiniLM-L6-v2, CPU, batch 16 x 128: sf / baseline | 1146.0 / 1034.3 ms = 1.11 | CPU |"
    results.write_text(f"| measure | figure |\n|---|---|\n{minilm}\n")
    ratio, where = cost_model.measured_sf_overhead(results)
    assert ratio == pytest.approx(1146.0 / 1034.3) and "MiniLM" in where
    gpu = "| training step, bert-base config, GPU (H100), batch 32 x 128: sf / baseline | 99.0 / 90.0 ms = 1.10 | |"
    results.write_text(f"{minilm}\n{gpu}\n")
    assert cost_model.measured_sf_overhead(results)[0] == pytest.approx(1.1)
    results.write_text("| training step, bert-base config, GPU, batch 32 x 128 | not run |\n")
    with pytest.raises(cost_model.CostModelError, match="--sf-overhead"):
        cost_model.measured_sf_overhead(results)


def test_the_repository_results_hold_a_measured_ratio():
    ratio, _ = cost_model.measured_sf_overhead()
    assert 1.0 < ratio < 2.0


def test_errors_name_the_bad_key(tmp_path, capsys):
    """A params file the plan refuses: the schema's one-line error, naming the file and the key."""
    path = tmp_path / "paper.yaml"
    tree = paper_like_tree()
    del tree["hparams"]["qqp"]
    path.write_text(yaml.safe_dump(tree, sort_keys=False))
    with pytest.raises(SpanftError, match=r"paper\.yaml: hparams\.qqp is missing \(studies\.glue fine-tunes qqp\)"):
        cost_model.load_plan(path)
    assert cost_model.main(["--gpu", "x", "--step-ms-base", "110", "--large-factor", "3.2", "--sf-overhead", "1.1",
                            "--params", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cost_model: error: " in err and "hparams.qqp is missing" in err
    tree = paper_like_tree()
    tree["studies"]["extra"] = {"backbones": ["bert-base"], "tasks": ["cola"], "seeds": [1]}
    path.write_text(yaml.safe_dump(tree, sort_keys=False))
    with pytest.raises(SpanftError, match=r"paper\.yaml: unknown key studies\.extra"):
        cost_model.load_plan(path)


def test_cli_prints_every_study_and_the_total(tmp_path, capsys):
    path = tmp_path / "paper.yaml"
    path.write_text(yaml.safe_dump(paper_like_tree()))
    assert cost_model.main(["--gpu", "A100 80GB", "--step-ms-base", "110", "--large-factor", "3.2",
                            "--sf-overhead", "1.1", "--params", str(path)]) == 0
    out = capsys.readouterr().out
    for study in ("glue", "backbones", "snli", "ablation", "ner", "dictsize", "total"):
        assert f"## {study}" in out
    table = cost_model.cost_table(paper_like_plan(), cost_model.Assumptions(110, 3.2, 1.1))
    total_line = next(line for line in out.splitlines() if line.split()[:1] == ["total"])
    assert total_line.split() == ["total", str(len(table)), f"{table.gpu_hours.sum():,.1f}"]
    assert cost_model.main(["--gpu", "x", "--step-ms-base", "110", "--large-factor", "3.2",
                            "--params", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml: params file not found" in capsys.readouterr().err


def test_wall_clock_fills_the_gpus_in_submission_order():
    """Hand-worked: runs 3, 1, 1, 1, 2 h on 2 GPUs in order: GPU a takes 3; b takes 1, 1, 1 (ends at 3); the
    2 h run goes to the first free one at 3 h: 5 h, where sorting the runs first would have given 4 h."""
    assert cost_model.wall_clock_hours([3, 1, 1, 1, 2], 2) == 5
    assert cost_model.wall_clock_hours([3, 1, 1, 1, 2], 1) == 8
    assert cost_model.wall_clock_hours([1.5] * 16, 8) == 3
    assert cost_model.wall_clock_hours([], 8) == 0
