"""``dvc.lock``'s stage entries, read as DVC reads them (ruamel, YAML 1.2) at a fraction of the cost.

Every stage checks the lock records of the stages it reads before its work (:mod:`spanft.stage.records`), and
DVC rewrites ``dvc.lock`` after every stage, so each stage process meets a new file: the embedded graph's
(~7,000 lines) takes ruamel 0.3-0.6 s to read whole, on every stage. But DVC rewrites one entry at a time, and
each entry's text is self-contained: under ``stages:`` every entry starts on a line indented by exactly two
spaces, and everything inside it is indented further. So the file is cut into its entries' texts, and each text
is read once: its reading is kept in :data:`CACHE` under DVC's temporary folder (``.dvc/tmp``, never tracked),
keyed by the text's hash, and a later stage reads only the entries that changed.

Whenever the file is not in the shape DVC writes (a directive, a flow mapping, an entry that does not read
alone as one mapping entry, a name given twice, a value that JSON cannot hold as read), the whole file is read
as before: the result is always what reading the whole file gives.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAMLError as RuamelYAMLError

from spanft.params.load import dvc_reading

CACHE = Path(".dvc") / "tmp" / "spanft-lock-entries.json"  # {sha1 of an entry's text: [name, entry]}
_ENTRY = re.compile(r"  [^\s#\-?&*!|>'\"%@`{\[]")  # an entry's first line: a plain key two spaces in
_TOP = re.compile(r"[^\s#]")  # a top-level line: the stages block has ended


def lock_stages(lock_path: Path, root: Path) -> dict:
    """The ``stages`` mapping of the lock file at ``lock_path`` as ruamel's safe loader reads the whole file
    (``{}`` when it has none); raises what reading the whole file raises (OSError, ruamel's errors, ...)."""
    text = lock_path.read_text(encoding="utf-8")
    cut = _cut(text)
    if cut is not None:
        stages = _from_entries(*cut, root / CACHE)
        if stages is not None:
            return stages
    return (dvc_reading(text) or {}).get("stages") or {}


def _cut(text: str) -> tuple[str, list[str]] | None:
    """``(the text outside the stages block, each entry's text)``, or None where the file is not DVC's shape."""
    lines = text.splitlines(keepends=True)
    if any(line.startswith(("%", "---", "...")) for line in lines):
        return None  # a directive or document markers: read whole
    try:
        start = next(i for i, line in enumerate(lines) if line.rstrip("\r\n") == "stages:")
    except StopIteration:
        return None
    end = next((i for i in range(start + 1, len(lines)) if _TOP.match(lines[i])), len(lines))
    entries: list[list[str]] = []
    for line in lines[start + 1:end]:
        if _ENTRY.match(line):
            entries.append([line])
        elif entries and (line.startswith("   ") or not line.strip()):
            entries[-1].append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            return None  # a line the cut cannot place
    return "".join(lines[:start] + lines[end:]), ["".join(entry) for entry in entries]


def _from_entries(outside: str, entries: list[str], cache_path: Path) -> dict | None:
    """The stages mapping from the entries' texts, each read once across processes; None: read the whole file."""
    try:
        rest = dvc_reading(outside)
    except (RuamelYAMLError, ValueError):
        return None
    if rest is not None and (not isinstance(rest, dict) or "stages" in rest):
        return None
    cache = _load(cache_path)
    stages: dict[str, Any] = {}
    fresh: dict[str, list] = {}
    for text in entries:
        key = hashlib.sha1(text.encode("utf-8")).hexdigest()  # noqa: S324 - a cache key, not security
        found = cache.get(key)
        if not (isinstance(found, list) and len(found) == 2 and isinstance(found[0], str)):
            found = _read_entry(text)
            if found is None:
                return None
        name, entry = found
        if name in stages:
            return None  # a name given twice: what reading the whole file says about it, it says
        stages[name] = entry
        fresh[key] = [name, entry]
    if fresh.keys() != cache.keys():
        _save(cache_path, fresh)
    return stages


def _read_entry(text: str) -> list | None:
    """``[name, entry]`` of one entry's text, where it reads alone as one mapping entry that JSON holds as read."""
    try:
        tree = dvc_reading(text)
    except (RuamelYAMLError, ValueError):
        return None
    if not isinstance(tree, dict) or len(tree) != 1:
        return None
    name, entry = next(iter(tree.items()))
    try:
        kept = json.loads(json.dumps([name, entry]))
    except (TypeError, ValueError):
        return None  # a date, a NaN...: not kept, so read whole
    return kept if kept == [name, entry] and _same_types([name, entry], kept) else None


def _same_types(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return all(_same_types(k, j) and _same_types(a[k], b[j]) for k, j in zip(a, b))
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b))
    return True


def _load(path: Path) -> dict[str, list]:
    try:
        cache = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return cache if isinstance(cache, dict) else {}


def _save(path: Path, cache: dict[str, list]) -> None:
    """Written whole, then renamed (a reader sees the old or the new); no DVC temporary folder: not kept."""
    if not path.parent.is_dir():
        return
    partial = path.with_name(f"{path.name}.{os.getpid()}")
    try:
        partial.write_text(json.dumps(cache), encoding="utf-8")
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)
