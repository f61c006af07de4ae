"""Outputs that are links into DVC's cache: never written through, and the fix that is safe to follow.

With ``cache.type`` symlink, hardlink or reflink (``spanft fanout`` sets ``reflink,hardlink,symlink,copy``),
a file DVC checked out may be the cache object itself: a symbolic link to it, a second name of it (a hard
link), or a copy-on-write clone (a reflink, which no cheap test tells from a copy). DVC marks its cache
objects read-only, and so every such output reads as read-only. ``chmod u+w`` on it would make the cache
object writable, and a write through the link would replace the version DVC committed: DVC's own fix is
``dvc unprotect PATH``, which makes the path a writable copy of its own and leaves the cache untouched.
:func:`read_only_fix` words the refusal; ``fileio.atomic_path`` never follows a link into the cache (it
replaces the link itself).
"""

from __future__ import annotations

import configparser
import hashlib
import os
import re
import shlex
from pathlib import Path

from spanft.errors import Context, Value, parts

# a DVC 3 cache object, in whatever cache folder: <cache>/files/md5/ab/cdef...
_OBJECT = re.compile(r"/files/md5/[0-9a-f]{2}/[0-9a-f]{30}(?:\.dir)?$")


def dvc_root(path: str | os.PathLike) -> Path | None:
    """The DVC project holding ``path`` (the nearest folder up with a ``.dvc`` folder), its link not followed."""
    folder = Path(os.path.realpath(Path(os.path.abspath(path)).parent))
    for candidate in (folder, *folder.parents):
        if (candidate / ".dvc").is_dir():
            return candidate
    return None


def cache_dir(root: Path) -> Path:
    """``root``'s cache: ``cache.dir`` of ``.dvc/config.local`` or ``.dvc/config`` (relative to ``.dvc``),
    else ``.dvc/cache``."""
    for name in ("config.local", "config"):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(root / ".dvc" / name, encoding="utf-8")
            configured = parser.get("cache", "dir", fallback=None)
        except (configparser.Error, OSError, UnicodeDecodeError):
            configured = None
        if configured:
            return Path(os.path.realpath(root / ".dvc" / configured.strip().strip("'\"")))
    return Path(os.path.realpath(root / ".dvc" / "cache"))


def _inside(path: str, folder: Path) -> bool:
    return path == str(folder) or path.startswith(str(folder) + os.sep)


def cache_link(path: str | os.PathLike) -> str | None:
    """How ``path`` is a link into DVC's cache: ``"a symbolic link"``, ``"a hard link"``; None when it is not
    (or cannot be told: a reflink)."""
    path = Path(path)
    root = dvc_root(path)
    if path.is_symlink():
        real = os.path.realpath(path)
        in_cache = root is not None and _inside(real, cache_dir(root))
        return "a symbolic link" if in_cache or "/.dvc/cache/" in real or _OBJECT.search(real) else None
    try:
        info = path.stat()
    except OSError:
        return None
    if root is None or info.st_nlink < 2 or not path.is_file():
        return None
    return "a hard link" if _same_as_cache_object(path, info, cache_dir(root)) else None


def _same_as_cache_object(path: Path, info: os.stat_result, cache: Path) -> bool:
    try:
        digest = hashlib.md5(path.read_bytes()).hexdigest()  # noqa: S324 - DVC 3's object name, not security
        objects = [cache / "files" / "md5" / digest[:2] / digest[2:], cache / digest[:2] / digest[2:]]
        return any(o.exists() and os.path.samestat(info, o.stat()) for o in objects)
    except OSError:
        return False


def unprotect_command(path: str | os.PathLike, root: Path) -> str:
    """``dvc unprotect PATH`` as a user types it here (from outside the project: ``cd ROOT && ...``)."""
    here = Path(os.path.realpath(os.getcwd()))
    if here == root or root in here.parents:
        return f"dvc unprotect {shlex.quote(str(path))}"
    relative = os.path.relpath(os.path.realpath(Path(os.path.abspath(path)).parent), root)
    target = os.path.normpath(os.path.join(relative, Path(path).name))
    return f"cd {shlex.quote(str(root))} && dvc unprotect {shlex.quote(target)}"


def read_only_fix(target: str | os.PathLike) -> str:
    """The refusal of a read-only file output (or one linked into DVC's cache), with a fix that loses nothing;
    when the line must be cut, the fix stays whole (the path first named is cut in its middle)."""
    root = dvc_root(target)
    link = cache_link(target)
    if link is not None:
        fix = f"`{unprotect_command(target, root)}`" if root is not None else "replace the link with a copy of its file"
        return parts("output ", Value(str(target)), f" is {link} into DVC's cache",
                     Context(": spanft never writes into the cache (the version DVC committed would be lost)"),
                     f"; run {fix}",
                     Context(" (it makes the output a writable copy of its own) or choose another path"))
    if root is not None:  # DVC's protection of a checked-out output, maybe a reflink: chmod would not copy it
        return parts("output ", Value(str(target)), " is read-only",
                     Context(" (as DVC leaves an output it links to its cache): spanft does not replace it, as cp "
                             "would not"),
                     f"; run `{unprotect_command(target, root)}`",
                     Context(" (it makes it a writable copy, the cache untouched) or choose another path"))
    return parts("output ", Value(str(target)), " is read-only",
                 Context(": spanft does not replace it (as cp would not)"),
                 f"; make it writable: `chmod u+w {shlex.quote(str(target))}`", Context(" or choose another path"))
