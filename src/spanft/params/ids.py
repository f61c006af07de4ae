"""What an identifier or a path in the params may look like: each check returns the problem, or None.

Values from ``params.yaml`` end up as hub requests, file paths, directory names and DVC stage names, so
they are held to the grammar of what they name: a hub repository id (``namespace/name``), a git revision
(branch, tag or commit), a dataset config or split, a name of ours (a backbone), or a path. Paths may be
relative or absolute and hold spaces and any non-ASCII letter, but no control character (a NUL, a newline).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

# The hub's repository ids (huggingface_hub.utils.validate_repo_id, ASCII as the hub itself requires):
# [namespace/]name, each part letters, digits, "_", "-", "." and starting and ending with a letter, digit or
# "_"; each part at most 96 characters; no "--" or ".."; not ending in ".git".
_HUB_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?"
_HUB_ID = re.compile(rf"(?:(?P<namespace>{_HUB_PART})/)?(?P<name>{_HUB_PART})")
HUB_PART_MAX = 96

# Our own names (backbones): they become directory names and DVC stage names.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

# Dataset configs (``wikitext-103-raw-v1``) and splits (``train``, ``train[:10%]``, ``train+validation``).
_CONFIG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_SPLIT_PART = r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*(?:\[[0-9:%.+-]*\])?"
_SPLIT = re.compile(rf"{_SPLIT_PART}(?:\+{_SPLIT_PART})*")

# git check-ref-format, one level allowed: no control character, space, ~ ^ : ? * [ \ or DEL.
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def hub_id_problem(value: str) -> str | None:
    """Why ``value`` is not a hub repository id (``bert-base-uncased``, ``Salesforce/wikitext``), or None."""
    match = _HUB_ID.fullmatch(value)
    if not match:
        return ("is not a hub id: [namespace/]name of letters, digits, '-', '_' and '.', starting and ending "
                "with a letter, digit or '_'")
    if max(len(match["namespace"] or ""), len(match["name"])) > HUB_PART_MAX:
        return f"is not a hub id: the namespace or the name is longer than {HUB_PART_MAX} characters"
    if "--" in value or ".." in value:
        return "is not a hub id: '--' and '..' are not allowed"
    if value.endswith(".git"):
        return "is not a hub id: it may not end in '.git'"
    return None


def revision_problem(value: str) -> str | None:
    """Why ``value`` is not a git revision (branch, tag, ``refs/convert/parquet``, commit hash), or None."""
    if value in ("", "@") or value.startswith("-"):
        return "is not a git revision (empty, '@', or starting with '-')"
    if _REF_FORBIDDEN.search(value):
        return "is not a git revision: no spaces, control characters or any of ~ ^ : ? * [ \\"
    if ".." in value or "@{" in value or "//" in value:
        return "is not a git revision: no '..', '@{' or '//'"
    if value.startswith("/") or value.endswith(("/", ".")):
        return "is not a git revision: it may not start with '/' or end with '/' or '.'"
    if any(part.startswith(".") or part.endswith(".lock") for part in value.split("/")):
        return "is not a git revision: no part may start with '.' or end with '.lock'"
    return None


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot name a backbone (a directory and a DVC stage name), or None."""
    if not _NAME.fullmatch(value) or "." in value:
        return ("is not a name: letters, digits, '_' and '-', starting with a letter or digit (no '.': DVC "
                "would split backbones.<source>.<name> at it)")
    return None


def config_problem(value: str) -> str | None:
    """Why ``value`` is not a dataset config name (``''`` means none), or None."""
    if value and not _CONFIG.fullmatch(value):
        return "is not a dataset config name: letters, digits, '_', '-', '.' and '+'"
    return None


def split_problem(value: str) -> str | None:
    """Why ``value`` is not a dataset split (``train``, ``train[:10%]``, ``train+validation``), or None."""
    if not _SPLIT.fullmatch(value):
        return "is not a dataset split: a name such as train, optionally sliced (train[:10%]) or joined with '+'"
    return None


def dependency_path_problem(value: str, empty_hint: str = "an empty folder of data/raw will do") -> str | None:
    """Why ``value`` cannot be a path that dvc.yaml lists as a stage dependency. None otherwise.

    ``empty_hint``: what to give instead of nothing."""
    if not value.strip():
        return f"is empty: it is a stage dependency in dvc.yaml ({empty_hint})"
    if value.startswith("~"):
        return "starts with '~', which DVC does not expand: give the full path"
    return None


def folder_problem(folder: str) -> str | None:
    """Why ``folder`` cannot be a folder under data.dir (empty, absolute, ``..``, a control character); else None."""
    if not folder.strip():
        return "is empty: name the folder under data.dir"
    if Path(folder).is_absolute() or ".." in Path(folder).parts:
        return "must be a relative path inside data.dir, without '..'"
    return path_problem(folder)


def path_problem(value: str) -> str | None:
    """Why ``value`` cannot be a path: a control character or a line separator in it. None otherwise."""
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            return f"holds the control character {ascii(ch)}: a path may not"
    return None


def is_local_name(value: str) -> bool:
    """Whether a model or tokenizer reference names a directory rather than a hub id: it exists, starts like
    a path (``/``, ``.``, ``~``, ``pkg:``) or holds more than one ``/`` (a hub id holds at most one)."""
    return (Path(value).exists() or value.startswith((".", "/", "~", "pkg:")) or value.count("/") > 1)
