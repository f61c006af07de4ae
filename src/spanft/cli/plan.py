"""``spanft plan``: runs, hours per device kind, disk and fan-out jobs of the current params, in seconds."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_plan(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="estimate what params.yaml will cost: runs per table, hours per device "
                                    "(H100, A100, CPU), disk, fan-out jobs")
    p.add_argument("file", nargs="?", default="params.yaml", metavar="FILE")
    p.add_argument("--root", default=".", help="project root (holds benchmarks/results/ with the measured step times)")
    p.set_defaults(run=plan)


def plan(args: argparse.Namespace) -> int:
    from spanft.cluster.startups import fanout_startup
    from spanft.cost.estimate import estimate_lines  # pandas: only for this command
    from spanft.params.plan import load_plan

    loaded = load_plan(args.file)
    root = Path(args.root)
    print("\n".join(estimate_lines(loaded, root, args.file, fanout_startup(loaded, root))))
    return 0
