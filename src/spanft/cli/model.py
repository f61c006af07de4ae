"""``spanft backbone``: build a tiny backbone on a corpus, fetch one from the hub, or copy a local one."""

from __future__ import annotations

import argparse
import logging

log = logging.getLogger("spanft")

BUILD_OPTIONS = {  # option -> (type, help); the defaults are BackboneConfig's
    "vocab-size": (int, "vocabulary size"),
    "hidden": (int, "hidden size"),
    "layers": (int, "transformer layers"),
    "heads": (int, "attention heads"),
    "intermediate": (int, "feed-forward size"),
    "max-len": (int, "longest input in tokens (position embeddings)"),
    "mlm-steps": (int, "MLM pre-training steps (0: random init)"),
    "mlm-batch-size": (int, "MLM batch size"),
    "vocab-lines": (int, "corpus lines read to learn the vocabulary (0: all)"),
}
READS = {  # the settings each source reads (the rest are reported as ignored)
    "build": ("tokenizer", "lowercase", *(name.replace("-", "_") for name in BUILD_OPTIONS), "seed", "corpus"),
    "hub": ("hub_id", "revision", "seed", "tokenizer_id", "tokenizer_revision", "lowercase"),
    "local": ("path", "tokenizer_id", "tokenizer_revision", "lowercase"),
}
SETTINGS = ("tokenizer", "lowercase", *(name.replace("-", "_") for name in BUILD_OPTIONS), "seed", "hub_id",
            "revision", "tokenizer_id", "tokenizer_revision", "path")


def add_backbone(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("backbone", help="write a backbone directory: build a tiny one, fetch a hub one, or copy one")
    p.add_argument("name", metavar="NAME", help="the backbone's name (used in messages)")
    p.add_argument("--out", required=True, help="model directory to write (from_pretrained loads it)")
    p.add_argument("--source", choices=["build", "hub", "local"], default="build", help="build (default) | hub | local")
    p.add_argument("--corpus", default=None, help="build: corpus text file, one paragraph a line")
    build = p.add_argument_group("build (a tiny backbone trained on the corpus)")
    build.add_argument("--tokenizer", choices=["wordpiece", "bpe"], default=None,
                       help="wordpiece: BERT, uncased by default; bpe: byte-level BPE, RoBERTa, cased (default wordpiece)")
    build.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                       help="fold case (default: yes for wordpiece; bpe is always cased)")
    for name, (kind, text) in BUILD_OPTIONS.items():
        build.add_argument(f"--{name}", type=kind, default=None, help=text)
    build.add_argument("--seed", type=int, default=None,
                       help="build: init and MLM seed; hub: seed of any weight the checkpoint lacks (default 0)")
    other = p.add_argument_group("hub / local")
    other.add_argument("--hub-id", default=None, help="hub: model id, e.g. bert-base-uncased")
    other.add_argument("--revision", default=None, help="hub: branch, tag or commit (default: the main branch)")
    other.add_argument("--tokenizer-id", default=None,
                       help="the tokenizer its authors used when the model's own is wrong (SpanBERT: bert-large-cased): "
                            "a hub id or a local directory; --lowercase / --no-lowercase set its case folding")
    other.add_argument("--tokenizer-revision", default=None,
                       help="--tokenizer-id on the hub: branch, tag or commit (default: the main branch)")
    other.add_argument("--path", default=None, help="local: a saved model directory (config.json and a tokenizer)")
    p.set_defaults(run=backbone)


def backbone_spec(args: argparse.Namespace) -> dict:
    """The settings given on the command line that ``--source`` reads (a params backbones block)."""
    return {key: getattr(args, key) for key in SETTINGS
            if key in READS[args.source] and getattr(args, key) is not None}


def backbone(args: argparse.Namespace) -> int:
    from spanft.model.backbone import (
        write_backbone,  # here: it imports torch and transformers
    )

    ignored = [f"--{key.replace('_', '-')}" for key in (*SETTINGS, "corpus")
               if key not in READS[args.source] and getattr(args, key) is not None]
    log.info("backbone %s: source %s%s", args.name, args.source, f"; ignored: {', '.join(ignored)}" if ignored else "")
    print(write_backbone(args.name, args.source, backbone_spec(args), args.out, args.corpus))
    return 0
