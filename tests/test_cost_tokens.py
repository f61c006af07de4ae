"""The cost model's measured inputs: step-time lines fitted to GPU timings, tokens per step from real lengths."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from spanft.model.features import length_grouped_order
from spanft.params.load import load_params
from spanft.params.plan import plan_from_tree
from spanft.params.schema import check_params

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("cost_model", ROOT / "benchmarks" / "cost_model.py")
cost_model = importlib.util.module_from_spec(_spec)
sys.modules["cost_model"] = cost_model  # dataclasses look their module up while the file executes
_spec.loader.exec_module(cost_model)


def timing_rows(prefix: str, fixed: float, per_token: float, ratio: float) -> dict:
    rows = {}
    for name, tokens in ((f"{prefix} 32x128", 4096), (f"{prefix} 32x32", 1024), (f"{prefix}-grouped grouped", 900)):
        baseline = (fixed + per_token * tokens) / 1000
        rows[name] = {"baseline_mean_s": baseline, "sf_mean_s": baseline * ratio, "tokens_per_step": tokens,
                      "device": "GPU X"}
    return rows


def test_fit_recovers_a_line_and_flattens_a_falling_one():
    fit = cost_model.fit_step_times(timing_rows("bert-base-gpu", 20.0, 0.004, 1.05), "base")
    assert fit.fixed_ms == pytest.approx(20.0) and fit.per_token_ms == pytest.approx(0.004)
    assert fit.sf_overhead == pytest.approx(1.05) and fit.points == 3 and fit.device == "GPU X"
    falling = timing_rows("bert-large-gpu", 70.0, -0.001, 1.02)
    flat = cost_model.fit_step_times(falling, "large")
    want = np.mean([row["baseline_mean_s"] * 1000 for row in falling.values()])
    assert flat.per_token_ms == 0.0 and flat.fixed_ms == pytest.approx(want)
    with pytest.raises(cost_model.CostModelError, match="bert-large-gpu"):
        cost_model.fit_step_times(timing_rows("bert-base-gpu", 20.0, 0.004, 1.05), "large")


def test_tokens_per_step_are_those_of_the_trainers_batches():
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 300, size=1000)
    assumptions = cost_model.Assumptions(100.0, 3.0, 1.0, lengths={"rte": lengths})
    got = cost_model.tokens_per_step("rte", 16, 128, assumptions)
    capped = np.minimum(lengths, 128)
    order = length_grouped_order(capped, 16, 0, 0)
    batches = [order[i : i + 16] for i in range(0, len(order), 16)]
    assert got == pytest.approx(np.mean([len(b) * max(capped[i] for i in b) for b in batches]))
    assert cost_model.tokens_per_step("mrpc", 16, 128, assumptions) == 16 * 128  # no lengths: the cap


def rte_tree(hub: dict, glue_backbones: list[str], hparams: dict) -> dict:
    """profiles/paper.yaml running only the glue study's rte, on these hub backbones and rte hyper-parameters."""
    tree = load_params(ROOT / "profiles" / "paper.yaml")
    tree["backbones"] = {"build": {}, "hub": hub, "local": {}}
    tree["reports"]["paper_names"] = {}  # the profile's labels name its own backbones, replaced here
    tree["hparams"]["rte"] = hparams
    for spec in tree["studies"].values():
        spec["backbones"] = []
    tree["studies"]["glue"].update(backbones=glue_backbones, tasks=["rte"], seeds=[1])
    check_params(tree, "test.yaml")
    return tree


def test_step_time_keeps_its_fixed_share_and_scales_the_rest_by_tokens():
    lengths = np.full(2490, 40)  # every rte example 40 sub-tokens: batches of 32 x 40
    params = plan_from_tree(rte_tree({"l": {"hub_id": "bert-large-uncased"}}, ["l"],
                                     {"epochs": 3, "batch_size": 32, "max_seq_len": 128}))
    assumptions = cost_model.Assumptions(50.0, 2.0, 1.1, eval_fraction=0.0, fixed_share={"large": 0.6},
                                         lengths={"rte": lengths})
    table = cost_model.cost_table(params, assumptions)
    tokens = (2490 // 32 * 32 * 40 + (2490 % 32) * 40) / math.ceil(2490 / 32)
    baseline_ms = 50.0 * 2.0 * (0.6 + 0.4 * tokens / 4096)
    assert table.set_index("variant").loc["baseline", "step_ms"] == pytest.approx(baseline_ms)
    assert table.set_index("variant").loc["sf", "step_ms"] == pytest.approx(baseline_ms * 1.1)


def test_cli_with_timings_needs_no_step_time_and_says_what_was_measured(tmp_path, capsys):
    timings = tmp_path / "step.json"
    timings.write_text(json.dumps({**timing_rows("bert-base-gpu", 30.0, 0.001, 1.04),
                                   **timing_rows("bert-large-gpu", 60.0, 0.003, 1.02)}))
    params = tmp_path / "p.yaml"
    params.write_text(json.dumps(rte_tree({"b": {"hub_id": "some/base-model"}}, ["b"],
                                          {"epochs": 1, "batch_size": 32, "max_seq_len": 128})))
    assert cost_model.main(["--timings", str(timings), "--params", str(params)]) == 0
    out = capsys.readouterr().out
    assert "GPU X" in out and "base step 30.0 ms" in out and "large 60.0 ms" in out
    assert "tasks without lengths: batch x max_seq_len (assumed upper bound)" in out
    assert cost_model.main(["--params", str(params)]) == 2
    assert "--gpu is required without --timings" in capsys.readouterr().err
