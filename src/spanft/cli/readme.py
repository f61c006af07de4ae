"""``spanft readme``: rewrite the README's generated blocks (every result it quotes) from their sources."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_readme(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("readme", help="rewrite README.md's generated blocks (scores, verdicts, times, estimates) "
                                      "from reports/, benchmarks/RESULTS.md and profiles/ as "
                                      "committed at git HEAD")
    p.add_argument("--root", default=".", help="project root (holds README.md, reports/, benchmarks/, profiles/)")
    p.add_argument("--check", action="store_true", help="only say which blocks are stale (exit 1 if any)")
    p.add_argument("--workspace", action="store_true",
                   help="read reports/, benchmarks/ and profiles/ from the working tree (default: as committed at git "
                        "HEAD, which a run of your own does not rewrite)")
    p.set_defaults(run=readme)


def readme(args: argparse.Namespace) -> int:
    from spanft.readme import FIX, README, refreshed
    from spanft.stage.textfile import read_user_text, write_user_text

    root = Path(args.root)
    text, bom = read_user_text(root / README, "README")  # its line ends, byte-order mark and mode are kept
    path = root / README
    text, changed = refreshed(text, root, args.workspace, str(path))
    if args.check:
        if changed:
            print(f"spanft: {path}: stale generated blocks: {', '.join(changed)}; {FIX}", file=sys.stderr)
            return 1
        print(f"{path}: every generated block up to date")
        return 0
    if changed:
        write_user_text(path, text, bom)
    print(f"{path}: {'rewrote ' + ', '.join(changed) if changed else 'every generated block already up to date'}")
    return 0
