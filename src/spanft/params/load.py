"""Reading a params file (YAML) with one-line errors, and looking up dotted keys in it.

One loader for every params file: PyYAML's safe loader (no tags that build Python objects) with three
changes. Numbers in exponent form without a dot (``3e-05``, what ``dvc exp run -S lr=3e-5`` writes) are
floats, as in YAML 1.2, where YAML 1.1 would read a string. A key given twice in one mapping is an error
naming both lines, where YAML would silently keep the last. An alias (``*name``, ``<<: *name``) is an error:
``dvc exp run -S`` leaves a value reached through an alias as it was, without a word, so the experiment would
run with the old value.

DVC reads the same file with ruamel's YAML 1.2 loader (``dvc/utils/serialize/_yaml.py``: ``parse_yaml``), and
writes what it reads into ``dvc.lock`` and ``dvc params diff``. Where the two dialects read a scalar differently
(``010``: 8 for YAML 1.1, 10 for DVC; ``yes``, ``1:30``, ``0o17``, ``+.5``) the file is refused in one line
naming the key, the line and both readings, so a run never uses a value that DVC records as another.
"""

from __future__ import annotations

import copy
import logging
import re
import unicodedata
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML as RuamelYAML
from ruamel.yaml import YAMLError as RuamelYAMLError

from spanft.errors import SpanftError, where
from spanft.fileio import read_text

log = logging.getLogger("spanft")

# YAML 1.2 core-schema floats that YAML 1.1 misses: an exponent with an optional sign, with or without a dot.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")


class _AliasInParams(yaml.YAMLError):
    def __init__(self, event: yaml.AliasEvent, defined: bool) -> None:
        super().__init__(event.anchor)
        self.anchor = event.anchor
        self.line = event.start_mark.line + 1
        self.defined = defined

    def message(self, path: str | Path) -> str:
        if not self.defined:
            return f"{where(path, self.line)}: *{self.anchor} names no anchor (no &{self.anchor} before it)"
        return (f"{where(path, self.line)}: *{self.anchor} repeats the values anchored &{self.anchor}, which "
                "`dvc exp run -S` would leave unchanged there: write the values out")


class ParamsLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that reads ``3e-05`` as a float and refuses duplicate keys and aliases."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _AliasInParams(event, defined=event.anchor in self.anchors)
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key (a list): the base class reports it
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first given at line {first})", key_node.start_mark
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


ParamsLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789."))


_PARSED: dict[tuple[str, str], Any] = {}  # (path, text) -> tree: a stage reads params.yaml in several checks
_KEPT = 8  # readings kept per process


def parse_params(text: str, path: str | Path) -> Any:
    """The YAML document in ``text`` (read from ``path``), with errors naming ``path:line``; a scalar that DVC
    would read as another value is an error too. A text read before in this process is not parsed again (the
    same text gives the same tree; each caller gets its own copy)."""
    key = (str(path), text)
    if key not in _PARSED:
        if len(_PARSED) >= _KEPT:
            _PARSED.clear()
        _PARSED[key] = _parse_params(text, path)
    return copy.deepcopy(_PARSED[key])


def _parse_params(text: str, path: str | Path) -> Any:
    try:
        loader = ParamsLoader(text)
        try:
            node = loader.get_single_node()
            tree = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except _AliasInParams as exc:
        raise SpanftError(exc.message(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
        blank = _unusual_blank(text)
        if blank is not None:  # YAML takes it for text and fails further on: name the character, where it is
            at, column, char = blank
            raise SpanftError(f"{where(path, at)}: not valid YAML: {problem}; column {column} holds "
                              f"{unicodedata.name(char, 'a blank').lower()} ({ascii(char)[1:-1]}), which YAML does "
                              "not take for a space: type a plain space") from None
        raise SpanftError(f"{where(path, line)}: not valid YAML: {problem}") from None
    except RecursionError:
        raise SpanftError(f"{path}: not valid YAML: nested too deeply") from None
    _check_dvc_reads_the_same(text, node, tree, path)
    return tree


def _unusual_blank(text: str) -> tuple[int, int, str] | None:
    """(line, column, character) of the first blank other than a space, tab or line end (a pasted no-break
    space, a zero-width one): None where there is none outside comments."""
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        for column, char in enumerate(code, 1):
            if char not in " \t" and (char.isspace() or unicodedata.category(char) in ("Zs", "Cf")):
                return number, column, char
    return None


def dvc_reading(text: str) -> Any:
    """The YAML document in ``text`` as DVC reads a params file: ruamel's safe loader, YAML 1.2."""
    return RuamelYAML(typ="safe").load(text)


def _check_dvc_reads_the_same(text: str, node: yaml.Node | None, tree: Any, path: str | Path) -> None:
    try:
        theirs = dvc_reading(text)
    except (RuamelYAMLError, ValueError, RecursionError) as exc:
        problem = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise SpanftError(f"{path}: DVC cannot read it (YAML 1.2): {problem}") from None
    found = _first_split(node, tree, theirs, "")
    if found is None:
        return
    key, at, mine, dvcs = found
    raise SpanftError(f"{where(path, at.start_mark.line + 1)}: {key or '(the document)'}: {_source(at)} reads as "
                      f"{mine!r} in spanft (YAML 1.1) but {dvcs!r} in DVC (YAML 1.2: dvc.lock, dvc params diff): "
                      "write the value you mean in a form both read alike (quoted, if it is text)")


def _source(node: yaml.Node) -> str:
    return repr(node.value) if isinstance(node, yaml.ScalarNode) else f"the {node.id}"


def _same(mine: Any, theirs: Any) -> bool:
    """Equal values of one type, containers compared item by item (NaN counts as equal to NaN)."""
    if type(mine) is not type(theirs):
        return False
    if isinstance(mine, dict):
        return list(mine) == list(theirs) and all(_same(k, t) and _same(mine[k], theirs[t]) for k, t in zip(mine, theirs))
    if isinstance(mine, list):
        return len(mine) == len(theirs) and all(_same(a, b) for a, b in zip(mine, theirs))
    return mine == theirs or (mine != mine and theirs != theirs)


def _first_split(node: yaml.Node | None, mine: Any, theirs: Any, key: str) -> tuple[str, yaml.Node, Any, Any] | None:
    """``(dotted key, node, spanft's value, DVC's value)`` of the first scalar the two readings differ on."""
    if isinstance(node, yaml.MappingNode) and isinstance(mine, dict):
        if not isinstance(theirs, dict) or len(theirs) != len(mine) or len(node.value) != len(mine):
            return None if _same(mine, theirs) else (key, node, mine, theirs)  # merged (<<: {...}): no lines
        for (key_node, value_node), (k, v), (their_k, their_v) in zip(node.value, mine.items(), theirs.items()):
            dotted = f"{key}.{k}" if key else str(k)
            if not _same(k, their_k):
                return f"a key under {key or 'the top level'}", key_node, k, their_k
            found = _first_split(value_node, v, their_v, dotted)
            if found:
                return found
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(mine, list):
        if not isinstance(theirs, list) or len(theirs) != len(mine):
            return key, node, mine, theirs
        for i, (item_node, item, their_item) in enumerate(zip(node.value, mine, theirs)):
            found = _first_split(item_node, item, their_item, f"{key}[{i}]")
            if found:
                return found
        return None
    if node is None or _same(mine, theirs):
        return None
    return key, node, mine, theirs


def load_params(path: str | Path) -> dict:
    """The parsed YAML mapping of ``path``, with one-line errors."""
    path = Path(path)
    tree = parse_params(read_text(path, "params file"), path)
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
