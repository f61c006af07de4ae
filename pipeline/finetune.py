"""Stage finetune: one planned run of params ``studies`` with its task's ``hparams`` block.

    python pipeline/finetune.py glue tiny cola sf 1

The run's input, output and checkpoint directories follow from its key (spanft.params.plan).

Run by DVC with no arguments, it takes them from the stage's name (spanft.stage.names).
"""

import argparse
import sys

from spanft.params.plan import Plan
from spanft.stage.run import run_stage_script
from spanft.train.options import FinetuneOptions
from spanft.train.preflight import preflight


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for key in ("study", "backbone", "task", "variant"):
        parser.add_argument(key)
    parser.add_argument("seed", type=int)

    def finetune(args: argparse.Namespace, plan: Plan) -> None:
        run = plan.find_run(args.study, args.backbone, args.task, args.variant, args.seed)
        options = FinetuneOptions.for_run(run, plan.hparams[run.task], plan.threads)
        preflight(options)
        # torch and transformers only now: a usage, params, run-key or path mistake is told in a moment
        from spanft.train.finetune import run_and_print

        run_and_print(options)

    return run_stage_script("finetune", parser, finetune, quiet=True)


if __name__ == "__main__":
    sys.exit(main())
