"""Rewriting a user's text file in place (``spanft readme``, ``spanft dvc-yaml``, ``spanft profile``): only the
command's own text changes.

A file is read as bytes: a UTF-8 byte-order mark is noted and written back, a byte that is not UTF-8 is one
error line naming the file, line and byte, and every line keeps its own end (``\\r\\n`` or ``\\n``: a file with
both keeps each where it was); lines a command writes take the end of the marker line above them. A block
is found by its marker lines only when it is unambiguous (one begin, one end after it, no other block's
marker inside); otherwise the command refuses in one line naming the file, the block and the lines, and
writes nothing. The rewritten file replaces the old one atomically and keeps its permission bits.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from spanft.errors import Context, SpanftError, Value, parts
from spanft.fileio import Inputs, atomic_path, require_file

BOM = "\ufeff"


def read_user_text(path: str | os.PathLike, what: str = "file") -> tuple[str, bool]:
    """The file's text, every line end as it is, without its byte-order mark; and whether it had one."""
    path = require_file(path, what)
    data = path.read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SpanftError(f"{path}: UTF-16 (its byte-order mark says so): spanft rewrites UTF-8 files only; "
                          f"save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpanftError(parts(Value(str(path)), f":{line}: not valid UTF-8 (byte {data[exc.start]:#04x} at column "
                                f"{column})", Context(": spanft changed nothing"), "; save the file as UTF-8")) from None
    return (text[1:], True) if text.startswith(BOM) else (text, False)


def write_user_text(path: str | os.PathLike, text: str, bom: bool = False, inputs: Inputs = ()) -> None:
    """Replace ``path`` by ``text`` (its byte-order mark back if it had one) atomically, keeping its mode."""
    path = Path(path)
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
    with atomic_path(path, inputs=inputs) as tmp:
        tmp.write_bytes(((BOM if bom else "") + text).encode("utf-8"))
        if mode is not None:
            os.chmod(tmp, mode)


def line_end(line: str) -> str:
    """The end a line (as ``splitlines(keepends=True)`` on ``\\n`` only gives it) carries."""
    return "\r\n" if line.endswith("\r\n") else "\n" if line.endswith("\n") else ""


def split_lines(text: str) -> list[str]:
    """``text``'s lines, each with its own end; only ``\\n`` ends a line."""
    return [line for line in re.split(r"(?<=\n)", text) if line]


def block_lines(lines: list[str], begin: str, end: str, where: str, name: str,
                other_marker: re.Pattern | None = None) -> tuple[int, int]:
    """The indexes of the one begin line and the one end line of block ``name`` (a line equal to a marker,
    blanks around it aside); a one-line refusal naming ``where``, the block and the lines where it is ambiguous
    (no marker, two of one, the end first, another block's marker between them)."""
    begins = [n for n, line in enumerate(lines) if line.strip() == begin.strip()]
    ends = [n for n, line in enumerate(lines) if line.strip() == end.strip()]
    problem = None
    if len(begins) != 1 or len(ends) != 1:
        problem = "; ".join(f"{_count(found)} {kind} marker{'s' * (len(found) != 1)}{_at(found)}"
                            for kind, found in (("begin", begins), ("end", ends)) if len(found) != 1)
    elif ends[0] < begins[0]:
        problem = f"its end marker (line {ends[0] + 1}) comes before its begin marker (line {begins[0] + 1})"
    elif other_marker is not None:
        inside = [n for n in range(begins[0] + 1, ends[0]) if other_marker.fullmatch(lines[n].strip())]
        if inside:
            problem = f"another block's marker{_at(inside)} lies between its begin (line {begins[0] + 1}) and end"
    if problem:
        raise SpanftError(parts(Value(where), f": generated block '{name}' is not one clear block: {problem}",
                                Context(f" ({begin.strip()} ... {end.strip()}, each on a line of its own)"),
                                "; nothing was changed: keep exactly one begin and one end line, in that order"))
    return begins[0], ends[0]


def _count(found: list[int]) -> str:
    return "no" if not found else str(len(found))


def _at(found: list[int]) -> str:
    if not found:
        return ""
    return f" (line{'s' * (len(found) > 1)} {', '.join(str(n + 1) for n in found[:6])}{', ...' * (len(found) > 6)})"


def replace_lines(lines: list[str], first: int, last: int, body: str) -> str:
    """The text of ``lines`` with lines ``first + 1 .. last - 1`` replaced by ``body`` (``\\n``-separated), its
    lines ending as the line ``first`` does; the other lines byte for byte as they were."""
    end = line_end(lines[first]) or "\n"
    new = [f"{line}{end}" for line in body.split("\n")] if body else []
    if not line_end(lines[first]):
        lines = [*lines[:first], lines[first] + end, *lines[first + 1:]]
    return "".join([*lines[:first + 1], *new, *lines[last:]])
