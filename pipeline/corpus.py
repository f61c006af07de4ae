"""Stage corpus: the training corpus (params ``corpus``).

    python pipeline/corpus.py data/corpus/train.txt
"""

import argparse
import sys

from spanft.data.corpus import write_corpus
from spanft.params.stage import run_stage


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="corpus text file to write")
    args = parser.parse_args()
    return run_stage(lambda params: write_corpus(args.out, **params["corpus"]))


if __name__ == "__main__":
    sys.exit(main())
