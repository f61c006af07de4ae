"""Stage prepare_task: one task's splits as parquet (params ``data``, ``tasks.<task>``: its folder under data.dir;
``corpus.seed`` for the synthetic language).

    python pipeline/prepare_task.py cola data/tasks/cola

Run by DVC with no arguments, it takes them from the stage's name (spanft.stage.names).
"""

import argparse
import sys

from spanft.data.prepare import prepare_task, synthetic_sizes
from spanft.params.plan import Plan
from spanft.stage.run import run_stage_script


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", help="a task of params tasks")
    parser.add_argument("out", help="prepared task directory to write")

    def prepare(args: argparse.Namespace, plan: Plan) -> None:
        synthetic = plan.data.synthetic
        sizes = synthetic_sizes(synthetic.train_size, synthetic.eval_size, synthetic.test_size, synthetic.seed,
                                language_seed=plan.corpus.seed)
        prepare_task(args.task, args.out, plan.data.source, plan.task_folder(args.task), sizes,
                     plan.data.revisions.get(args.task))

    return run_stage_script("prepare_task", parser, prepare, quiet=True)


if __name__ == "__main__":
    sys.exit(main())
