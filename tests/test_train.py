"""Fine-tuning runs with the HF Trainer on a tiny backbone: outputs, determinism, resume, variants, errors."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from transformers import TrainerCallback

from spanft.cli import main
from spanft.data.registry import get_task
from spanft.errors import SpanftError
from spanft.model.build import BackboneConfig, make_backbone
from spanft.train.finetune import MEASURED_KEYS, run_finetune
from spanft.train.finished import CHECKPOINT_EVERY_ENV, KEEP_ENV, finished_run
from spanft.train.options import MODEL_VARIANTS, FinetuneOptions
from spanft.train.scoring import word_tag_predictions

SIZES = dict(train=48, eval=24, test=16)
TASKS = ("sst2", "rte", "stsb", "conll2003")


def _random_spans(words, rng: np.random.Generator) -> list[int]:
    """Span lengths 1..4 summing to the number of words (any segmentation is valid input)."""
    spans, left = [], len(words)
    while left:
        spans.append(int(min(left, rng.integers(1, 5))))
        left -= spans[-1]
    return spans


def _segment_dir(prepared: Path, out: Path, seed: int) -> Path:
    out.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for file in sorted(prepared.glob("*.parquet")):
        frame = pd.read_parquet(file)
        frame["spans_a"] = [_random_spans(w, rng) for w in frame["words_a"]]
        if "words_b" in frame.columns:
            frame["spans_b"] = [_random_spans(w, rng) for w in frame["words_b"]]
        frame.to_parquet(out / file.name)
    return out


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """Synthetic task data (prepared and segmented) and a tiny backbone built from its words."""
    from spanft.data.columns import SyntheticSizes
    from spanft.data.prepare import load_task, write_prepared

    root = tmp_path_factory.mktemp("train")
    with open(root / "corpus.txt", "w", encoding="utf-8") as corpus:
        for name in TASKS:
            write_prepared(load_task(name, "synthetic", sizes=SyntheticSizes(**SIZES)), root / "prepared" / name)
            _segment_dir(root / "prepared" / name, root / "segmented" / name, seed=len(name))
            for file in (root / "prepared" / name).glob("*.parquet"):
                for column in ("words_a", "words_b"):
                    frame = pd.read_parquet(file)
                    if column in frame.columns:
                        corpus.writelines(" ".join(words) + "\n" for words in frame[column])
    cfg = BackboneConfig(vocab_size=800, hidden=32, layers=1, heads=2, intermediate=64, max_len=128, mlm_steps=0)
    make_backbone(root / "corpus.txt", root / "backbone", cfg)
    return root


def _options(root: Path, out: str, task: str = "sst2", variant: str = "sf", **overrides) -> FinetuneOptions:
    data = root / ("segmented" if variant not in ("baseline", "cnn-noseg") else "prepared") / task
    values = dict(task=task, backbone=str(root / "backbone"), variant=variant, data=str(data), out=str(root / out),
                  seed=3, epochs=2, lr=2e-3, batch_size=16, eval_batch_size=16, max_seq_len=64)
    values.update(overrides)
    return FinetuneOptions(**values)


def _read_tsv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=3)


def _without_time(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in (*MEASURED_KEYS, "resumed_from")}


def _curve_files(run: Path) -> dict[str, bytes]:
    """Every file of a run's DVCLive directory, by relative path."""
    folder = run / "dvclive"
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _curve(run: Path, name: str) -> list[tuple[int, float]]:
    """(step, value) rows of one DVCLive metric file, read with the csv module (not spanft's reader)."""
    with open(run / "dvclive" / "plots" / "metrics" / f"{name}.tsv", encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    assert rows[0] == ["step", name.rsplit("/", 1)[-1]]
    return [(int(step), float(value)) for step, value in rows[1:]]


# --------------------------------------------------------------------------------------------- outputs


def test_run_writes_complete_metrics_and_predictions(workspace, reference, tmp_path, monkeypatch):
    from sklearn.metrics import accuracy_score

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "0"],
                   cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)  # in a git repository without DVC: DVCLive's own Live would `dvc init` it
    options = _options(workspace, "runs/complete", seed=5, log_every_steps=2)  # 3 steps an epoch: 2, 3, 4, 6
    summary = run_finetune(options)
    assert not (tmp_path / ".dvc").exists()
    assert subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout == ""
    out = Path(options.out)
    on_disk = json.loads((out / "metrics.json").read_text())
    assert on_disk == summary
    task = get_task("sst2")
    for key in ("task", "variant", "backbone", "seed", "metrics", "best_epoch", "train_seconds", "device",
                "backbone_parameters", "extra_parameters", "truncation"):
        assert key in summary
    assert (summary["task"], summary["variant"], summary["seed"]) == ("sst2", "sf", 5)
    assert summary["best_epoch"] in (1, 2) and summary["train_seconds"] > 0
    steps = 2 * -(-len(pd.read_parquet(Path(options.data) / "train.parquet")) // 16)
    timed = summary["step_time"]  # every optimizer step but the warm-up ones, on both clocks
    assert timed["steps_timed"] == steps - 3 and 0 < timed["step_seconds"] < summary["train_seconds"]
    assert 0 < timed["step_cpu_seconds"] and isinstance(timed["contended"], bool)
    assert summary["threads"] >= 1
    assert [row["epoch"] for row in summary["history"]] == [1, 2]
    assert all({"train_loss", "eval_loss", "eval_accuracy"} <= set(row) for row in summary["history"])
    best = summary["history"][summary["best_epoch"] - 1]["eval_accuracy"]
    assert best == max(row["eval_accuracy"] for row in summary["history"]) == summary["metrics"]["validation"]["accuracy"]
    # another seed trains differently: the losses the determinism and resume tests compare are seed-sensitive
    assert summary["history"] != reference["history"]
    assert set(summary["metrics"]) == set(task.eval_splits)
    assert set(summary["truncation"]) == set(task.all_splits)
    # The span module (two D x D x 3 convolutions) and the classifier [2D -> 2] are the extra parameters.
    d = 32
    assert summary["extra_parameters"] == 2 * (d * d * 3 + d) + (2 * d * 2 + 2)
    assert sorted(p.name for p in (out / "predictions").iterdir()) == ["test.tsv", "validation.tsv"]
    for split in (*task.eval_splits, *task.test_splits):
        frame = pd.read_parquet(workspace / "segmented" / "sst2" / f"{split}.parquet")
        tsv = _read_tsv(out / "predictions" / f"{split}.tsv")
        assert list(tsv.columns) == ["idx", "gold", "pred"]
        assert tsv["idx"].astype(int).tolist() == frame["idx"].tolist()
        assert set(tsv["pred"]) <= set(task.label_names)
        if split in task.test_splits:
            assert (tsv["gold"] == "").all()
        else:
            gold = [task.label_names[i] for i in frame["label"]]
            assert tsv["gold"].tolist() == gold
            # the metric in metrics.json is the accuracy of the written predictions (independent oracle)
            assert summary["metrics"][split]["accuracy"] == pytest.approx(accuracy_score(gold, tsv["pred"]))
    assert not options.checkpoint_path().exists(), "checkpoints are removed after success"
    # DVCLive's curves at their optimizer steps: the training loss every log_every_steps steps and at each epoch's
    # end, the evaluation once per epoch (what metrics.json's history holds), and nothing measured on the clock,
    # no TrainingArguments dump, no dvc.yaml
    steps_per_epoch = steps // 2
    assert set(_curve_files(out)) == {"metrics.json", *(f"plots/metrics/{name}.tsv" for name in (
        "epoch", "train/loss", "train/grad_norm", "train/learning_rate", "eval/loss", "eval/accuracy"))}
    history = summary["history"]
    at_epochs = [steps_per_epoch * row["epoch"] for row in history]
    logged = sorted({*range(2, steps + 1, 2), *at_epochs})
    assert [step for step, _ in _curve(out, "train/loss")] == logged and len(logged) > len(history)
    assert _curve(out, "epoch") == [(step, pytest.approx(step / steps_per_epoch)) for step in logged]
    for name, key in (("eval/loss", "eval_loss"), ("eval/accuracy", "eval_accuracy")):
        assert _curve(out, name) == [(step, row[key]) for step, row in zip(at_epochs, history)], name
    points = _curve(out, "train/loss")  # each point: the mean loss of the steps since the one before it
    covered = [(step, loss, step - prev) for (prev, _), (step, loss) in zip([(0, 0.0), *points], points)]
    for row, end in zip(history, at_epochs):  # an epoch's loss: its points' means weighted by the steps they cover
        mine = [(loss, n) for step, loss, n in covered if end - steps_per_epoch < step <= end]
        assert row["train_loss"] == pytest.approx(sum(loss * n for loss, n in mine) / sum(n for _, n in mine))
    latest = json.loads((out / "dvclive" / "metrics.json").read_text())
    assert latest["step"] == steps and latest["eval"]["accuracy"] == history[-1]["eval_accuracy"]


@pytest.fixture(scope="module")
def reference(workspace) -> dict:
    """One uninterrupted sf run (seed 3, 2 epochs) that other runs are compared with."""
    return run_finetune(_options(workspace, "runs/reference"))


def _same_predictions(workspace, run: str, other: str) -> bool:
    return all(
        (workspace / "runs" / run / "predictions" / split).read_text()
        == (workspace / "runs" / other / "predictions" / split).read_text()
        for split in ("validation.tsv", "test.tsv")
    )


def test_predictions_come_from_the_best_epoch_not_the_last(workspace, monkeypatch):
    import spanft.train.finetune

    real = spanft.train.finetune.selection_metrics

    def first_epoch_wins(task, frame):
        compute, calls = real(task, frame), []

        def scored(eval_prediction):
            calls.append(1)
            return {**compute(eval_prediction), "accuracy": 1.0 / len(calls)}  # 1.0, then 0.5

        return scored

    monkeypatch.setattr(spanft.train.finetune, "selection_metrics", first_epoch_wins)
    summary = run_finetune(_options(workspace, "runs/best-first"))
    history = summary["history"]
    assert summary["best_epoch"] == 1 and [row["eval_accuracy"] for row in history] == [1.0, 0.5]
    # the model that predicted is epoch 1's: its dev loss is that epoch's, not the last one's
    assert summary["eval_loss"]["validation"] == pytest.approx(history[0]["eval_loss"], rel=1e-6)
    assert summary["eval_loss"]["validation"] != pytest.approx(history[1]["eval_loss"], rel=1e-6)


def test_same_seed_gives_identical_runs_on_cpu(workspace, reference):
    again = run_finetune(_options(workspace, "runs/again"))
    assert _without_time(again) == _without_time(reference)
    assert _same_predictions(workspace, "again", "reference")
    assert _curve_files(workspace / "runs/again") == _curve_files(workspace / "runs/reference")


class _StopAfterFirstCheckpoint(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        raise KeyboardInterrupt("simulated kill after the first checkpoint")


class _StopInSecondEvaluation(TrainerCallback):
    def on_evaluate(self, args, state, control, **kwargs):
        if state.epoch >= 2:
            raise KeyboardInterrupt("simulated kill after epoch 2's logs, before its checkpoint")


def test_killed_run_resumes_from_its_checkpoint_and_ends_like_an_uninterrupted_one(workspace, reference):
    options = _options(workspace, "runs/resumed", checkpoint_dir=str(workspace / "ckpt/resumed"))
    with pytest.raises(KeyboardInterrupt):
        run_finetune(replace(options, extra_callbacks=[_StopInSecondEvaluation()]))
    assert not (workspace / "runs/resumed/metrics.json").exists()
    assert [p.name for p in (workspace / "ckpt/resumed").glob("checkpoint-*")] == ["checkpoint-3"]
    # epoch 2 was logged (the curve, live beside the checkpoints, has its step) but never checkpointed
    assert [step for step, _ in _curve(workspace / "ckpt/resumed", "train/loss")] == [3, 6]
    resumed = run_finetune(options)
    assert resumed["resumed_from"] == "checkpoint-3"
    assert _without_time(resumed) == _without_time(reference)
    assert _same_predictions(workspace, "resumed", "reference")
    # the curve continues from the checkpoint: epoch 2 once, as the uninterrupted run logged it
    assert _curve_files(workspace / "runs/resumed") == _curve_files(workspace / "runs/reference")
    assert not (workspace / "ckpt/resumed").exists()


def test_a_wall_clock_checkpoint_mid_epoch_resumes_to_the_uninterrupted_run(workspace, reference, monkeypatch):
    """A job whose time limit is shorter than an epoch must still advance: checkpoints by wall time land mid-epoch
    (here after every step), and a run resumed from one ends exactly as the uninterrupted run."""
    monkeypatch.setenv(CHECKPOINT_EVERY_ENV, "1e-9")
    options = _options(workspace, "runs/midepoch", checkpoint_dir=str(workspace / "ckpt/midepoch"))
    with pytest.raises(KeyboardInterrupt):
        run_finetune(replace(options, extra_callbacks=[_StopAfterFirstCheckpoint()]))
    assert [p.name for p in (workspace / "ckpt/midepoch").glob("checkpoint-*")] == ["checkpoint-1"]  # of 3 per epoch
    resumed = run_finetune(options)
    assert resumed["resumed_from"] == "checkpoint-1"
    assert _without_time(resumed) == _without_time(reference)
    assert _same_predictions(workspace, "midepoch", "reference")
    assert _curve_files(workspace / "runs/midepoch") == _curve_files(workspace / "runs/reference")


class _SignalAtStep(TrainerCallback):
    """Sends the process a real SIGUSR2 as step ``step`` begins (what SLURM's --signal does to a job)."""

    def __init__(self, step: int):
        self.step = step

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step == self.step - 1:
            os.kill(os.getpid(), signal.SIGUSR2)


class _StopAfterSave(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        raise KeyboardInterrupt("the job stops the run once its checkpoint is saved")


def test_the_time_limit_signal_saves_at_the_next_step_and_the_run_resumes_to_the_uninterrupted_one(
        workspace, reference, monkeypatch):
    """A job's time-limit signal (a real one, to this process) makes the run save at the optimizer step that
    follows it, mid-epoch, with no wall-clock interval; the run says so in its signal file, and resumed from that
    checkpoint it ends as the uninterrupted run."""
    from spanft.train.saves import SAVE_SIGNAL_ENV, SIGNAL_FILE_ENV

    told = workspace / "signal-file.json"
    monkeypatch.setenv(SAVE_SIGNAL_ENV, "USR2")
    monkeypatch.setenv(SIGNAL_FILE_ENV, str(told))
    previous = signal.signal(signal.SIGUSR2, signal.SIG_IGN)  # as a fan-out job's training inherits it
    try:
        options = _options(workspace, "runs/signalled", checkpoint_dir=str(workspace / "ckpt/signalled"))
        with pytest.raises(KeyboardInterrupt):
            # trigger first, then the stop: the stop sees the checkpoint the signal asked for
            run_finetune(replace(options, extra_callbacks=[_SignalAtStep(2), _StopAfterSave()]))
        assert [p.name for p in (workspace / "ckpt/signalled").glob("checkpoint-*")] == ["checkpoint-2"]
        said = json.loads(told.read_text())
        assert said.pop("began") <= time.time()  # when the training began: the fan-out's start-up records
        assert said == {"pid": os.getpid(), "saves": 1, "checkpoint": "checkpoint-2"}
        assert signal.getsignal(signal.SIGUSR2) != signal.SIG_IGN  # still listening: the run did not end
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        resumed = run_finetune(options)
    finally:
        signal.signal(signal.SIGUSR2, previous)
    assert resumed["resumed_from"] == "checkpoint-2"
    assert _without_time(resumed) == _without_time(reference)
    assert _same_predictions(workspace, "signalled", "reference")
    assert not told.exists()  # training over: nothing left for a job to wait for


def test_a_run_told_to_keep_its_checkpoints_marks_itself_finished(workspace, monkeypatch):
    """Under a fan-out job the checkpoints stay until DVC has saved the run; the mark names the run directory."""
    monkeypatch.setenv(KEEP_ENV, "1")
    options = _options(workspace, "runs/kept", checkpoint_dir=str(workspace / "ckpt/kept"), epochs=1)
    run_finetune(options)
    assert list((workspace / "ckpt/kept").glob("checkpoint-*"))
    assert finished_run(workspace / "ckpt/kept", workspace) == workspace / "runs/kept"
    (workspace / "runs/kept/metrics.json").write_text("{}")  # another run's directory now: not this finished one
    assert finished_run(workspace / "ckpt/kept", workspace) is None


def test_checkpoints_of_other_settings_are_not_resumed(workspace):
    options = _options(workspace, "runs/other", checkpoint_dir=str(workspace / "ckpt/other"))
    with pytest.raises(KeyboardInterrupt):
        run_finetune(replace(options, extra_callbacks=[_StopAfterFirstCheckpoint()]))
    changed = _options(workspace, "runs/other", checkpoint_dir=str(workspace / "ckpt/other"), lr=1e-3)
    assert changed.fingerprint() != options.fingerprint()
    assert run_finetune(changed)["resumed_from"] is None


def test_a_checkpoint_of_another_thread_count_is_not_resumed(workspace, caplog):
    """CPU kernels sum in per-thread chunks: a run continued on another thread count would not equal an
    uninterrupted one, so it starts over (whatever OMP_NUM_THREADS the shell exports), and says the count."""
    options = _options(workspace, "runs/threads", checkpoint_dir=str(workspace / "ckpt/threads"), threads=2)
    with pytest.raises(KeyboardInterrupt):
        run_finetune(replace(options, extra_callbacks=[_StopAfterFirstCheckpoint()]))
    with caplog.at_level("WARNING", logger="spanft"):
        again = run_finetune(replace(options, threads=1))
    assert again["resumed_from"] is None and again["threads"] == 1
    assert "the run starts over: made with threads 2 (this run: 1)" in caplog.text
    assert json.loads((workspace / "runs/threads/metrics.json").read_text())["threads"] == 1


def test_history_records_keep_one_key_order_whatever_the_log_order():
    from types import SimpleNamespace

    from spanft.train.finetune import _history

    logged = [{"epoch": 1.0, "eval_loss": 0.5, "eval_accuracy": 0.7, "step": 3},  # evaluation logged first
              {"epoch": 1.0, "loss": 0.9, "step": 3},
              {"epoch": 2.0, "loss": 0.8, "step": 6},
              {"epoch": 2.0, "eval_accuracy": 0.8, "eval_loss": 0.4, "eval_runtime": 1.0, "step": 6},
              {"epoch": 2.0, "train_runtime": 9.0}]
    history = _history(SimpleNamespace(state=SimpleNamespace(log_history=logged)))
    assert [list(row) for row in history] == [["epoch", "train_loss", "eval_accuracy", "eval_loss"]] * 2
    assert history[0] == {"epoch": 1, "train_loss": 0.9, "eval_accuracy": 0.7, "eval_loss": 0.5}


def test_a_failed_rerun_removes_the_previous_metrics(workspace, monkeypatch):
    options = _options(workspace, "runs/stale", variant="baseline", epochs=1)
    run_finetune(options)
    assert (workspace / "runs/stale/metrics.json").is_file()
    with pytest.raises(KeyboardInterrupt):
        run_finetune(replace(options, extra_callbacks=[_StopAfterFirstCheckpoint()]))
    assert not (workspace / "runs/stale/metrics.json").exists()


# --------------------------------------------------------------------------------------------- variants


@pytest.mark.parametrize("variant", MODEL_VARIANTS)
def test_every_variant_runs(workspace, variant):
    summary = run_finetune(_options(workspace, f"runs/variant-{variant}", variant=variant, epochs=1))
    assert summary["variant"] == variant
    assert 0.0 <= summary["metrics"]["validation"]["accuracy"] <= 1.0
    if variant == "baseline":
        assert summary["extra_parameters"] == 32 * 2 + 2  # the classifier alone
    else:
        assert summary["extra_parameters"] > 32 * 32 * 3


@pytest.mark.parametrize("encoder", ["cnn-max", "attention-attention"])
def test_encoder_choice_runs(workspace, encoder):
    summary = run_finetune(_options(workspace, f"runs/enc-{encoder}", encoder=encoder, head="span-only", epochs=1))
    assert summary["settings"]["encoder"] == encoder


def test_pair_task(workspace):
    summary = run_finetune(_options(workspace, "runs/rte", task="rte", epochs=1))
    tsv = _read_tsv(workspace / "runs/rte/predictions/validation.tsv")
    assert set(tsv["pred"]) <= {"entailment", "not_entailment"}
    assert set(summary["metrics"]) == {"validation"}


def test_regression_task_scores_clipped_predictions(workspace):
    from scipy.stats import pearsonr

    summary = run_finetune(_options(workspace, "runs/stsb", task="stsb", epochs=1))
    tsv = _read_tsv(workspace / "runs/stsb/predictions/validation.tsv")
    pred, gold = tsv["pred"].astype(float).to_numpy(), tsv["gold"].astype(float).to_numpy()
    assert ((pred >= 0) & (pred <= 5)).all()
    pearson = summary["metrics"]["validation"]["pearson"]
    if np.ptp(pred) == 0:
        assert pearson is None  # undefined correlation written as null, never NaN
    else:
        assert pearson == pytest.approx(pearsonr(pred, gold)[0], abs=1e-4)  # TSV floats have 6 digits
    assert (_read_tsv(workspace / "runs/stsb/predictions/test.tsv")["gold"] == "").all()


@pytest.mark.parametrize("variant", ["baseline", "sf"])
def test_tagging_task_writes_one_tag_per_word_and_seqeval_scores(workspace, variant):
    from seqeval.metrics import f1_score

    summary = run_finetune(_options(workspace, f"runs/ner-{variant}", task="conll2003", variant=variant, epochs=1,
                                    lr=5e-3))
    task = get_task("conll2003")
    for split in task.eval_splits:
        frame = pd.read_parquet(workspace / "prepared" / "conll2003" / f"{split}.parquet")
        tsv = _read_tsv(workspace / f"runs/ner-{variant}/predictions/{split}.tsv")
        gold = [row.split(" ") for row in tsv["gold"]]
        pred = [row.split(" ") for row in tsv["pred"]]
        assert gold == [[task.label_names[t] for t in tags] for tags in frame["tags"]]
        assert [len(p) for p in pred] == [len(w) for w in frame["words_a"]]
        assert summary["metrics"][split]["f1"] == pytest.approx(f1_score(gold, pred, zero_division=0))


def _roberta_like_backbone(out: Path, texts: list[str]) -> Path:
    """A tiny byte-level BPE + RobertaModel directory (cased, <s> ... </s></s> ... </s>, no token types)."""
    import tempfile

    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    with tempfile.TemporaryDirectory() as files:
        bpe.save_model(files)
        tokenizer = RobertaTokenizer(vocab=f"{files}/vocab.json", merges=f"{files}/merges.txt")
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=130, pad_token_id=tokenizer.pad_token_id)
    RobertaModel(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def test_roberta_style_backbone_on_a_pair_task(workspace, caplog):
    texts = (workspace / "corpus.txt").read_text().splitlines()
    backbone = _roberta_like_backbone(workspace / "roberta", texts)
    with caplog.at_level("WARNING", logger="spanft"):
        summary = run_finetune(_options(workspace, "runs/roberta", task="rte", backbone=str(backbone), epochs=1))
    assert summary["metrics"]["validation"]["accuracy"] is not None
    assert not any("cased but backbone" in r.getMessage() for r in caplog.records)  # a cased backbone


def test_word_tag_predictions_takes_first_pieces_and_pads_truncated_words_with_o():
    logits = np.zeros((2, 6, 3))
    # example 0: words at positions 1, 2, 4 (position 3 is a continuation piece); example 1: truncated
    logits[0, [1, 2, 3, 4], [2, 1, 0, 2]] = 1.0
    logits[1, [1, 2], [1, 1]] = 1.0
    labels = np.full((2, 6), -100)
    labels[0, [1, 2, 4]] = 0
    labels[1, [1, 2]] = 0
    assert word_tag_predictions(logits, labels, [3, 4], outside=0) == [[2, 1, 2], [1, 1, 0, 0]]


# --------------------------------------------------------------------------------------------- errors


def _cli(workspace, *extra, variant="baseline", data=None, backbone=None):
    data = data or str(workspace / "prepared" / "sst2")
    return ["finetune", "--task", "sst2", "--variant", variant, "--seed", "1", "--data", data,
            "--backbone", backbone or str(workspace / "backbone"), "--out", str(workspace / "runs/cli"), *extra]


def test_cli_prints_one_summary_line(workspace, capsys):
    assert main(_cli(workspace, "--epochs", "1", "--max-train-examples", "20", "--max-eval-examples", "10")) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]  # above it: the Trainer's own epoch logs
    assert last.startswith("finetune: sst2 baseline seed 1: validation accuracy") and "best epoch 1" in last
    summary = json.loads((workspace / "runs/cli/metrics.json").read_text())
    assert summary["examples"] == {"train": 20, "validation": 10, "test": 10}
    assert len(_read_tsv(workspace / "runs/cli/predictions/test.tsv")) == 10


def test_off_a_terminal_a_run_draws_no_progress_bar(workspace):
    """A log or a pipe gets a few plain lines, not bars redrawn with carriage returns (the Trainer's, the
    weights loader's, spanft's own): bars are drawn only on a terminal."""
    from spanft.stage.progress import HF_BAR_SWITCHES

    env = {key: value for key, value in os.environ.items() if key not in HF_BAR_SWITCHES}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
    args = _cli(workspace, "--epochs", "2", "--max-train-examples", "40", "--max-eval-examples", "10")
    args[args.index("--out") + 1] = str(workspace / "runs/piped")
    done = subprocess.run([sys.executable, "-m", "spanft.cli", *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert "\r" not in output, output[-3000:]
    assert not re.search(r"\d+%\||it/s\]|s/it\]", output), output[-3000:]  # tqdm's bar and rate


@pytest.mark.parametrize(
    "variant, data, backbone, extra, message",
    [
        ("sf", "prepared", None, [], "variant sf needs segmented data (spans_a)"),
        ("chunker-seg", "prepared", None, [], "variant chunker-seg needs segmented data"),
        ("bogus", "prepared", None, [], "unknown variant 'bogus'"),
        ("baseline", "missing", None, [], "task data directory not found"),
        ("baseline", "prepared", "missing-backbone", [], "backbone directory"),
        ("baseline", "prepared", None, ["--epochs", "0"], "--epochs: must be at least 1, found 0"),
        ("baseline", "prepared", None, ["--head", "concat"], "variant baseline is the cls-only head"),
        ("sf", "segmented", None, ["--encoder", "lstm-max"], "encoder: unknown value 'lstm-max'"),
    ],
)
def test_cli_errors_are_one_line(workspace, capsys, variant, data, backbone, extra, message):
    data_dir = str(workspace / data / "sst2")
    backbone_dir = str(workspace / backbone) if backbone else None
    assert main(_cli(workspace, *extra, variant=variant, data=data_dir, backbone=backbone_dir)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("spanft: error:") and message in err[-1]
    assert "Traceback" not in "\n".join(err)


def test_data_of_another_task_is_named(workspace, capsys):
    assert main(_cli(workspace, data=str(workspace / "prepared" / "conll2003"))) == 2
    err = capsys.readouterr().err.strip()
    assert "train.parquet: missing column(s) label (is this sst2 data?)" in err


def test_cased_data_on_uncased_backbone_warns(workspace, caplog):
    with caplog.at_level("WARNING", logger="spanft"):
        run_finetune(_options(workspace, "runs/cased", variant="baseline", epochs=1))
    assert any("cased but backbone" in r.getMessage() for r in caplog.records)


def test_options_validation_without_running():
    with pytest.raises(SpanftError, match="--max-spans: must be at least 1, found 0"):
        FinetuneOptions(task="sst2", backbone="x", variant="sf", data="d", out="o", max_spans=0).validate()
    assert FinetuneOptions(task="sst2", backbone="x", variant="sf", data="d", out="o").resolved_max_spans() == 64
    assert FinetuneOptions(task="sst2", backbone="x", variant="sf", data="d", out="o", max_seq_len=9,
                           max_spans=None).resolved_max_spans() == 4


# --------------------------------------------------------------------------------------------- absent splits, inputs


def _without_split(workspace: Path, task: str, split: str, name: str) -> Path:
    """A copy of the prepared task written by the prepare stage (provenance.json included), minus one split."""
    from spanft.data.columns import SyntheticSizes
    from spanft.data.prepare import prepare_task

    out = workspace / "partial" / name
    prepare_task(task, out, "synthetic", sizes=SyntheticSizes(**SIZES))
    (out / f"{split}.parquet").unlink()
    return out


@pytest.mark.parametrize("task, variant", [("sst2", "baseline"), ("conll2003", "baseline")])
def test_absent_test_split_means_no_test_predictions(workspace, task, variant):
    from spanft.data.provenance import read_provenance

    data = _without_split(workspace, task, "test", f"{task}-no-test")
    summary = run_finetune(_options(workspace, f"runs/{task}-no-test", task=task, variant=variant, epochs=1,
                                    data=str(data)))
    out = workspace / f"runs/{task}-no-test"
    assert sorted(p.name for p in (out / "predictions").iterdir()) == ["validation.tsv"]
    assert summary["splits"] == {"present": ["train", "validation"], "absent": ["test"]}
    assert set(summary["metrics"]) == {"validation"}  # conll2003: its labeled test split is simply not scored
    # what the run read: the prepared data's own record and the built backbone's
    assert summary["inputs"]["data"] == read_provenance(data)
    assert summary["inputs"]["data"]["source"] == "synthetic" and len(summary["inputs"]["data"]["digest"]) == 64
    assert summary["inputs"]["backbone"] == read_provenance(workspace / "backbone")
    assert summary["inputs"]["backbone"]["source"] == "build"


def test_absent_dev_split_is_an_error_naming_the_file(workspace):
    data = _without_split(workspace, "rte", "validation", "rte-no-dev")
    with pytest.raises(SpanftError, match=r"rte-no-dev/validation\.parquet: prepared split not found"):
        run_finetune(_options(workspace, "runs/rte-no-dev", task="rte", variant="baseline", data=str(data)))


@pytest.mark.parametrize("content", [b"", b"junk\n", b"PAR1" + b"\0" * 20 + b"PAR1"], ids=["empty", "text", "bad-footer"])
def test_a_damaged_split_file_is_one_line_naming_it(tmp_path, content):
    from spanft.data.columns import read_prepared

    (tmp_path / "validation.parquet").write_bytes(content)
    with pytest.raises(SpanftError, match=r"validation\.parquet: cannot read parquet") as caught:
        read_prepared(tmp_path / "validation.parquet")
    assert "\n" not in str(caught.value)


def test_data_without_a_record_is_identified_by_its_digest(workspace):
    from spanft.data.provenance import directory_digest
    from spanft.train.finetune import run_provenance

    data = workspace / "prepared" / "sst2"  # written by write_prepared alone: no provenance.json
    inputs = run_provenance(str(workspace / "backbone"), data)
    assert inputs["data"] == {"source": "unrecorded", "id_or_path": str(data.resolve()),
                              "digest": directory_digest(data)}
