"""Atomic outputs and careful text input shared by every stage.

Every output is written to a temporary file beside its target and renamed into place only when
complete, so an interrupted or failed stage never leaves a file that DVC or a user would take as
finished.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Iterator

from spanft.errors import SpanftError, where

log = logging.getLogger("spanft")


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` if the block succeeds.

    Works for files and directories (a directory target replaces any existing one).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()
    try:
        yield tmp
        if not tmp.exists():
            raise RuntimeError(f"nothing was written to the temporary path for {target}")
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()


def _remove_stale_temporaries(target: Path) -> None:
    """Temporaries of ``target`` left by a killed writer (SIGKILL skips ``finally``): one writer per target."""
    for stale in target.parent.glob(f".{glob_escape(target.name)}.*.tmp"):
        log.info("removing %s, left by an interrupted earlier write", stale)
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


def glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)


@contextlib.contextmanager
def atomic_open(target: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file for writing; it replaces ``target`` only if the block succeeds."""
    if "b" in mode:
        encoding = None
    with atomic_path(target) as tmp:
        with open(tmp, mode, encoding=encoding, newline="\n" if encoding else None) as handle:
            yield handle


def require_file(path: str | os.PathLike, what: str = "file") -> Path:
    """Return ``path`` as a Path, or raise a one-line error if it is not an existing file."""
    path = Path(path)
    if not path.is_file():
        raise SpanftError(f"{path}: {what} not found")
    return path


def read_text_lines(path: str | os.PathLike, what: str = "file") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` (1-based, newline stripped) from a UTF-8 file.

    Non-UTF-8 bytes raise a SpanftError naming the file and line instead of a UnicodeDecodeError.
    """
    path = require_file(path, what)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SpanftError(
                    f"{where(path, number)}: not valid UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1})"
                ) from None
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]
            yield number, line.rstrip("\r\n")


def read_text(path: str | os.PathLike, what: str = "file") -> str:
    """Read a whole UTF-8 file; non-UTF-8 bytes raise a SpanftError naming the file and line."""
    path = require_file(path, what)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpanftError(f"{where(path, line)}: not valid UTF-8 (byte {data[exc.start]:#04x})") from None
    return text[1:] if text.startswith("\ufeff") else text


def file_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
