"""Stage count_ngrams: word n-gram counts of the corpus (params ``ngrams``, ``words``).

    python pipeline/count_ngrams.py data/corpus/train.txt data/ngrams/counts.tsv
"""

import argparse
import sys

from spanft.params.plan import Plan
from spanft.stage.run import run_stage
from spanft.text.ngrams import count_ngrams_to_file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", help="corpus text file, one paragraph a line")
    parser.add_argument("out", help="counts file to write (ngram<TAB>count)")
    args = parser.parse_args()

    def count(plan: Plan) -> None:
        ngrams = plan.ngrams
        count_ngrams_to_file([args.corpus], args.out, min_n=ngrams.min_n, max_n=ngrams.max_n,
                             min_count=ngrams.min_count, lowercase=plan.lowercase)

    return run_stage(count)


if __name__ == "__main__":
    sys.exit(main())
