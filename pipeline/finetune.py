"""Stage finetune: one planned run of params ``studies`` with its task's ``hparams`` block.

    python pipeline/finetune.py glue tiny cola sf 1

The run's input, output and checkpoint directories follow from its key (spanft.params.studies).

Run by DVC with no arguments, it takes them from the stage's name (spanft.params.dvc_stage).
"""

import argparse
import os
import sys

from spanft.params.hparams import hparams_block
from spanft.params.stage import PARAMS_FILE, run_stage_script
from spanft.params.studies import find_run
from spanft.train.finetune import run_finetune, summary_line
from spanft.train.options import FinetuneOptions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for key in ("study", "backbone", "task", "variant"):
        parser.add_argument(key)
    parser.add_argument("seed", type=int)

    def finetune(args: argparse.Namespace, params: dict) -> None:
        run = find_run(params, args.study, args.backbone, args.task, args.variant, args.seed, PARAMS_FILE)
        hparams = hparams_block(params, f"hparams.{run.task}", PARAMS_FILE)
        options = FinetuneOptions(task=run.task, backbone=run.backbone_dir, variant=run.finetune_variant,
                                  data=run.data, out=run.out, seed=run.seed, checkpoint_dir=run.checkpoint_dir,
                                  encoder=run.encoder, head=run.head, **hparams)
        summary = run_finetune(options)
        if os.environ.get("RANK", "0") == "0":  # torchrun and accelerate launch number the processes in RANK
            print(summary_line(summary))

    return run_stage_script("finetune", parser, finetune, quiet=True)


if __name__ == "__main__":
    sys.exit(main())
