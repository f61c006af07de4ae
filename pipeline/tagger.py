"""Stage tagger: NLTK's PerceptronTagger trained on the corpus stage's tagged sentences (chunker ablation).

    python pipeline/tagger.py data/corpus/tagged.tsv data/tagger.json
"""

import argparse
import sys

from spanft.params.stage import run_stage
from spanft.text.chunker import train_tagger_file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tagged", help="tagged sentences (word<TAB>tag, a blank line between sentences)")
    parser.add_argument("out", help="tagger file to write (JSON)")
    args = parser.parse_args()
    return run_stage(lambda params: train_tagger_file(args.tagged, args.out))


if __name__ == "__main__":
    sys.exit(main())
