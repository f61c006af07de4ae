"""Stage segment: span columns for a prepared task (params ``words``, ``ngrams.max_n``,
``segmentation.random_seed``, ``chunker.tagger``).

    python pipeline/segment.py ngram data/tasks/cola data/segmented/ngram/cola --dict data/dicts/main.tsv
    python pipeline/segment.py chunker data/tasks/cola data/segmented/chunker/cola

Run by DVC with no arguments, it takes them from the stage's name (spanft.stage.names).
"""

import argparse
import sys

from spanft.params.plan import Plan
from spanft.stage.run import run_stage_script
from spanft.text.segmentation import METHODS, make_segmenter, segment_task_dir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", choices=METHODS)
    parser.add_argument("in_dir", help="prepared task directory")
    parser.add_argument("out", help="segmented task directory to write")
    parser.add_argument("--dict", dest="dict_path", default=None, help="dictionary file (ngram and random)")

    def segment(args: argparse.Namespace, plan: Plan) -> None:
        segmenter = make_segmenter(args.method, args.dict_path, seed=plan.random_seed, tagger=plan.chunker.tagger,
                                   keep_case=not plan.lowercase, max_n=plan.ngrams.max_n)
        segment_task_dir(args.in_dir, args.out, segmenter, inputs=[args.dict_path, plan.chunker.tagger or None])

    return run_stage_script("segment", parser, segment, quiet=True)


if __name__ == "__main__":
    sys.exit(main())
