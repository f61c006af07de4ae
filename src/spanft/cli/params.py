"""``spanft check-params`` and ``spanft profile``."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_check_params(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-params", help="check params.yaml: unknown keys, types, references")
    p.add_argument("file", nargs="?", default="params.yaml", metavar="FILE")
    p.set_defaults(run=check_params)


def check_params(args: argparse.Namespace) -> int:
    from spanft.params.schema import check_params_file

    tree = check_params_file(args.file)
    print(f"{args.file}: ok (profile {tree['profile']})")
    return 0


def add_profile(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="switch profiles: copy profiles/NAME.yaml to params.yaml (embedded | paper)")
    p.add_argument("name", metavar="NAME", help="a file stem under profiles/: embedded, paper")
    p.add_argument("--root", default=".", help="project root (holds profiles/ and params.yaml)")
    p.set_defaults(run=profile)


def profile(args: argparse.Namespace) -> int:
    from spanft.params.profiles import PROFILES_DIR, use_profile

    target = use_profile(args.name, args.root)
    print(f"profile {args.name}: {Path(args.root) / PROFILES_DIR / (args.name + '.yaml')} -> {target}; now run `dvc repro`")
    return 0
