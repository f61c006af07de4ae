"""``spanft check-params``, ``spanft profile`` and ``spanft dvc-yaml``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spanft.params.plan import load_plan
from spanft.params.profiles import PROFILES_DIR, use_profile
from spanft.stage.dvc_yaml import finetune_section, section_in, write_finetune_section
from spanft.stage.records import check_lock_records


def add_check_params(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-params", help="check params.yaml: unknown keys, types, references")
    p.add_argument("file", nargs="?", default="params.yaml", metavar="FILE")
    p.set_defaults(run=check_params)


def check_params(args: argparse.Namespace) -> int:
    from spanft.params.plan import project_of

    plan = load_plan(args.file, check_sources=True)  # a profile's paths from its project, as after `spanft profile`
    check_lock_records(root=project_of(args.file))
    print(f"{args.file}: ok (profile {plan.profile}, {len(plan.runs())} fine-tuning runs)")
    return 0


def add_profile(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="switch profiles: copy profiles/NAME.yaml to params.yaml (embedded | small | "
                                       "paper)")
    p.add_argument("name", metavar="NAME", help="a file stem under profiles/: embedded (synthetic data, CPU), small "
                                                "(real data, a small encoder; `spanft plan` gives its hours), paper (the paper's backbones)")
    p.add_argument("--root", default=".", help="project root (holds profiles/ and params.yaml)")
    p.set_defaults(run=profile)


def profile(args: argparse.Namespace) -> int:
    target = use_profile(args.name, args.root)
    print(f"profile {args.name}: {Path(args.root) / PROFILES_DIR / (args.name + '.yaml')} -> {target}; now run `dvc repro`")
    return 0


def add_dvc_yaml(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dvc-yaml", help="write dvc.yaml's fine-tuning groups from the variant table")
    p.add_argument("file", nargs="?", default="dvc.yaml", metavar="FILE")
    p.add_argument("--check", action="store_true", help="only say whether FILE is up to date (exit 1 if not, 2 if it cannot be read)")
    p.set_defaults(run=dvc_yaml)


def dvc_yaml(args: argparse.Namespace) -> int:
    if args.check:
        if section_in(args.file) != finetune_section():
            print(f"spanft: {args.file}: the fine-tuning groups differ from the variant table; run `spanft "
                  f"dvc-yaml` to rewrite them", file=sys.stderr)
            return 1
        print(f"{args.file}: fine-tuning groups up to date")
        return 0
    changed = write_finetune_section(args.file)
    print(f"{args.file}: fine-tuning groups {'rewritten' if changed else 'already up to date'}")
    return 0
