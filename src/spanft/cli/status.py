"""``spanft status``: where a running ``dvc repro`` or ``dvc exp run`` stands, from another terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

from spanft.errors import SpanftError


def add_status(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="which stage of how many a running dvc repro / dvc exp run is at, the time "
                                      "spent and about how long is left")
    p.add_argument("--root", default=None, help="project root (default: the one holding the current folder)")
    p.set_defaults(run=status)


def status(args: argparse.Namespace) -> int:
    from spanft.fileio import repository_root
    from spanft.stage.progress import status_lines

    root = Path(args.root) if args.root is not None else repository_root()
    if root is None or not (root / ".dvc").is_dir():
        raise SpanftError(f"{args.root or Path.cwd()}: not inside a DVC project (no .dvc folder); give --root")
    print("\n".join(status_lines(root)))
    return 0
