"""Profiles: whole params files under ``profiles/``, one of which is copied over ``params.yaml``."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from spanft.errors import SpanftError
from spanft.fileio import atomic_open

from spanft.params.schema import check_params_file

log = logging.getLogger("spanft")

PROFILES_DIR = "profiles"


def available_profiles(root: Path) -> list[str]:
    return sorted(p.stem for p in (root / PROFILES_DIR).glob("*.yaml"))


def use_profile(name: str, root: str | Path = ".") -> Path:
    """Copy ``profiles/<name>.yaml`` over ``params.yaml`` (checked first, written atomically)."""
    root = Path(root)
    source = root / PROFILES_DIR / f"{name}.yaml"
    if not source.is_file():
        choices = ", ".join(available_profiles(root)) or f"none (no {root / PROFILES_DIR} directory)"
        raise SpanftError(f"unknown profile {name!r}; available profiles: {choices}")
    check_params_file(source)
    target = root / "params.yaml"
    with atomic_open(target, inputs=[source]) as handle:
        with open(source, encoding="utf-8") as src:
            shutil.copyfileobj(src, handle)
    return target
