"""What one fine-tuning run depends on: the variant, its span configuration and the hyper-parameters.

Variants: ``baseline`` (plain fine-tuning, [CLS] head), ``sf`` (span fine-tuning on n-gram spans),
``cnn-noseg`` (the same CNNs over all tokens, no segmentation: the paper's "+CNN"), ``random-seg`` and
``chunker-seg`` (sf on random / chunker spans; the data directory decides which spans those are).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spanft.data.registry import TaskSpec
from spanft.errors import SpanftError

log = logging.getLogger("spanft")


VARIANTS = ("baseline", "sf", "cnn-noseg", "random-seg", "chunker-seg")


SPAN_VARIANTS = ("sf", "random-seg", "chunker-seg")


@dataclass
class FinetuneOptions:
    """Everything one run depends on (the CLI's arguments)."""

    task: str
    backbone: str
    variant: str
    data: str
    out: str
    seed: int = 1
    checkpoint_dir: str | None = None
    epochs: int = 3
    lr: float = 2e-5
    batch_size: int = 32
    eval_batch_size: int = 64
    max_seq_len: int = 128
    max_spans: int | None = None  # default: max_seq_len // 2
    max_span_len: int = 16
    encoder: str | None = None
    head: str | None = None
    cls_vector: str = "hidden"
    dropout: float = 0.1
    max_train_examples: int | None = None
    max_eval_examples: int | None = None
    # Test hook: Trainer callbacks added to the run (e.g. one that stops it after the first checkpoint).
    extra_callbacks: list = field(default_factory=list, repr=False, compare=False)

    def resolved_max_spans(self) -> int:
        return self.max_spans if self.max_spans is not None else max(1, self.max_seq_len // 2)

    def checkpoint_path(self) -> Path:
        return Path(self.checkpoint_dir) if self.checkpoint_dir else Path(f"{str(self.out).rstrip('/')}.checkpoints")

    def validate(self) -> None:
        if self.variant not in VARIANTS:
            raise SpanftError(f"unknown variant {self.variant!r}; valid variants: {', '.join(VARIANTS)}")
        for key in ("epochs", "batch_size", "eval_batch_size", "max_seq_len", "max_span_len"):
            if getattr(self, key) <= 0:
                raise SpanftError(f"--{key.replace('_', '-')} must be positive, got {getattr(self, key)}")
        if self.max_spans is not None and self.max_spans <= 0:
            raise SpanftError(f"--max-spans must be positive, got {self.max_spans}")
        if not self.lr > 0:
            raise SpanftError(f"--lr must be positive, got {self.lr}")
        if not 0 <= self.dropout < 1:
            raise SpanftError(f"--dropout must satisfy 0 <= dropout < 1, got {self.dropout}")
        if not 0 <= self.seed < 2**32:
            raise SpanftError(f"--seed must be an integer from 0 to 2**32 - 1, got {self.seed}")
        for key in ("max_train_examples", "max_eval_examples"):
            value = getattr(self, key)
            if value is not None and value <= 0:
                raise SpanftError(f"--{key.replace('_', '-')} must be positive, got {value}")
        if self.variant == "baseline" and self.head not in (None, "cls-only"):
            raise SpanftError(f"variant baseline is the cls-only head; --head {self.head} needs a span variant")
        if self.variant != "baseline" and self.head == "cls-only":
            raise SpanftError(f"--head cls-only is the baseline; use --variant baseline instead of {self.variant}")
        if self.variant in ("baseline", "cnn-noseg") and self.encoder not in (None, "cnn-cnn"):
            raise SpanftError(f"--encoder {self.encoder} applies to the span variants ({', '.join(SPAN_VARIANTS)})")

    def fingerprint(self) -> dict[str, Any]:
        """The settings that decide what a checkpoint holds (paths of outputs excluded)."""
        skip = {"out", "checkpoint_dir", "extra_callbacks"}
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skip}


def span_config_for(options: FinetuneOptions, task: TaskSpec):
    """The :class:`spanft.model.span_model.SpanConfig` of a variant."""
    from spanft.model.span_model import SpanConfig

    common = dict(num_labels=task.num_labels, task_type=task.task_type, dropout=options.dropout,
                  cls_vector=options.cls_vector)
    if options.variant == "baseline":
        return SpanConfig(head="cls-only", **common)
    if options.variant == "cnn-noseg":
        return SpanConfig(encoder="cnn-cnn", head=options.head or "concat", segmentation="none", **common)
    return SpanConfig(encoder=options.encoder or "cnn-cnn", head=options.head or "concat", segmentation="spans",
                      **common)
