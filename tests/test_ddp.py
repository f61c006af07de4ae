"""``spanft finetune`` under two CPU processes (gloo): torchrun and ``accelerate launch --multi_gpu``.

The comparison with one process is sharp because the two runs see the same optimiser steps: the same 16
examples per step (accelerate shards one seeded permutation, process i taking batches i, i+2, ...; 64 training
examples leave no partial batch), the same initial weights, and no dropout (backbone and head dropout set to
0, so no per-process random masks). What remains is float summation order: DDP averages two 8-example mean
gradients where one process takes one 16-example mean, relative differences of ~1e-7 per step. Over 8 AdamW
steps they stay near 1e-7 (measured); the tolerance is 1e-4 relative on losses, and the accuracy may move by
one example at most (a prediction whose two logits tie to ~1e-6 could flip).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spanft.data.registry import get_task
from spanft.train.finetune import run_finetune
from spanft.train.options import FinetuneOptions

dist = pytest.importorskip("torch.distributed")
if not (dist.is_available() and dist.is_gloo_available()):
    pytest.skip("torch.distributed with the gloo backend is not available in this torch build", allow_module_level=True)

SIZES = dict(train=64, eval=37, test=21)  # 37 and 21: the last eval batch of each process is padded
HPARAMS = dict(epochs=2, lr=2e-3, eval_batch_size=16, max_seq_len=64, dropout=0.0, seed=3)
PER_DEVICE, PROCESSES = 8, 2


def _random_spans(words, rng: np.random.Generator) -> list[int]:
    spans, left = [], len(words)
    while left:
        spans.append(int(min(left, rng.integers(1, 5))))
        left -= spans[-1]
    return spans


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """Segmented sst2 and conll2003 data and a tiny backbone without dropout."""
    from spanft.data.columns import SyntheticSizes
    from spanft.data.prepare import load_task, write_prepared
    from spanft.model.build import BackboneConfig, make_backbone

    root = tmp_path_factory.mktemp("ddp")
    rng = np.random.default_rng(0)
    lines = []
    for name in ("sst2", "conll2003"):
        write_prepared(load_task(name, "synthetic", sizes=SyntheticSizes(**SIZES)), root / "prepared" / name)
        (root / "segmented" / name).mkdir(parents=True)
        for file in sorted((root / "prepared" / name).glob("*.parquet")):
            frame = pd.read_parquet(file)
            lines += [" ".join(words) for words in frame["words_a"]]
            frame["spans_a"] = [_random_spans(words, rng) for words in frame["words_a"]]
            frame.to_parquet(root / "segmented" / name / file.name)
    (root / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = BackboneConfig(vocab_size=800, hidden=32, layers=1, heads=2, intermediate=64, max_len=128, mlm_steps=0)
    make_backbone(root / "corpus.txt", root / "backbone", cfg)
    config_file = root / "backbone" / "config.json"
    config = json.loads(config_file.read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    config_file.write_text(json.dumps(config))
    return root


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _finetune_args(root: Path, task: str, out: Path, batch_size: int) -> list[str]:
    args = ["finetune", "--task", task, "--variant", "sf", "--backbone", str(root / "backbone"),
            "--data", str(root / "segmented" / task), "--out", str(out), "--batch-size", str(batch_size)]
    for key, value in HPARAMS.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args


def _launch(launcher: list[str], args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run([sys.executable, *launcher, "-m", "spanft.cli", *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _torchrun(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return _launch(["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(PROCESSES)], args, cwd)


def _accelerate(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("accelerate")
    # `--cpu --num_processes 2` would start ONE process (accelerate's multi-CPU path needs mpirun and a host
    # file); `--multi_gpu` starts torch.distributed.run, and with no GPU the Trainer joins over gloo.
    launcher = ["-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(PROCESSES),
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                "--main_process_port", str(_free_port())]
    return _launch(launcher, args, cwd)


def _read_tsv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=3)


def _assert_one_complete_run(out: Path, result: subprocess.CompletedProcess) -> dict:
    """One metrics.json (and its curves' summary), no temporary leftovers, checkpoints cleared, the summary
    printed once."""
    assert sorted(p.relative_to(out.parent) for p in out.parent.rglob("metrics.json")) == \
        [Path(out.name) / "dvclive" / "metrics.json", Path(out.name) / "metrics.json"]
    assert not [p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")]
    assert not Path(f"{out}.checkpoints").exists()
    assert sum(line.startswith("finetune:") for line in result.stdout.splitlines()) == 1
    summary = json.loads((out / "metrics.json").read_text())
    assert summary["device"].endswith(f"x {PROCESSES} processes")
    logged = _read_tsv(out / "dvclive" / "plots" / "metrics" / "train" / "loss.tsv")  # by the main process, once
    assert logged["loss"].astype(float).tolist() == [row["train_loss"] for row in summary["history"]]
    return summary


def _assert_each_idx_once(root: Path, task: str, out: Path) -> dict[str, pd.DataFrame]:
    spec = get_task(task)
    tables = {}
    for split in (*spec.eval_splits, *spec.test_splits):
        frame = pd.read_parquet(root / "segmented" / task / f"{split}.parquet")
        tsv = _read_tsv(out / "predictions" / f"{split}.tsv")
        assert tsv["idx"].astype(int).tolist() == frame["idx"].tolist(), split  # each once, in data order
        tables[split] = tsv
    return tables


def test_torchrun_two_processes_match_one_process_with_the_same_effective_batch(workspace, tmp_path):
    out = tmp_path / "runs" / "ddp"
    result = _torchrun(_finetune_args(workspace, "sst2", out, PER_DEVICE), tmp_path)
    ddp = _assert_one_complete_run(out, result)
    ddp_tables = _assert_each_idx_once(workspace, "sst2", out)

    single_out = tmp_path / "runs" / "single"
    single = run_finetune(FinetuneOptions(task="sst2", variant="sf", backbone=str(workspace / "backbone"),
                                          data=str(workspace / "segmented" / "sst2"), out=str(single_out),
                                          batch_size=PER_DEVICE * PROCESSES, **HPARAMS))
    assert ddp["best_epoch"] == single["best_epoch"]
    for mine, theirs in zip(ddp["history"], single["history"], strict=True):
        assert mine["train_loss"] == pytest.approx(theirs["train_loss"], rel=1e-4)
        assert mine["eval_loss"] == pytest.approx(theirs["eval_loss"], rel=1e-4)
    assert ddp["eval_loss"]["validation"] == pytest.approx(single["eval_loss"]["validation"], rel=1e-4)
    dev = SIZES["eval"]
    assert abs(ddp["metrics"]["validation"]["accuracy"] - single["metrics"]["validation"]["accuracy"]) <= 1 / dev + 1e-9
    single_dev = _read_tsv(single_out / "predictions" / "validation.tsv")
    assert (ddp_tables["validation"]["pred"] != single_dev["pred"]).sum() <= 1
    # the written predictions are what metrics.json scored (independent oracle: sklearn on the TSV)
    from sklearn.metrics import accuracy_score

    tsv = ddp_tables["validation"]
    assert ddp["metrics"]["validation"]["accuracy"] == pytest.approx(accuracy_score(tsv["gold"], tsv["pred"]))


def test_accelerate_launch_tagging_task_one_tag_per_word(workspace, tmp_path):
    out = tmp_path / "runs" / "ner"
    result = _accelerate(_finetune_args(workspace, "conll2003", out, PER_DEVICE), tmp_path)
    summary = _assert_one_complete_run(out, result)
    tables = _assert_each_idx_once(workspace, "conll2003", out)
    spec = get_task("conll2003")
    from seqeval.metrics import f1_score

    for split, tsv in tables.items():
        frame = pd.read_parquet(workspace / "segmented" / "conll2003" / f"{split}.parquet")
        gold = [row.split(" ") for row in tsv["gold"]]
        pred = [row.split(" ") for row in tsv["pred"]]
        assert gold == [[spec.label_names[t] for t in tags] for tags in frame["tags"]]
        assert [len(p) for p in pred] == [len(words) for words in frame["words_a"]]
        assert summary["metrics"][split]["f1"] == pytest.approx(f1_score(gold, pred, zero_division=0))
