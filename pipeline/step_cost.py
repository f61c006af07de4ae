"""Stage step_cost: Table 3's SF / baseline cost per optimizer step of one glue backbone, both arms timed side by
side in this one process on each glue task's training batches (spanft.train.step_cost).

    python pipeline/step_cost.py tiny data/step_cost/tiny.json

Run by DVC with no arguments, it takes them from the stage's name (spanft.params.stage).
"""

import argparse
import json
import sys

from spanft.params.plan import Plan
from spanft.params.stage import run_stage_script


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backbone", help="a backbone of params studies.glue.backbones")
    parser.add_argument("out", help="JSON file to write")

    def measure(args: argparse.Namespace, plan: Plan) -> None:
        study = plan.studies["glue"]
        run = plan.find_run("glue", args.backbone, study.tasks[0], "sf", study.seeds[0])  # the backbone is glue's
        from spanft.fileio import atomic_open, check_output  # torch only now: a params mistake is told at once
        from spanft.train.step_cost import backbone_step_costs

        out = check_output(args.out, inputs=[run.backbone_dir])
        costs = backbone_step_costs(plan, args.backbone)
        with atomic_open(out) as handle:
            json.dump(costs, handle, indent=2)
            handle.write("\n")
        ratios = ", ".join(f"{task} {cost['ratio']:.2f}" for task, cost in costs["tasks"].items())
        print(f"step_cost {args.backbone}: SF / baseline per step, side by side: {ratios}")

    return run_stage_script("step_cost", parser, measure, quiet=True)


if __name__ == "__main__":
    sys.exit(main())
