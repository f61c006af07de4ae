"""The spanft command line, for people: each subcommand parses its flags and calls library code.

The DVC graph does not go through here: its stages run ``pipeline/<stage>.py``, which read params.yaml.
Handlers import the library lazily so that ``spanft count-ngrams`` does not pay for importing torch.
User mistakes raise :class:`spanft.errors.SpanftError` and are printed as one line (exit 2).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import sys
from typing import Sequence

from spanft.errors import run_command


def build_parser() -> argparse.ArgumentParser:
    # imported here, inside main's run_command: a Ctrl-C while they load is one line, not a traceback
    from spanft.cli import (
        cluster,
        data,
        lock,
        model,
        params,
        plan,
        readme,
        report,
        status,
        text,
        train,
    )

    commands = [data.add_corpus, text.add_count_ngrams, text.add_build_dict, text.add_segment, model.add_backbone,
                train.add_finetune, data.add_describe, data.add_prepare_task, report.add_submission,
                text.add_segment_task, text.add_train_tagger, params.add_check_params, params.add_profile,
                params.add_dvc_yaml, plan.add_plan, report.add_report, report.add_glue_submission, report.add_grid_report,
                report.add_grid_command, cluster.add_fanout, readme.add_readme,
                status.add_status, lock.add_recover_lock]
    parser = argparse.ArgumentParser(prog="spanft", description=__doc__.splitlines()[0])
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in commands:
        add(sub)
    return parser


def _version() -> str:
    try:
        return importlib.metadata.version("spanft")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree without installing
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(lambda: _parse_and_run(argv))


def _parse_and_run(argv: Sequence[str] | None) -> int | None:
    args = build_parser().parse_args(argv)
    from spanft.stage.progress import bars_only_on_a_terminal

    bars_only_on_a_terminal()  # before the command imports a Hugging Face library
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="spanft: %(message)s",
        stream=sys.stderr,
    )
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
