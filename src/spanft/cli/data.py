"""``spanft corpus``, ``describe``, ``prepare-task``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_corpus(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("corpus", help="write the training corpus (one paragraph a line)")
    p.add_argument("--source", choices=["synthetic", "hf", "local"], default="synthetic")
    p.add_argument("--out", required=True, help="corpus text file to write")
    p.add_argument("--tokens", type=int, default=2_000_000, help="synthetic: approximate corpus size in words")
    p.add_argument("--seed", type=int, default=0, help="synthetic: generator seed")
    p.add_argument("--local-path", default=None,
                   help="local: a wiki.train.tokens / wiki.train.raw file, or a directory holding one")
    p.add_argument("--hf-id", default="Salesforce/wikitext")
    p.add_argument("--hf-config", default="wikitext-103-raw-v1")
    p.add_argument("--hf-split", default="train")
    p.add_argument("--hf-revision", default=None, help="hf: a branch, tag or commit of the dataset (default: main)")
    p.add_argument("--tagged-out", default=None, help="synthetic: also write POS-tagged sentences here (chunker tagger)")
    p.add_argument("--tagged-sentences", type=int, default=5000, help="number of tagged sentences")
    p.set_defaults(run=corpus)


def corpus(args: argparse.Namespace) -> int:
    from spanft.data.corpus import write_corpus

    write_corpus(args.out, args.tagged_out, source=args.source, tokens=args.tokens, seed=args.seed,
                 local_path=args.local_path, hf_id=args.hf_id, hf_config=args.hf_config, hf_split=args.hf_split,
                 hf_revision=args.hf_revision, tagged_sentences=args.tagged_sentences)
    return 0


def _task_source_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", metavar="TASK", help="a registry task: cola sst2 mrpc stsb qqp mnli qnli rte wnli snli conll2003")
    p.add_argument("--source", choices=["synthetic", "hf", "local"], default="synthetic")
    p.add_argument("--data-dir", default=None,
                   help="local: the data directory, its tasks in the official layout (glue_data/CoLA, snli_1.0, ...)")
    p.add_argument("--task-dir", default=None, help="local: the task's own folder of official files (instead)")
    p.add_argument("--seed", type=int, default=0, help="synthetic: sampling seed")
    p.add_argument("--language-seed", type=int, default=0, help="synthetic: SyntheticLanguage seed (= corpus seed)")
    p.add_argument("--train-size", type=int, default=2000, help="synthetic: training examples")
    p.add_argument("--eval-size", type=int, default=500, help="synthetic: examples per eval split")
    p.add_argument("--test-size", type=int, default=500, help="synthetic: examples per test split")


def _folder(args: argparse.Namespace):
    """The task's folder of official files: --task-dir, else its official folder under --data-dir."""
    from spanft.data.registry import OFFICIAL_FOLDERS

    if args.task_dir or not args.data_dir:
        return args.task_dir
    return Path(args.data_dir) / OFFICIAL_FOLDERS.get(args.task, "")


def _sizes(args: argparse.Namespace):
    from spanft.data.prepare import synthetic_sizes

    return synthetic_sizes(args.train_size, args.eval_size, args.test_size, args.seed, args.language_seed)


def add_describe(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("describe", help="print a task's examples per split and labels as one JSON object")
    _task_source_arguments(p)
    p.set_defaults(run=describe)


def describe(args: argparse.Namespace) -> int:
    from spanft.data.prepare import describe, iter_task
    from spanft.data.registry import get_task

    task = get_task(args.task)
    print(json.dumps(describe(task, iter_task(task, args.source, _folder(args), _sizes(args)))))
    return 0


def add_prepare_task(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prepare-task", help="normalise a task's data to <out>/<split>.parquet (words, labels)")
    _task_source_arguments(p)
    p.add_argument("--out", required=True, help="directory to write (replaced atomically)")
    p.add_argument("--revision", default=None, help="hf: a branch, tag or commit of the task's dataset")
    p.set_defaults(run=prepare_task)


def prepare_task(args: argparse.Namespace) -> int:
    from spanft.data.prepare import prepare_task

    prepare_task(args.task, args.out, args.source, _folder(args), _sizes(args), args.revision)
    return 0
