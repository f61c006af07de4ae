"""``spanft recover-lock``: a ``dvc.lock`` cut by a run stopped while DVC wrote it, restored to every true record."""

from __future__ import annotations

import argparse
from pathlib import Path

from spanft.errors import SpanftError


def add_recover_lock(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("recover-lock", help="after 'dvc.lock is invalid' or records gone from it (a run stopped while "
                                            "DVC wrote it): restore every record whose outputs are as recorded")
    p.add_argument("--root", default=None, help="project root (default: the one holding the current folder)")
    p.set_defaults(run=recover)


def recover(args: argparse.Namespace) -> int:
    from spanft.fileio import repository_root
    from spanft.stage.lock_backup import recover_lock

    root = Path(args.root) if args.root is not None else repository_root()
    if root is None or not (root / ".dvc").is_dir():
        raise SpanftError(f"{args.root or Path.cwd()}: not inside a DVC project (no .dvc folder); give --root")
    for line in recover_lock(root).lines():
        print(f"recover-lock: {line}")
    return 0
