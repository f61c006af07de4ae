"""How a ``pipeline/`` stage script runs: on the plan of ``params.yaml`` (checked once), with one-line errors."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Callable

from spanft.errors import run_command
from spanft.params.dvc_stage import script_argv
from spanft.params.plan import Plan, load_plan


def run_stage(body: Callable[[Plan], None], quiet: bool = False) -> int:
    """Run a stage script's ``body(plan)``: spanft's log format, one-line errors, exit code 0 unless it raised."""
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="spanft: %(message)s",
                        stream=sys.stderr)
    return run_command(lambda: body(load_plan()))


def run_stage_script(script: str, parser: argparse.ArgumentParser,
                     body: Callable[[argparse.Namespace, Plan], None], quiet: bool = False) -> int:
    """:func:`run_stage` for a script whose arguments come from its command line or, given none, from the DVC
    stage running it (:mod:`spanft.params.dvc_stage`: ``dvc.yaml`` passes no params text through a shell).

    ``script``: the file's name under ``pipeline/`` without ``.py``, which names its stage groups.
    """
    given = parser.parse_args() if sys.argv[1:] else None  # --help and usage errors need no params

    def call(plan: Plan) -> None:
        body(given or parser.parse_args(script_argv(plan, script)), plan)

    return run_stage(call, quiet)
