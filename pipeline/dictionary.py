"""Stage dictionary: the top n-grams of the counts file; params ``dict_size``, or one ``dict_sizes`` entry.

    python pipeline/dictionary.py data/ngrams/counts.tsv data/dicts/main.tsv
    python pipeline/dictionary.py data/ngrams/counts.tsv data/dicts/size-20000.tsv --size 20000

Run by DVC with no arguments, it takes them from the stage's name (spanft.stage.names).
"""

import argparse
import logging
import sys

from spanft.errors import SpanftError
from spanft.params.plan import Plan
from spanft.stage.run import run_stage_script
from spanft.text.dictionary import build_dictionary

log = logging.getLogger("spanft")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("counts", help="counts file (ngram<TAB>count, most frequent first)")
    parser.add_argument("out", help="dictionary file to write")
    parser.add_argument("--size", type=int, default=None, help="a dict_sizes entry (default: dict_size)")

    def build(args: argparse.Namespace, plan: Plan) -> None:
        size = plan.dict_size if args.size is None else args.size
        if args.size is not None and args.size not in plan.dict_sizes:
            raise SpanftError(f"--size {args.size} is not in params dict_sizes {list(plan.dict_sizes)}")
        written = build_dictionary(args.counts, size, args.out)
        log.info("wrote %d entries to %s", written, args.out)

    return run_stage_script("dictionary", parser, build)


if __name__ == "__main__":
    sys.exit(main())
