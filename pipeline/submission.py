"""Stage submission: GLUE leaderboard zips of one glue-study backbone, one per variant, each task's best seed.

    python pipeline/submission.py tiny data/runs/glue/tiny data/submissions

Run by DVC with no arguments, it takes them from the stage's name (spanft.stage.names).
"""

import argparse
import sys
from pathlib import Path

from spanft.params.plan import Plan
from spanft.stage.run import run_stage_script
from spanft.report.submission import glue_submission


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backbone", help="a backbone of studies.glue")
    parser.add_argument("runs", help="the backbone's glue runs: data/runs/glue/<backbone>")
    parser.add_argument("out_dir", help="directory of the zips: glue-<backbone>-<variant>.zip")

    def zip_variants(args: argparse.Namespace, plan: Plan) -> None:
        for variant in plan.variant_names("glue"):
            glue_submission(args.runs, variant, Path(args.out_dir) / f"glue-{args.backbone}-{variant}.zip")

    return run_stage_script("submission", parser, zip_variants)


if __name__ == "__main__":
    sys.exit(main())
