"""How a ``pipeline/`` stage script runs: on ``params.yaml`` checked once as a whole, with one-line errors."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Callable

from spanft.errors import run_command
from spanft.params.dvc_stage import script_argv
from spanft.params.schema import check_params_file

PARAMS_FILE = "params.yaml"  # DVC runs every stage at the project root


def stage_params(path: str | Path = PARAMS_FILE) -> dict:
    """The params tree after the full check (unknown keys, types, references); a stage reads its own block."""
    return check_params_file(path)


def run_stage(body: Callable[[dict], None], quiet: bool = False) -> int:
    """Run a stage script's ``body(params)`` on the checked params: spanft's log format, one-line errors."""
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="spanft: %(message)s",
                        stream=sys.stderr)

    def call() -> None:
        body(stage_params())  # a stage's result is its output files; the exit code is 0 unless it raised

    return run_command(call)


def run_stage_script(script: str, parser: argparse.ArgumentParser,
                     body: Callable[[argparse.Namespace, dict], None], quiet: bool = False) -> int:
    """:func:`run_stage` for a script whose arguments come from its command line or, given none, from the DVC
    stage running it (:mod:`spanft.params.dvc_stage`: ``dvc.yaml`` passes no params text through a shell).

    ``script``: the file's name under ``pipeline/`` without ``.py``, which names its stage groups.
    """
    given = parser.parse_args() if sys.argv[1:] else None  # --help and usage errors need no params

    def call(params: dict) -> None:
        body(given or parser.parse_args(script_argv(params, script, [], PARAMS_FILE)), params)

    return run_stage(call, quiet)
