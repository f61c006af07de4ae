"""Stage backbone: one backbone of params ``backbones`` (built on the corpus, fetched, or copied).

    python pipeline/backbone.py tiny data/backbones/tiny --corpus data/corpus/train.txt
    python pipeline/backbone.py bert-base data/backbones/bert-base

Run by DVC with no arguments, it takes them from the stage's name (spanft.stage.names).
"""

import argparse
import sys

from spanft.params.plan import Plan
from spanft.stage.run import run_stage_script


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="a backbone of params backbones")
    parser.add_argument("out", help="model directory to write")
    parser.add_argument("--corpus", default=None, help="corpus text file (built backbones only)")

    def make(args: argparse.Namespace, plan: Plan) -> None:
        backbone = plan.backbone(args.name)
        from spanft.model.backbone import write_backbone  # torch only now: a params mistake is told at once

        print(write_backbone(backbone.name, backbone.source, backbone.settings, args.out, args.corpus, plan.threads))

    return run_stage_script("backbone", parser, make)


if __name__ == "__main__":
    sys.exit(main())
