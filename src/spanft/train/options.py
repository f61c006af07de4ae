"""What one fine-tuning run depends on: the variant, its span configuration and the hyper-parameters.

Variants: ``baseline`` (plain fine-tuning, [CLS] head), ``sf`` (span fine-tuning on n-gram spans),
``cnn-noseg`` (the same CNNs over all tokens, no segmentation: the paper's "+CNN"), ``random-seg`` and
``chunker-seg`` (sf on random / chunker spans; the data directory decides which spans those are).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanft.data.registry import TaskSpec
from spanft.errors import SpanftError
from spanft.params.hparams import HPARAM_FIELDS, HParams, hparam_problem
from spanft.params.plan import PlannedRun
from spanft.params.schema import MAX_THREADS

MODEL_VARIANTS = ("baseline", "sf", "cnn-noseg", "random-seg", "chunker-seg")
WEIGHT_DECAY = 0.01  # AdamW's, on every parameter but biases and norms (the Trainer's split)
MAX_GRAD_NORM = 1.0  # gradient clipping
SPAN_VARIANTS = ("sf", "random-seg", "chunker-seg")


@dataclass(frozen=True, kw_only=True)
class FinetuneOptions(HParams):
    """Everything one run depends on: what it fine-tunes, where it reads and writes, and its hyper-parameters."""

    task: str
    backbone: str  # a hub id or a model directory
    variant: str
    data: str
    out: str
    seed: int = 1
    checkpoint_dir: str | None = None
    encoder: str | None = None
    head: str | None = None
    threads: int = 0  # torch threads; 0: spanft.threads.thread_count's rule
    # Test hook: Trainer callbacks added to the run (e.g. one that stops it after the first checkpoint).
    extra_callbacks: list = field(default_factory=list, repr=False, compare=False)

    @classmethod
    def for_run(cls, run: PlannedRun, hparams: HParams, threads: int = 0) -> "FinetuneOptions":
        """The options of a planned run with its task's hyper-parameters and the plan's thread setting."""
        return cls(task=run.task, backbone=run.backbone_dir, variant=run.finetune_variant, data=run.data,
                   out=run.out, seed=run.seed, checkpoint_dir=run.checkpoint_dir, encoder=run.encoder,
                   head=run.head, threads=threads, **{name: getattr(hparams, name) for name in HPARAM_FIELDS})

    def resolved_max_spans(self) -> int:
        return self.max_spans if self.max_spans is not None else max(1, self.max_seq_len // 2)

    def checkpoint_path(self) -> Path:
        return Path(self.checkpoint_dir) if self.checkpoint_dir else Path(f"{str(self.out).rstrip('/')}.checkpoints")

    def validate(self) -> None:
        if self.variant not in MODEL_VARIANTS:
            raise SpanftError(f"unknown variant {self.variant!r}; valid variants: {', '.join(MODEL_VARIANTS)}")
        for name in HPARAM_FIELDS:
            problem = hparam_problem(name, getattr(self, name))
            if problem:
                raise SpanftError(f"--{name.replace('_', '-')}: {problem}")
        if not 0 <= self.threads <= MAX_THREADS:
            raise SpanftError(f"--threads must be 0 (automatic) or a count from 1 to {MAX_THREADS}, got {self.threads}")
        if not 0 <= self.seed < 2**32:
            raise SpanftError(f"--seed must be an integer from 0 to 2**32 - 1, got {self.seed}")
        if self.variant == "baseline" and self.head not in (None, "cls-only"):
            raise SpanftError(f"variant baseline is the cls-only head; --head {self.head} needs a span variant")
        if self.variant != "baseline" and self.head == "cls-only":
            raise SpanftError(f"--head cls-only is the baseline; use --variant baseline instead of {self.variant}")
        if self.variant in ("baseline", "cnn-noseg") and self.encoder not in (None, "cnn-cnn"):
            raise SpanftError(f"--encoder {self.encoder} applies to the span variants ({', '.join(SPAN_VARIANTS)})")

    def fingerprint(self) -> dict[str, Any]:
        """The settings that decide what a checkpoint holds (paths of outputs excluded), in metrics.json's order."""
        return {name: getattr(self, name) for name in SETTINGS_ORDER}


# Every field but the output paths, in the order metrics.json's "settings" has printed them since the first runs.
SETTINGS_ORDER = ("task", "backbone", "variant", "data", "seed", "epochs", "lr", "batch_size", "eval_batch_size",
                  "max_seq_len", "max_spans", "max_span_len", "encoder", "head", "cls_vector", "dropout",
                  "max_train_examples", "max_eval_examples", "log_every_steps")


def span_config_for(options: FinetuneOptions, task: TaskSpec) -> "SpanConfig":  # noqa: F821
    """The :class:`spanft.model.span_model.SpanConfig` of a variant."""
    from spanft.model.span_model import (
        SpanConfig,  # torch: this module is read before torch is imported
    )

    common = dict(num_labels=task.num_labels, task_type=task.task_type, dropout=options.dropout,
                  cls_vector=options.cls_vector)
    if options.variant == "baseline":
        return SpanConfig(head="cls-only", **common)
    if options.variant == "cnn-noseg":
        return SpanConfig(encoder="cnn-cnn", head=options.head or "concat", segmentation="none", **common)
    return SpanConfig(encoder=options.encoder or "cnn-cnn", head=options.head or "concat", segmentation="spans",
                      **common)
