"""``spanft count-ngrams``, ``build-dict``, ``segment``, ``segment-task``, ``train-tagger``."""

from __future__ import annotations

import argparse
import logging
import sys

from spanft.errors import SpanftError, describe_os_error
from spanft.fileio import read_text_lines
from spanft.text.ngrams import DEFAULT_MAX_N

log = logging.getLogger("spanft")


def add_count_ngrams(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("count-ngrams", help="count word n-grams (n = min-n..max-n), most frequent first")
    p.add_argument("files", nargs="+", metavar="FILE", help="corpus text files, one paragraph a line")
    p.add_argument("--out", required=True, help="counts file to write (ngram<TAB>count)")
    p.add_argument("--min-n", type=int, default=2)
    p.add_argument("--max-n", type=int, default=DEFAULT_MAX_N)
    p.add_argument("--min-count", type=int, default=10)
    p.add_argument("--pretokenized", action="store_true", help="split words on whitespace only")
    p.add_argument("--keep-case", action="store_true", help="do not lower-case")
    p.set_defaults(run=count_ngrams)


def count_ngrams(args: argparse.Namespace) -> int:
    from spanft.text.ngrams import check_n_flags, count_ngrams_to_file

    check_n_flags(args.min_n, args.max_n)  # the bounds of params ngrams.min_n / max_n
    count_ngrams_to_file(args.files, args.out, min_n=args.min_n, max_n=args.max_n, min_count=args.min_count,
                         lowercase=not args.keep_case, pretokenized=args.pretokenized, progress=not args.quiet)
    return 0


def add_build_dict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build-dict", help="keep the top-N n-grams of a counts file")
    p.add_argument("counts", metavar="COUNTS")
    p.add_argument("--size", type=int, required=True, help="number of entries (dict_size)")
    p.add_argument("--out", required=True)
    p.set_defaults(run=build_dict)


def build_dict(args: argparse.Namespace) -> int:
    from spanft.text.dictionary import build_dictionary

    written = build_dictionary(args.counts, args.size, args.out)
    log.info("wrote %d entries to %s", written, args.out)
    return 0


def _add_segmenter_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", choices=["ngram", "random", "chunker"], default="ngram")
    p.add_argument("--dict", dest="dict_path", default=None, help="dictionary file (ngram and random methods)")
    p.add_argument("--max-n", type=int, default=DEFAULT_MAX_N, help=f"longest span in words (default {DEFAULT_MAX_N})")
    p.add_argument("--keep-case", action="store_true", help="do not lower-case")
    p.add_argument("--seed", type=int, default=0, help="random: seed")
    p.add_argument("--tagger", default=None, help="chunker: a trained tagger file (default: NLTK's pretrained tagger)")


def _segmenter(args: argparse.Namespace):
    from spanft.text.ngrams import MAX_N, MIN_N
    from spanft.text.segmentation import make_segmenter

    if not MIN_N <= args.max_n <= MAX_N:  # the bounds of params ngrams.max_n
        raise SpanftError(f"--max-n (ngrams.max_n) must be from {MIN_N} to {MAX_N} (the longest span in words), "
                          f"found {args.max_n}")
    return make_segmenter(args.method, args.dict_path, seed=args.seed, tagger=args.tagger, keep_case=args.keep_case,
                          max_n=args.max_n)


def add_segment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("segment", help="segment sentences into spans (one sentence a line)")
    p.add_argument("file", nargs="?", metavar="FILE", help="input file (stdin when absent)")
    p.add_argument("--pretokenized", action="store_true", help="split words on whitespace only")
    _add_segmenter_options(p)
    p.set_defaults(run=segment)


def segment(args: argparse.Namespace) -> int:
    from spanft.text.segmentation import segment_lines, stdin_lines

    segmenter = _segmenter(args)
    lines = (line for _, line in read_text_lines(args.file, what="input file")) if args.file else stdin_lines()
    try:
        for text in segment_lines(lines, segmenter, pretokenized=args.pretokenized):
            sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise SpanftError(f"<stdout>: {describe_os_error(exc)} (while writing the spans)") from None
    return 0


def add_segment_task(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("segment-task", help="add span columns to every <split>.parquet of a prepared task")
    p.add_argument("in_dir", metavar="IN_DIR", help="prepared task directory (data/tasks/<task>)")
    p.add_argument("--out", required=True, help="segmented task directory to write")
    _add_segmenter_options(p)
    p.set_defaults(run=segment_task)


def segment_task(args: argparse.Namespace) -> int:
    from spanft.text.segmentation import segment_task_dir

    segment_task_dir(args.in_dir, args.out, _segmenter(args), inputs=[args.dict_path, args.tagger])
    return 0


def add_train_tagger(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train-tagger", help="train NLTK's PerceptronTagger on word<TAB>tag sentences")
    p.add_argument("tagged", metavar="TAGGED", help="tagged sentences (blank line between sentences)")
    p.add_argument("--out", required=True, help="tagger file to write (JSON)")
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=train_tagger)


def train_tagger(args: argparse.Namespace) -> int:
    from spanft.text.chunker import train_tagger_file

    train_tagger_file(args.tagged, args.out, iterations=args.iterations, seed=args.seed)
    return 0
