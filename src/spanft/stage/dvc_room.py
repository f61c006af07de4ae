"""Room for DVC's own files, checked before a stage works: a file-size limit (``ulimit -f``) or a nearly full disk
under a folder DVC writes makes DVC fail, after the stage's work, with its bare ``disk I/O error`` (its sqlite
index and state) or a failed cache copy. Here that is one line naming the limit or the folder, and the fix.

The folders are DVC's own: its cache (``cache.dir``, by default ``.dvc/cache``), ``.dvc/tmp``, and its site
cache (``core.site_cache_dir`` or ``$DVC_SITE_CACHE_DIR``, by default ``/var/tmp/dvc``), found through DVC's
config and ``dvc.dirs``. A limit or a free space below :data:`FLOOR` stops the stage; a finite limit above it
is said in a warning line, since a larger file or index then fails the same way.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from pathlib import Path

from spanft.errors import LIFT_FILE_SIZE_LIMIT, SpanftError, file_size_limit

log = logging.getLogger("spanft")

# Bytes DVC must be able to write. Its index and state files stay small (under 1 MiB each for this project's
# whole graph); the floor leaves room for them and for the journal sqlite writes beside them.
FLOOR = 64 * 2**20


def dvc_folders(root: Path) -> dict[str, Path] | None:
    """DVC's cache, tmp and site cache folders of the project at ``root``; None where ``root`` has no ``.dvc``."""
    dvc_dir = root / ".dvc"
    if not dvc_dir.is_dir():
        return None
    memo = dvc_dir / MEMO
    kept = _kept_folders(memo, root)
    if kept is not None:
        return kept
    from dvc.config import Config, ConfigError
    from dvc.dirs import site_cache_dir

    files: dict[str, str] = {}
    try:
        config = Config(dvc_dir=str(dvc_dir))
        files = dict(config.files)
        cache, site = config["cache"].get("dir"), config["core"].get("site_cache_dir")
    except ConfigError:  # DVC says what is wrong with its config itself, when it runs
        cache, site = None, None
    folders = {"cache": Path(cache) if cache else dvc_dir / "cache", "tmp": dvc_dir / "tmp",
               "site cache": Path(site_cache_dir(site)) / "repo"}
    if files:
        _keep_folders(memo, _memo_key(list(files.values()), root), folders)
    return folders


# What DVC's config said, kept for the next stage (importing DVC and reading its config takes 0.1-0.2 s a stage):
# valid while DVC's config files (their paths as DVC named them; size and time, or absent), this process's
# environment variables that place them and this interpreter are the same.
MEMO = Path("tmp") / "spanft-dvc-folders.json"
_PLACING = ("DVC_SYSTEM_CONFIG_DIR", "DVC_GLOBAL_CONFIG_DIR", "DVC_SITE_CACHE_DIR", "HOME")  # dvc/dirs.py


def _memo_key(files: list[str], root: Path) -> dict:
    environment = {k: v for k, v in os.environ.items() if k in _PLACING or k.startswith("XDG_")}
    return {"files": {path: _stat(path) for path in sorted(files)}, "environment": environment,
            "python": sys.executable, "uid": os.getuid() if hasattr(os, "getuid") else None,
            "cwd": os.getcwd(), "root": str(root)}


def _stat(path: str) -> list[int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_mtime_ns, found.st_size, found.st_ino]


def _kept_folders(memo: Path, root: Path) -> dict[str, Path] | None:
    try:
        kept = json.loads(memo.read_text(encoding="utf-8"))
        if kept["key"] == _memo_key(list(kept["key"]["files"]), root):
            return {name: Path(folder) for name, folder in kept["folders"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def _keep_folders(memo: Path, key: dict, folders: dict[str, Path]) -> None:
    if not memo.parent.is_dir():
        return  # no DVC temporary folder yet: DVC makes it
    partial = memo.with_name(f"{memo.name}.{os.getpid()}")
    try:
        partial.write_text(json.dumps({"key": key, "folders": {k: str(v) for k, v in folders.items()}}),
                           encoding="utf-8")
        partial.replace(memo)
    except OSError:
        partial.unlink(missing_ok=True)


def _shown(folder: Path, root: Path) -> str:
    return os.path.relpath(folder, root) if folder.is_relative_to(root) else str(folder)


def _free_bytes(folder: Path) -> int:
    """Free bytes for this user on the disk that holds ``folder`` (or its nearest existing parent: DVC makes it)."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return shutil.disk_usage(folder).free


_MOVE = {"cache": "or move the cache: `dvc cache dir DIR`",
         "site cache": "or move it: `dvc config --local core.site_cache_dir DIR`", "tmp": ""}


def room_problem(root: Path) -> str | None:
    """One line on what would make DVC fail for lack of room under ``root``'s DVC folders; None if nothing does.

    A file-size limit below :data:`FLOOR` (every folder is limited), else the first folder whose disk has less
    than :data:`FLOOR` bytes free for this user.
    """
    folders = dvc_folders(root)
    if folders is None:
        return None
    limit = file_size_limit()
    if limit is not None and limit < FLOOR:
        return (f"the file-size limit (ulimit -f) is {limit:,} bytes: DVC's index and cache ({_names(folders, root)}) "
                f"need {FLOOR:,} and would fail with 'disk I/O error'; lift it: {LIFT_FILE_SIZE_LIMIT}")
    for name, folder in folders.items():
        free = _free_bytes(folder)
        if free < FLOOR:
            move = f", {_MOVE[name]}" if _MOVE[name] else ""
            return (f"{_shown(folder, root)} (DVC's {name}): {free:,} bytes free on its disk, under the {FLOOR:,} "
                    f"DVC needs (else 'disk I/O error'); free space there{move}")
    return None


def _names(folders: dict[str, Path], root: Path) -> str:
    return ", ".join(_shown(folder, root) for folder in folders.values())


def check_dvc_room(root: Path) -> None:
    """Before a stage works: stop, in one line, where DVC would fail for lack of room (:func:`room_problem`); warn
    of a finite file-size limit above the floor."""
    problem = room_problem(root)
    if problem:
        raise SpanftError(problem)
    limit, folders = file_size_limit(), dvc_folders(root)
    if limit is not None and folders is not None:
        log.warning("the file-size limit (ulimit -f) is %s bytes: a file or DVC index (%s) beyond it fails "
                    "('File too large', DVC's 'disk I/O error'); %s lifts it", f"{limit:,}", _names(folders, root),
                    LIFT_FILE_SIZE_LIMIT)


def index_failed(root: Path, error: Exception) -> str:
    """The line for an error from DVC's sqlite index or state (``disk I/O error``, ``database or disk is full``):
    the folder that is full or limited where one is, else every place it can be."""
    why = room_problem(root) or (
        "the disk of .dvc/tmp or of DVC's site cache is full, over quota, limited or without file locking; free "
        "space there, or set the site cache on a local disk: dvc config --local core.site_cache_dir DIR")
    return f"{root}: DVC's index failed ({error}): {why}"
