"""Stage corpus: the training corpus (params ``corpus``) and the tagged sentences for the chunker's tagger.

    python pipeline/corpus.py data/corpus/train.txt data/corpus/tagged.tsv
"""

import argparse
import sys

from spanft.data.corpus import write_corpus
from spanft.params.stage import run_stage


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="corpus text file to write")
    parser.add_argument("tagged_out", help="tagged sentences file to write")
    args = parser.parse_args()
    return run_stage(lambda params: write_corpus(args.out, args.tagged_out, **params["corpus"]))


if __name__ == "__main__":
    sys.exit(main())
