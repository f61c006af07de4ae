"""Stage tagger: the chunker ablation's POS tagger from ``chunker.source`` (synthetic | conll | nltk).

    python pipeline/tagger.py data/tagger.json
"""

import argparse
import sys
from pathlib import Path

from spanft.data.tagger_data import make_tagger
from spanft.params.plan import Plan
from spanft.stage.run import run_stage


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="tagger file to write (JSON)")
    args = parser.parse_args()

    def tagger(plan: Plan) -> None:
        data, corpus = plan.data, plan.corpus
        make_tagger(args.out, plan.chunker.source, data.source, Path(data.dir) / plan.chunker.conll_dir,
                    data.revisions.get("conll2003"), corpus.seed, corpus.tagged_sentences,
                    download_dir="data/nltk_data")

    return run_stage(tagger)


if __name__ == "__main__":
    sys.exit(main())
