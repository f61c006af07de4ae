"""``spanft finetune``: one backbone / variant / seed on a task, outside the graph."""

from __future__ import annotations

import argparse
from dataclasses import fields

from spanft.params.hparams import HPARAM_FIELDS, load_hparams


def add_finetune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("finetune", help="fine-tune one backbone/variant/seed on a task (HF Trainer)")
    p.add_argument("--task", required=True)
    p.add_argument("--backbone", required=True, help="hub id or local model directory")
    p.add_argument("--variant", required=True, help="baseline | sf | cnn-noseg | random-seg | chunker-seg")
    p.add_argument("--seed", type=int, default=None, help="default 1")
    p.add_argument("--data", required=True, help="prepared (baseline, cnn-noseg) or segmented task directory")
    p.add_argument("--out", required=True,
                   help="run directory: metrics.json, predictions/<split>.tsv, dvclive/ (the training curves)")
    p.add_argument("--checkpoint-dir", default=None, help="per-epoch checkpoints (default: <out>.checkpoints)")
    p.add_argument("--encoder", default=None, help="cnn-cnn (default) | cnn-max | attention-max | attention-attention")
    p.add_argument("--head", default=None, help="concat (default) | span-only | cls-only")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads (default 0: the usable cores divided by the training processes sharing them)")
    p.add_argument("--hparams", default=None, metavar="FILE:KEY",
                   help="read hyper-parameters from a YAML block (params.yaml:hparams.cola); flags given here win")
    # One flag per HParams field, with its help; None so that --hparams can fill it, HParams holds the default.
    for name, spec in HPARAM_FIELDS.items():
        default = "" if spec.default is None else f" (default {spec.default})"
        p.add_argument(f"--{name.replace('_', '-')}", type=spec.metadata["kind"], default=None,
                       help=f"{spec.metadata['help']}{default}")
    p.set_defaults(run=finetune)


def finetune_options(args: argparse.Namespace):
    """Flags given on the command line, else the ``--hparams`` block, else the FinetuneOptions defaults."""
    from spanft.train.options import FinetuneOptions

    names = {f.name for f in fields(FinetuneOptions)} - {"extra_callbacks"}
    values = load_hparams(args.hparams) if args.hparams else {}
    values.update({name: getattr(args, name) for name in names if getattr(args, name, None) is not None})
    return FinetuneOptions(**values)


def finetune(args: argparse.Namespace) -> int:
    from spanft.train.preflight import preflight

    options = finetune_options(args)
    preflight(options)  # a mistake is told before the seconds of importing torch and transformers
    from spanft.train.finetune import run_and_print

    run_and_print(options)
    return 0
