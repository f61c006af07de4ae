"""``spanft report``, ``glue-submission`` and ``submission``."""

from __future__ import annotations

import argparse
import shlex


def add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write every table and figure of the paper from the runs (reports/)")
    p.add_argument("--params", default="params.yaml", help="params file (profile, studies, reports, dict_sizes)")
    p.add_argument("--runs", default="data/runs", help="runs root: <study>/<backbone>/<task>/<variant>/seed<N>/")
    p.add_argument("--segmented", default="data/segmented", help="segmented data root (ngram/, random/, chunker/, sweep/)")
    p.add_argument("--out", default="reports", help="report directory to write")
    p.add_argument("--step-cost", default="data/step_cost.json",
                   help="the step_cost stage's file: Table 3's side-by-side step costs")
    p.add_argument("--corpus-record", default="data/corpus/provenance.json",
                   help="the corpus stage's provenance record, shown in the summary (absent: not recorded)")
    p.add_argument("--paper-values", default=None, help="published numbers YAML (default: spanft/report/paper_values.yaml)")
    p.set_defaults(run=report)


REPORT_INDEX_START = "Profile: "  # the first line of every index.md the report writes (report.cells.profile_line)


def check_report_folder(out: str) -> None:
    """``--out`` must be new, empty or the report's own folder (its ``index.md`` written by the report): the
    report replaces its files by name and removes ``index.md`` first, so never in a folder of the user's."""
    from pathlib import Path

    from spanft.errors import SpanftError

    folder = Path(out)
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    index, own = folder / "index.md", False
    if index.is_file():  # never opened when it is a FIFO or a device (is_file is False for those)
        try:
            with open(index, encoding="utf-8") as handle:
                own = handle.readline().startswith(REPORT_INDEX_START)
        except (OSError, UnicodeDecodeError):
            own = False
    if not own:
        raise SpanftError(f"--out {out}: holds files the report did not write (no index.md of spanft report "
                          f"inside): the report writes only into a new, empty or earlier report folder; choose another")


def report(args: argparse.Namespace) -> int:
    from spanft.params.changes import with_changes
    from spanft.params.plan import load_plan
    from spanft.report.build import write_reports

    check_report_folder(args.out)
    write_reports(with_changes(load_plan(args.params)), args.runs, args.segmented, args.out, paper_values=args.paper_values,
                  corpus_record=args.corpus_record, step_cost_file=args.step_cost)
    return 0


def add_glue_submission(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("glue-submission", help="zip GLUE leaderboard files from one backbone's best runs")
    p.add_argument("--runs", required=True, help="one backbone's glue runs: data/runs/glue/<backbone>")
    p.add_argument("--variant", default="sf", help="baseline | sf (default sf)")
    p.add_argument("--out", required=True, help="zip file to write")
    p.set_defaults(run=glue_submission)


def glue_submission(args: argparse.Namespace) -> int:
    from spanft.report.submission import glue_submission

    glue_submission(args.runs, args.variant, args.out)
    return 0


def add_submission(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submission", help="zip GLUE leaderboard files from test prediction TSVs")
    p.add_argument("--pred", action="extend", nargs="+", default=[], metavar="STEM=TSV",
                   help="leaderboard stem (CoLA, MNLI-m, AX, ...) = predictions TSV (idx, gold, pred)")
    p.add_argument("--out", required=True, help="zip file to write")
    p.set_defaults(run=submission)


def submission(args: argparse.Namespace) -> int:
    from spanft.report.submission import parse_pred_arguments, write_glue_submission

    found, skipped = parse_pred_arguments(args.pred)
    write_glue_submission(found, args.out, skipped)
    return 0


def add_grid_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("grid-report", help="best hyper-parameter point per task by dev score (DVC experiments)")
    p.add_argument("exp_json", nargs="?", default=None, metavar="EXP_JSON",
                   help="saved `dvc exp show --json` output (default: run it here)")
    p.add_argument("--study", default="glue", help="study whose dev scores choose (default glue)")
    p.add_argument("--out", default=None, help="markdown file to write (default: print only)")
    p.set_defaults(run=grid_report)


def grid_report(args: argparse.Namespace) -> int:
    from spanft.report.grid import grid_report

    print(grid_report(args.exp_json, args.study, args.out), end="")
    return 0


def add_grid_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("grid-command", help="print the dvc command that queues the paper's grid for a task")
    p.add_argument("task", metavar="TASK")
    p.set_defaults(run=grid_command)


def grid_command(args: argparse.Namespace) -> int:
    from spanft.data.registry import get_task
    from spanft.report.grid import grid_command

    print(shlex.join(grid_command(get_task(args.task).name)))
    return 0
