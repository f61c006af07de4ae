"""Stage step_cost: Table 3's SF / baseline cost per optimizer step, each glue backbone's baseline and SF timed
side by side in this one process on each glue task's training batches (params ``studies.glue``, ``hparams``,
``threads``; spanft.train.step_cost).

    python pipeline/step_cost.py data/step_cost.json
"""

import argparse
import json
import sys

from spanft.params.plan import PARAMS_FILE, Plan
from spanft.stage.run import run_stage_script


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSON file to write")

    def measure(args: argparse.Namespace, plan: Plan) -> None:
        # torch only now: a params mistake is told at once
        from spanft.fileio import atomic_open, check_output
        from spanft.train.step_cost import all_step_costs, step_cost_inputs

        out = check_output(args.out, inputs=[PARAMS_FILE, *step_cost_inputs(plan)])
        costs = all_step_costs(plan)
        with atomic_open(out) as handle:
            json.dump(costs, handle, indent=2)
            handle.write("\n")
        for backbone, tasks in costs["backbones"].items():
            ratios = ", ".join(f"{task} {cost['ratio']:.2f}" for task, cost in tasks.items()) or "no glue tasks"
            print(f"step_cost {backbone}: SF / baseline per step, side by side: {ratios}")
        if not costs["backbones"]:
            print("step_cost: studies.glue plans no runs: nothing timed")

    return run_stage_script("step_cost", parser, measure, quiet=True)


if __name__ == "__main__":
    sys.exit(main())
