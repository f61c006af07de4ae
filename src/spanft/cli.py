"""The ``spanft`` command line. Each subcommand is a thin wrapper over library code.

Handlers are imported lazily so that ``spanft count-ngrams`` does not pay for importing torch.
User mistakes raise :class:`spanft.errors.SpanftError` and are printed as one line (exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import Callable, Sequence

from spanft.errors import SpanftError

log = logging.getLogger("spanft")


def _handler(module: str, function: str) -> Callable[[argparse.Namespace], int | None]:
    def run(args: argparse.Namespace) -> int | None:
        return getattr(importlib.import_module(f"spanft.{module}"), function)(args)

    return run


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
    p.set_defaults(run=_handler("corpus", "cli_corpus"))


def _add_count_ngrams(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("count-ngrams", help="count word n-grams (n = min-n..max-n), most frequent first")
    p.add_argument("files", nargs="+", metavar="FILE", help="corpus text files, one paragraph a line")
    p.add_argument("--out", required=True, help="counts file to write (ngram<TAB>count)")
    p.add_argument("--min-n", type=int, default=2)
    p.add_argument("--max-n", type=int, default=5)
    p.add_argument("--min-count", type=int, default=10)
    p.add_argument("--pretokenized", action="store_true", help="split words on whitespace only")
    p.add_argument("--keep-case", action="store_true", help="do not lower-case")
    p.set_defaults(run=_handler("ngrams", "cli_count_ngrams"))


def _add_build_dict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build-dict", help="keep the top-N n-grams of a counts file")
    p.add_argument("counts", metavar="COUNTS")
    p.add_argument("--size", type=int, required=True, help="number of entries (dict_size)")
    p.add_argument("--out", required=True)
    p.set_defaults(run=_handler("ngrams", "cli_build_dict"))


def _add_segment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("segment", help="segment sentences into spans (one sentence a line)")
    p.add_argument("file", nargs="?", metavar="FILE", help="input file (stdin when absent)")
    p.add_argument("--dict", dest="dict_path", default=None, help="dictionary file (ngram<TAB>count)")
    p.add_argument("--method", choices=["ngram", "random", "chunker"], default="ngram")
    p.add_argument("--pretokenized", action="store_true", help="split words on whitespace only")
    p.add_argument("--keep-case", action="store_true", help="do not lower-case")
    p.add_argument("--seed", type=int, default=0, help="random: seed")
    p.add_argument("--tagger", default=None, help="chunker: a trained tagger file (default: NLTK's pretrained tagger)")
    p.set_defaults(run=_handler("segmentation", "cli_segment"))


COMMANDS = [_add_corpus, _add_count_ngrams, _add_build_dict, _add_segment]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spanft", description=__doc__.splitlines()[0])
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="spanft: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.run(args) or 0)
    except SpanftError as exc:
        print(f"spanft: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spanft: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
