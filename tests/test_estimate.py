"""``spanft plan`` (spanft.cost.estimate): run counts, hours per device, parameters, disk, fan-out jobs, the
README's table, and an answer in seconds."""

from __future__ import annotations

import copy
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from spanft.cluster.startups import fanout_startup
from spanft.cost.estimate import (
    CHECKPOINT_BYTES,
    bert_parameters,
    device_hours,
    device_steps,
    estimate_lines,
    fanout_jobs,
    profile_table,
    runs_table,
)
from spanft.params.load import load_params
from spanft.params.plan import plan_from_tree
from spanft.params.schema import check_params
from spanft.readme import FIX, find_block

ROOT = Path(__file__).resolve().parents[1]
EMBEDDED = load_params(ROOT / "profiles" / "embedded.yaml")


def _plan(tree: dict):
    check_params(tree, "test.yaml")
    return plan_from_tree(tree, "test.yaml")


def _only_glue(tree: dict, backbones: list[str], tasks: list[str], seeds: list[int]) -> dict:
    tree = copy.deepcopy(tree)
    for spec in tree["studies"].values():
        spec["backbones"] = []
    tree["studies"]["glue"].update(backbones=backbones, tasks=tasks, seeds=seeds)
    return tree


def _spanft(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spanft.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_plan_answers_in_seconds_with_the_paper_profiles_run_count():
    tree = load_params(ROOT / "profiles" / "paper.yaml")
    s = tree["studies"]
    n = {name: (len(spec["backbones"]), len(spec.get("tasks", [])), len(spec["seeds"])) for name, spec in s.items()}
    by_hand = (n["glue"][0] * n["glue"][1] * n["glue"][2] * 2 + n["backbones"][0] * n["backbones"][1] * n["backbones"][2] * 2
               + n["snli"][0] * n["snli"][2] * (2 + len(s["snli"]["encoders"]))
               + n["ablation"][0] * n["ablation"][1] * n["ablation"][2] * 3 + n["ner"][0] * n["ner"][2] * 2
               + n["dictsize"][0] * n["dictsize"][1] * n["dictsize"][2] * len(s["dictsize"]["methods"])
               * len(tree["dict_sizes"]))
    start = time.perf_counter()
    done = _spanft("plan", "profiles/paper.yaml")
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    assert seconds < 5, seconds
    assert f"profile paper, {by_hand:,} fine-tuning runs" in done.stdout
    for device in ("H100", "A100", "CPU"):
        assert re.search(rf"^  {device}: ", done.stdout, re.M)
    assert f"Fan-out (spanft fanout, from an empty cache): {by_hand + 1} jobs" in done.stdout


def _write_steps(root: Path, name: str, rows: dict) -> None:
    (root / "benchmarks/results").mkdir(parents=True, exist_ok=True)
    (root / "benchmarks/results" / name).write_text(json.dumps(rows))


def test_cpu_hours_by_hand_from_the_measured_row(tmp_path):
    _write_steps(tmp_path, "step_cpu.json", {"tiny 32x128": {"baseline_mean_s": 0.2, "sf_mean_s": 0.25,
                                                             "tokens_per_step": 4096, "device": "cpu"}})
    plan = _plan(_only_glue(EMBEDDED, ["tiny"], ["rte"], [1, 2]))
    hp = EMBEDDED["hparams"]["rte"]
    steps = math.ceil(EMBEDDED["data"]["synthetic"]["train_size"] / hp["batch_size"]) * hp["epochs"]
    baseline_s = 0.2 * hp["batch_size"] * hp["max_seq_len"] / 4096  # linear in tokens through one row
    want = 2 * steps * (baseline_s + 1.25 * baseline_s) * 1.10 / 3600  # 2 seeds x (baseline + sf), +10% eval
    cpu = next(d for d in device_steps(tmp_path) if d.name == "CPU")
    hours, missing = device_hours(runs_table(plan), cpu)
    assert hours == pytest.approx(want) and missing == []
    h100 = next(d for d in device_steps(tmp_path) if d.name == "H100")
    assert device_hours(runs_table(plan), h100) == (0.0, ["tiny"]) and "not found" in h100.source


def test_a_capped_training_set_counts_only_its_examples(tmp_path):
    tree = _only_glue(EMBEDDED, ["tiny"], ["cola"], [1])
    tree["hparams"]["cola"]["max_train_examples"] = 100
    runs = runs_table(_plan(tree))
    assert set(runs["steps"]) == {math.ceil(100 / tree["hparams"]["cola"]["batch_size"]) * tree["hparams"]["cola"]["epochs"]}


def test_a_gpu_line_through_two_rows(tmp_path):
    rows = {f"bert-base-gpu 32x{n}": {"baseline_mean_s": (20 + 0.004 * 32 * n) / 1000,
                                      "sf_mean_s": 1.1 * (20 + 0.004 * 32 * n) / 1000, "tokens_per_step": 32 * n}
            for n in (32, 128)}
    _write_steps(tmp_path, "step_h100.json", rows)
    h100 = next(d for d in device_steps(tmp_path) if d.name == "H100")
    assert h100.step_ms("base", 2048, False) == pytest.approx(20 + 0.004 * 2048)
    assert h100.step_ms("base", 2048, True) == pytest.approx(1.1 * (20 + 0.004 * 2048))
    a100 = next(d for d in device_steps(tmp_path) if d.name == "A100")
    ratio = 989 / 312  # NVIDIA's datasheets: dense BF16 tensor peaks, H100 SXM over A100 SXM (TFLOPS)
    assert a100.step_ms("base", 2048, False) == pytest.approx(ratio * (20 + 0.004 * 2048))
    assert a100.step_ms("base", 2048, True) == pytest.approx(ratio * 1.1 * (20 + 0.004 * 2048))
    assert a100.step_ms("large", 4096, True) is None  # no H100 large row: nothing to scale
    assert "x 3.17" in a100.source and "989 / A100 SXM 312 TFLOPS" in a100.source and "not measured" in a100.source


def test_a_backbone_of_unknown_shape_prints_no_disk_figure(tmp_path):
    tree = yaml.safe_load((ROOT / "profiles" / "small.yaml").read_text(encoding="utf-8"))
    tree["backbones"]["local"]["minilm"]["path"] = str(tmp_path / "nowhere")  # no config.json to read
    lines = estimate_lines(_plan(tree), ROOT, "small.yaml")
    disk = [line for line in lines if line.startswith("Disk")]
    assert disk == ["Disk: not estimated: shape not known for minilm (no config.json at its path here)"]
    assert not any("0.00 GB" in line for line in lines)


def test_malformed_step_times_are_one_line(tmp_path):
    _write_steps(tmp_path, "step_cpu.json", {})
    (tmp_path / "benchmarks/results/step_cpu.json").write_text("{not json")
    done = _spanft("plan", "--root", str(tmp_path))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("spanft: error: ") and "step_cpu.json: cannot be read as JSON" in done.stderr


@settings(max_examples=6, deadline=None)
@given(vocab=st.integers(10, 300), heads=st.integers(1, 4), head_dim=st.integers(1, 8), layers=st.integers(0, 3),
       intermediate=st.integers(1, 64), positions=st.integers(2, 80), types=st.integers(1, 3))
def test_bert_parameters_equal_transformers_count(vocab, heads, head_dim, layers, intermediate, positions, types):
    from transformers import BertConfig, BertModel

    hidden = heads * head_dim
    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=intermediate, max_position_embeddings=positions, type_vocab_size=types)
    model = BertModel(config, add_pooling_layer=True)
    assert bert_parameters(vocab, hidden, layers, intermediate, positions, types) == model.num_parameters()


def test_disk_and_fanout_follow_the_backbones_and_runs():
    plan = _plan(_only_glue(EMBEDDED, ["tiny"], ["rte", "cola"], [1]))
    tiny = EMBEDDED["backbones"]["build"]["tiny"]
    params = bert_parameters(tiny["vocab_size"], tiny["hidden"], tiny["layers"], tiny["intermediate"], tiny["max_len"], 2)
    text = "\n".join(estimate_lines(plan, ROOT, "test.yaml"))
    assert fanout_jobs(plan) == 2 * 2 + 1  # tasks x (baseline, sf), and Table 3's step cost
    assert f"{params / 1e6:,.1f}M parameters" in text
    assert f"up to {CHECKPOINT_BYTES * params / 1e9:,.2f} GB a job" in text
    tree = _only_glue(EMBEDDED, [], [], [1])
    tree["studies"]["ner"]["backbones"] = ["tiny"]
    no_glue = _plan(tree)
    assert fanout_jobs(no_glue) == len(no_glue.runs())  # no glue runs: no step-cost job


def test_the_readme_quotes_the_estimate_of_every_profile():
    block = find_block((ROOT / "README.md").read_text(encoding="utf-8"), "plan")
    assert block == profile_table(ROOT), f"README.md's plan table is stale; {FIX}. It should read:\n" + profile_table(ROOT)


@pytest.mark.parametrize("startup", [1, 60, 3600])
def test_plan_says_from_how_many_jobs_at_once_the_fanout_beats_serial(startup):
    from spanft.cost.estimate import run_hours

    tree = copy.deepcopy(EMBEDDED)
    tree["cluster"]["startup_s"] = startup
    plan = _plan(tree)
    cpu = next(device for device in device_steps(ROOT) if device.name == "CPU")
    runs = [run_hours(run, plan, cpu) * 3600 for run in plan.runs()]
    serial = sum(runs)
    # by brute force: the fewest jobs at once whose even spread of runs and start-ups ends before serial does
    wins = [p for p in range(1, len(runs) + 1) if max((serial + len(runs) * startup) / p, max(runs) + startup) < serial]
    line = next(line for line in estimate_lines(plan, ROOT, "test.yaml") if line.startswith("  CPU: serial"))
    if wins:
        assert f"faster than serial from {wins[0]} jobs at once" in line, line
    else:
        assert "never faster than serial" in line and "use dvc repro" in line, line


def test_plan_counts_the_start_up_the_jobs_recorded_where_it_is_longer(tmp_path):
    tree = copy.deepcopy(EMBEDDED)
    tree["cluster"].update({"startup_s": 1, "folder": str(tmp_path)})
    (tmp_path / "startups.tsv").write_text("1700000000\tlocal\tglue_sf@x\t42\tn1\t3600\ttrained\n")
    plan = _plan(tree)
    line = next(line for line in estimate_lines(plan, ROOT, "t.yaml", fanout_startup(plan, ROOT))
                if line.startswith("  CPU: serial"))
    tree["cluster"].update({"startup_s": 3600, "folder": str(tmp_path / "none")})
    plan = _plan(tree)
    guessed = next(line for line in estimate_lines(plan, ROOT, "t.yaml", fanout_startup(plan, ROOT))
                   if line.startswith("  CPU: serial"))
    assert "(3600 s start-up a job, the slowest of the jobs' recent start-ups in " in line
    assert line.split(" start-up a job")[0] == guessed.split(" start-up a job")[0]  # the same figures
