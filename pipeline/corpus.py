"""Stage corpus: the training corpus (params ``corpus``).

    python pipeline/corpus.py data/corpus/train.txt --record data/corpus/provenance.json
"""

import argparse
import sys

from spanft.data.corpus import write_corpus
from dataclasses import asdict

from spanft.stage.run import run_stage


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="corpus text file to write")
    parser.add_argument("--record", default=None, help="where to write what the corpus was made from (JSON): "
                                                       "hub id and resolved commit, or path, and its digest")
    args = parser.parse_args()
    return run_stage(lambda plan: write_corpus(args.out, **asdict(plan.corpus), record_out=args.record))


if __name__ == "__main__":
    sys.exit(main())
