"""The ``spanft`` command line. Each subcommand is a thin wrapper over library code.

Handlers are imported lazily so that ``spanft count-ngrams`` does not pay for importing torch.
User mistakes raise :class:`spanft.errors.SpanftError` and are printed as one line (exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import Callable, Sequence

from spanft.errors import run_command

log = logging.getLogger("spanft")


def _handler(module: str, function: str) -> Callable[[argparse.Namespace], int | None]:
    def run(args: argparse.Namespace) -> int | None:
        return getattr(importlib.import_module(f"spanft.{module}"), function)(args)

    return run


def _add_case_flags(p: argparse.ArgumentParser) -> None:
    # --keep-case is the short form for users; --lowercase/--no-lowercase is what DVC writes when it
    # unpacks the ``words`` params dict into a command line (.dvc/config: parsing.bool = boolean_optional).
    p.add_argument("--keep-case", action="store_true", help="do not lower-case")
    p.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None, help=argparse.SUPPRESS)


def _add_corpus(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("corpus", help="write the training corpus (one paragraph a line)")
    p.add_argument("--source", choices=["synthetic", "hf", "local"], default="synthetic")
    p.add_argument("--out", required=True, help="corpus text file to write")
    p.add_argument("--tokens", type=int, default=2_000_000, help="synthetic: approximate corpus size in words")
    p.add_argument("--seed", type=int, default=0, help="synthetic: generator seed")
    p.add_argument("--local-path", default=None, help="local: a wiki.train.tokens / wiki.train.raw file")
    p.add_argument("--hf-id", default="Salesforce/wikitext")
    p.add_argument("--hf-config", default="wikitext-103-raw-v1")
    p.add_argument("--hf-split", default="train")
    p.add_argument("--tagged-out", default=None, help="synthetic: also write POS-tagged sentences here (chunker tagger)")
    p.add_argument("--tagged-sentences", type=int, default=5000, help="synthetic: number of tagged sentences")
    p.set_defaults(run=_handler("data.corpus", "cli_corpus"))


def _add_count_ngrams(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("count-ngrams", help="count word n-grams (n = min-n..max-n), most frequent first")
    p.add_argument("files", nargs="+", metavar="FILE", help="corpus text files, one paragraph a line")
    p.add_argument("--out", required=True, help="counts file to write (ngram<TAB>count)")
    p.add_argument("--min-n", type=int, default=2)
    p.add_argument("--max-n", type=int, default=5)
    p.add_argument("--min-count", type=int, default=10)
    p.add_argument("--pretokenized", action="store_true", help="split words on whitespace only")
    _add_case_flags(p)
    p.set_defaults(run=_handler("text.ngrams", "cli_count_ngrams"))


def _add_build_dict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build-dict", help="keep the top-N n-grams of a counts file")
    p.add_argument("counts", metavar="COUNTS")
    p.add_argument("--size", type=int, required=True, help="number of entries (dict_size)")
    p.add_argument("--out", required=True)
    p.set_defaults(run=_handler("text.dictionary", "cli_build_dict"))


def _add_segment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("segment", help="segment sentences into spans (one sentence a line)")
    p.add_argument("file", nargs="?", metavar="FILE", help="input file (stdin when absent)")
    p.add_argument("--dict", dest="dict_path", default=None, help="dictionary file (ngram<TAB>count)")
    p.add_argument("--method", choices=["ngram", "random", "chunker"], default="ngram")
    p.add_argument("--pretokenized", action="store_true", help="split words on whitespace only")
    _add_case_flags(p)
    p.add_argument("--seed", type=int, default=0, help="random: seed")
    p.add_argument("--tagger", default=None, help="chunker: a trained tagger file (default: NLTK's pretrained tagger)")
    p.set_defaults(run=_handler("text.segmentation", "cli_segment"))


def _add_backbone_commands(sub: argparse._SubParsersAction) -> None:
    importlib.import_module("spanft.model.backbone").add_parsers(sub)  # `backbone` and `make-backbone`; no torch import


def _add_finetune(sub: argparse._SubParsersAction) -> None:
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
    p.set_defaults(run=_handler("train.finetune", "cli_finetune"))


def _task_source_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", metavar="TASK", help="a registry task: cola sst2 mrpc stsb qqp mnli qnli rte wnli snli conll2003")
    p.add_argument("--source", choices=["synthetic", "hf", "local"], default="synthetic")
    p.add_argument("--data-dir", default=None, help="local: the directory holding the official files")
    p.add_argument("--seed", type=int, default=0, help="synthetic: sampling seed")
    p.add_argument("--language-seed", type=int, default=0, help="synthetic: SyntheticLanguage seed (= corpus seed)")
    p.add_argument("--train-size", type=int, default=2000, help="synthetic: training examples")
    p.add_argument("--eval-size", type=int, default=500, help="synthetic: examples per eval split")
    p.add_argument("--test-size", type=int, default=500, help="synthetic: examples per test split")


def _add_describe(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("describe", help="print a task's examples per split and labels as one JSON object")
    _task_source_arguments(p)
    p.set_defaults(run=_handler("data.prepare", "cli_describe"))


def _add_prepare_task(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prepare-task", help="normalise a task's data to <out>/<split>.parquet (words, labels)")
    _task_source_arguments(p)
    p.add_argument("--out", required=True, help="directory to write (replaced atomically)")
    p.set_defaults(run=_handler("data.prepare", "cli_prepare_task"))


def _add_submission(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submission", help="zip GLUE leaderboard files from test prediction TSVs")
    p.add_argument("--pred", action="extend", nargs="+", default=[], metavar="STEM=TSV",
                   help="leaderboard stem (CoLA, MNLI-m, AX, ...) = predictions TSV (idx, gold, pred)")
    p.add_argument("--out", required=True, help="zip file to write")
    p.set_defaults(run=_handler("report.submission", "cli_submission"))


def _add_segment_task(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("segment-task", help="add span columns to every <split>.parquet of a prepared task")
    p.add_argument("in_dir", metavar="IN_DIR", help="prepared task directory (data/tasks/<task>)")
    p.add_argument("--out", required=True, help="segmented task directory to write")
    p.add_argument("--method", choices=["ngram", "random", "chunker"], default="ngram")
    p.add_argument("--dict", dest="dict_path", default=None, help="dictionary file (ngram and random methods)")
    p.add_argument("--seed", type=int, default=0, help="random: seed")
    p.add_argument("--tagger", default=None, help="chunker: a trained tagger file (default: NLTK's pretrained tagger)")
    _add_case_flags(p)
    p.set_defaults(run=_handler("text.segmentation", "cli_segment_task"))
    t = sub.add_parser("train-tagger", help="train NLTK's PerceptronTagger on word<TAB>tag sentences")
    t.add_argument("tagged", metavar="TAGGED", help="tagged sentences (blank line between sentences)")
    t.add_argument("--out", required=True, help="tagger file to write (JSON)")
    t.add_argument("--iterations", type=int, default=5)
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(run=_handler("text.chunker", "cli_train_tagger"))


def _add_params_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-params", help="check params.yaml: unknown keys, types, references")
    p.add_argument("file", nargs="?", default="params.yaml", metavar="FILE")
    p.set_defaults(run=_handler("params.schema", "cli_check_params"))
    p = sub.add_parser("profile", help="switch profiles: copy profiles/NAME.yaml to params.yaml (embedded | paper)")
    p.add_argument("name", metavar="NAME", help="a file stem under profiles/: embedded, paper")
    p.add_argument("--root", default=".", help="project root (holds profiles/ and params.yaml)")
    p.set_defaults(run=_handler("params.profiles", "cli_profile"))


def _check_stage_params() -> None:
    """Under ``dvc repro`` (DVC sets DVC_STAGE and DVC_ROOT), refuse to run on a params.yaml with a bad key."""
    root = os.environ.get("DVC_ROOT")
    if os.environ.get("DVC_STAGE") and root and os.path.isfile(os.path.join(root, "params.yaml")):
        from spanft.params.schema import check_params_file

        path = os.path.join(root, "params.yaml")
        relative = os.path.relpath(path)
        check_params_file(path if relative.startswith("..") else relative)


def _add_report_commands(sub: argparse._SubParsersAction) -> None:
    importlib.import_module("spanft.report.build").add_parsers(sub)  # stdlib-only at import time


COMMANDS = [_add_corpus, _add_count_ngrams, _add_build_dict, _add_segment, _add_backbone_commands, _add_finetune,
            _add_describe, _add_prepare_task, _add_submission, _add_segment_task, _add_params_commands,
            _add_report_commands]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spanft", description=__doc__.splitlines()[0])
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "lowercase", None) is not None:
        args.keep_case = not args.lowercase
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="spanft: %(message)s",
        stream=sys.stderr,
    )
    def body() -> int | None:
        _check_stage_params()
        return args.run(args)

    return run_command(body)

if __name__ == "__main__":
    sys.exit(main())
