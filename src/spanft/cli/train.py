"""``spanft finetune``: one backbone / variant / seed on a task."""

from __future__ import annotations

import argparse
import dataclasses
import os


def add_finetune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("finetune", help="fine-tune one backbone/variant/seed on a task (HF Trainer)")
    p.add_argument("--task", required=True)
    p.add_argument("--backbone", required=True, help="hub id or local model directory")
    p.add_argument("--variant", required=True, help="baseline | sf | cnn-noseg | random-seg | chunker-seg")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", required=True, help="prepared (baseline, cnn-noseg) or segmented task directory")
    p.add_argument("--out", required=True, help="run directory: metrics.json, predictions/<split>.tsv")
    p.add_argument("--checkpoint-dir", default=None, help="per-epoch checkpoints (default: <out>.checkpoints)")
    p.add_argument("--hparams", default=None, metavar="FILE:KEY",
                   help="read hyper-parameters from a YAML block (params.yaml:hparams.cola); flags given here win")
    # Hyper-parameters default to None so that --hparams can fill them; FinetuneOptions holds the defaults.
    p.add_argument("--epochs", type=int, default=None, help="default 3")
    p.add_argument("--lr", type=float, default=None, help="default 2e-5")
    p.add_argument("--batch-size", type=int, default=None, help="default 32")
    p.add_argument("--eval-batch-size", type=int, default=None, help="default 64")
    p.add_argument("--max-seq-len", type=int, default=None, help="default 128")
    p.add_argument("--max-spans", type=int, default=None, help="default: max-seq-len / 2")
    p.add_argument("--max-span-len", type=int, default=None, help="default 16")
    p.add_argument("--encoder", default=None, help="cnn-cnn (default) | cnn-max | attention-max | attention-attention")
    p.add_argument("--head", default=None, help="concat (default) | span-only | cls-only")
    p.add_argument("--cls-vector", default=None, help="hidden (default) | pooler")
    p.add_argument("--dropout", type=float, default=None, help="dropout before the classifier (default 0.1)")
    p.add_argument("--max-train-examples", type=int, default=None, help="keep the first N training examples")
    p.add_argument("--max-eval-examples", type=int, default=None, help="keep the first N of each eval/test split")
    p.set_defaults(run=finetune)


def finetune_options(args: argparse.Namespace):
    """Flags given on the command line, else the ``--hparams`` block, else the FinetuneOptions defaults."""
    from spanft.params.hparams import load_hparams
    from spanft.train.options import FinetuneOptions

    names = {f.name for f in dataclasses.fields(FinetuneOptions)} - {"extra_callbacks"}
    values = load_hparams(args.hparams) if args.hparams else {}
    values.update({name: getattr(args, name) for name in names if getattr(args, name, None) is not None})
    return FinetuneOptions(**values)


def finetune(args: argparse.Namespace) -> int:
    from spanft.train.finetune import run_finetune, summary_line

    summary = run_finetune(finetune_options(args))
    if os.environ.get("RANK", "0") == "0":  # torchrun and accelerate launch number the processes in RANK
        print(summary_line(summary))
    return 0
