"""Reading a params file (YAML) with one-line errors, and looking up dotted keys in it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from spanft.errors import SpanftError

log = logging.getLogger("spanft")


def load_params(path: str | Path) -> dict:
    """The parsed YAML mapping of ``path``, with one-line errors."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise SpanftError(f"{path}: params file not found")
    try:
        tree = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SpanftError(f"{path}: not valid UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpanftError(f"{path}{line}: not valid YAML: {problem}") from None
    if not isinstance(tree, dict):
        raise SpanftError(f"{path}: expected a mapping of parameters at the top level")
    return tree


def lookup(tree: Any, dotted: str, path: str | Path) -> Any:
    """``tree[a][b]...`` for ``dotted = "a.b..."``, with an error naming the missing key."""
    node = tree
    walked: list[str] = []
    for part in dotted.split("."):
        walked.append(part)
        if not isinstance(node, dict) or part not in node:
            raise SpanftError(f"{path}: key {'.'.join(walked)} not found")
        node = node[part]
    return node
