"""Safe outputs and careful text input shared by every stage.

Outputs. Every output is written to a temporary path beside its target and renamed into place only when
complete, so an interrupted or failed stage never leaves a file that DVC or a user would take as finished.
A command deletes only what it made:

- an output may not be, contain or lie inside one of its inputs, the current directory or the repository
  root;
- a directory output carries a marker file (``.spanft-output``, naming the command that wrote it) that DVC
  caches and restores with it; an existing directory is replaced only when it is empty or holds the marker of
  the same command;
- a file output (``counts.tsv``, ``tagger.json``) replaces an existing file of that name, the way ``cp`` or
  ``sort -o`` do (a file cannot carry a marker; the old file stays whole until the new one is complete), but
  never a directory; through a symbolic link it replaces the link's target and keeps the link, as ``cp`` does
  (a link into DVC's cache is replaced itself: the cache is never written, ``spanft.stage.dvc_cache``).

Input. Text files are read as UTF-8 line by line, where only ``\\n`` and ``\\r\\n`` end a line (never the
``\\f``, ``\\v`` or U+2028 that ``str.splitlines`` also splits on), with errors naming the file and line.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import logging
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import IO, Iterable, Iterator

from spanft.errors import Context, SpanftError, Value, describe_os_error, parts, where
from spanft.stage.dvc_cache import cache_link, read_only_fix

log = logging.getLogger("spanft")

OUTPUT_MARKER = ".spanft-output"  # inside every directory output: {"made_by": "<command>"}

Inputs = Iterable["str | os.PathLike | None"]


# ------------------------------------------------------------------------------------------------ outputs


def check_output_location(target: str | os.PathLike, inputs: Inputs = ()) -> Path:
    """``target`` as a Path, or a one-line error if it is, contains or lies inside an input, or is (or
    contains) the current directory or the repository root."""
    target = Path(target)
    resolved = _real(target)
    for place, what in ((repository_root(), "the repository root"), (_real(Path.cwd()), "the current directory")):
        if place is not None and (resolved == place or resolved in place.parents):
            relation = "is" if resolved == place else "contains"
            raise SpanftError(f"output {target} {relation} {what} ({place}): spanft writes only below it")
    for source in inputs:
        if source is None or str(source) == "":
            continue
        real = _real(Path(source))
        if resolved == real:
            raise SpanftError(f"output {target} is also an input: spanft never writes over what it reads")
        if real in resolved.parents:
            raise SpanftError(f"output {target} lies inside the input {source}: choose a path outside it")
        if resolved in real.parents:
            raise SpanftError(f"output {target} contains the input {source}: choose a path that does not")
    for folder in target.parents:
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                raise SpanftError(f"output {target}: {folder} is not a directory")
            break
    return target


def check_output(target: str | os.PathLike, *, inputs: Inputs = (), made_by: str | None = None) -> Path:
    """Refuse, before any work, an output that would destroy what spanft did not make.

    ``made_by`` names the command of a directory output (``prepare-task``); ``None`` means a file output.
    """
    target = check_output_location(target, inputs)
    if made_by is None:
        if target.is_dir():
            raise SpanftError(f"output {target} is a directory; a file is written here: name the file")
        if target.is_file() and not _writable(target):
            raise SpanftError(read_only_fix(target))
    else:
        if os.path.exists(target) and not target.is_dir() and not target.is_file():
            raise SpanftError(f"output {target} is {_kind(target)}: a directory is written here; choose another path")
        _check_directory_target(target, made_by)
    return target


def _writable(path: Path) -> bool:
    """Writable by this user, and not marked read-only for everyone (root, too, keeps a file with no w bit)."""
    return os.access(path, os.W_OK) and bool(path.stat().st_mode & 0o222)


def is_special(target: str | os.PathLike) -> bool:
    """True for an existing output that is no regular file or directory (or a link to one): a character or
    block device (what /dev/null is), a FIFO, a socket, a process substitution's pipe. Never replaced."""
    return os.path.exists(target) and not os.path.isfile(target) and not os.path.isdir(target)


def _kind(path: Path) -> str:
    import stat

    mode = os.stat(path).st_mode
    kinds = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (pipe)"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _check_directory_target(target: Path, made_by: str) -> None:
    if target.is_symlink():
        raise SpanftError(f"output {target} is a symbolic link: spanft replaces only directories it wrote itself")
    if not target.exists():
        return
    if not target.is_dir():
        raise SpanftError(f"output {target} exists and is not a directory: choose another path")
    owner = output_owner(target)
    if owner is None and any(target.iterdir()):
        raise SpanftError(
            f"output {target} exists and was not written by spanft (no {OUTPUT_MARKER} inside): spanft replaces "
            f"only its own outputs; choose another path, or move it away yourself (mv)"
        )
    if owner is not None and owner != made_by:
        raise SpanftError(f"output {target} holds the output of `spanft {owner}`, not of `spanft {made_by}`: "
                          f"choose another path")
    if owner is not None:
        written = _written_files(target)
        extra = sorted(set(_files_under(target)) - written - {OUTPUT_MARKER}) if written is not None else []
        if extra:
            shown = ", ".join(extra[:3]) + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
            raise SpanftError(parts("output ", Value(str(target)), f" holds {shown}",
                                    Context(f", which `spanft {made_by}` did not write: spanft replaces only what it made"),
                                    f"; move {'it' if len(extra) == 1 else 'them'} out first"))


def _files_under(directory: Path) -> list[str]:
    """Every file (or link, or other non-directory) below ``directory``, as relative POSIX paths."""
    found = []
    for folder, subfolders, names in os.walk(directory):
        subfolders.sort()
        base = Path(folder).relative_to(directory)
        found += [(base / name).as_posix() for name in sorted(names)]
        found += [(base / name).as_posix() for name in subfolders if os.path.islink(os.path.join(folder, name))]
    return found


def _written_files(directory: Path) -> set[str] | None:
    """The files a directory output's marker lists as written (None for a marker without the list)."""
    try:
        files = json.loads((directory / OUTPUT_MARKER).read_text(encoding="utf-8")).get("files")
    except (OSError, ValueError, AttributeError):
        return None
    return set(files) if isinstance(files, list) and all(isinstance(f, str) for f in files) else None


def output_owner(directory: str | os.PathLike) -> str | None:
    """The command named by a directory output's marker; None without a readable marker."""
    try:
        owner = json.loads((Path(directory) / OUTPUT_MARKER).read_text(encoding="utf-8")).get("made_by")
    except (OSError, ValueError, AttributeError):
        return None
    return owner if isinstance(owner, str) else None


def repository_root() -> Path | None:
    """The project root: DVC's ``DVC_ROOT`` in a stage, else the nearest folder up holding ``.dvc`` or ``.git``."""
    if os.environ.get("DVC_ROOT"):
        return _real(Path(os.environ["DVC_ROOT"]))
    here = _real(Path.cwd())
    for folder in (here, *here.parents):
        if (folder / ".dvc").is_dir() or (folder / ".git").exists():
            return folder
    return None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike, *, inputs: Inputs = (), made_by: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; the block writes a file there (or, with ``made_by``, a
    directory); it replaces ``target`` only if the block succeeds. See the module's rules for what may be
    replaced; they are checked before the block runs and again before the rename. A file output that is a
    symbolic link is written through it, as ``cp`` does: the link stays, its target gets the content; but a
    link into DVC's cache is replaced itself, never written through (``spanft.stage.dvc_cache``)."""
    if made_by is None and os.path.islink(target) and not is_special(target) and cache_link(target) is None:
        target = linked_file(Path(target))
    target = check_output(target, inputs=inputs, made_by=made_by)
    if made_by is None and is_special(target):
        with _written_through(target) as tmp:
            yield tmp
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target)
    tmp = _temporary_name(target)
    try:
        try:
            yield tmp
        except OSError as exc:
            if exc.filename is None and exc.filename2 is None:  # a write or close: name what was being written
                raise SpanftError(f"{target}: {describe_os_error(exc)} (while writing it)") from None
            if any(_under(name, tmp) for name in (exc.filename, exc.filename2) if name is not None):
                # the user named the target, never the temporary beside it
                raise SpanftError(f"{_as_target(describe_os_error(exc), tmp, target)} (while writing it)") from None
            raise
        except SpanftError as exc:
            if str(tmp) in exc.message:
                raise SpanftError(_as_target(exc.message, tmp, target)) from None
            raise
        _finish(tmp, target, made_by)
        check_output(target, inputs=inputs, made_by=made_by)
        _move_into_place(tmp, target)
    finally:
        _remove(tmp)


def linked_file(link: Path) -> Path:
    """The file a link to a file names (made, like ``cp`` makes it, when the link dangles in an existing
    folder); a one-line error for a link loop or a dangling link into a missing folder."""
    real = _real(link)
    if os.path.islink(real):
        raise SpanftError(f"output {link} is a symbolic link that loops back on itself: choose another path")
    if not real.exists() and not real.parent.is_dir():
        raise SpanftError(f"output {link} is a symbolic link to {real}, whose folder does not exist: create "
                          f"{real.parent} or choose another path")
    return real


@contextlib.contextmanager
def _written_through(target: Path) -> Iterator[Path]:
    """A device, FIFO or pipe is never replaced: the output is made in a private temporary file and, once
    complete, written through to ``target`` (``/dev/null`` discards it, a pipe's reader receives it)."""
    folder = Path(tempfile.mkdtemp(prefix="spanft-"))
    tmp = folder / "output"
    try:
        try:
            yield tmp
        except OSError as exc:
            if exc.filename is None or _under(exc.filename, tmp):
                raise SpanftError(f"{target}: {_as_target(describe_os_error(exc), tmp, target)} (while writing it)") from None
            raise
        except SpanftError as exc:
            raise SpanftError(_as_target(exc.message, tmp, target)) from None
        if not tmp.is_file():
            raise RuntimeError(f"nothing was written to the temporary path for {target}")
        try:
            with open(tmp, "rb") as source, open(target, "wb") as sink:  # O_TRUNC on a device or pipe: no effect
                shutil.copyfileobj(source, sink)
        except OSError as exc:
            raise SpanftError(f"{target}: {describe_os_error(exc).removeprefix(f'{target}: ')} (while writing it)") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _under(name: object, tmp: Path) -> bool:
    path = os.path.abspath(os.fsdecode(name)) if isinstance(name, (str, bytes, os.PathLike)) else ""
    return path == os.path.abspath(tmp) or path.startswith(os.path.abspath(tmp) + os.sep)


def _as_target(message: str, tmp: Path, target: Path) -> str:
    """``message`` with the temporary path (and the absolute form of it) replaced by the target's name."""
    for form in sorted({str(tmp), os.path.abspath(tmp)}, key=len, reverse=True):
        message = message.replace(form, str(target))
    return message


def _finish(tmp: Path, target: Path, made_by: str | None) -> None:
    if not os.path.lexists(tmp):
        raise RuntimeError(f"nothing was written to the temporary path for {target}")
    if made_by is None and tmp.is_dir():
        raise RuntimeError(f"a directory was written for {target}: atomic_path needs made_by for a directory")
    if made_by is not None:
        if not tmp.is_dir():
            raise RuntimeError(f"atomic_path(made_by={made_by!r}) expects a directory for {target}")
        files = [name for name in _files_under(tmp) if name != OUTPUT_MARKER]  # a later write replaces only these
        (tmp / OUTPUT_MARKER).write_text(json.dumps({"made_by": made_by, "files": files}) + "\n", encoding="utf-8")


def _move_into_place(tmp: Path, target: Path) -> None:
    """Rename ``tmp`` onto ``target``; a previous directory is swapped out first and removed after."""
    previous = None
    with _signals_deferred():
        if tmp.is_dir() and os.path.lexists(target):
            previous = _temporary_name(target)  # a kill right here leaves it for the next write to sweep
            os.replace(target, previous)
            try:
                os.replace(tmp, target)
            except BaseException:
                os.replace(previous, target)
                raise
        else:
            os.replace(tmp, target)
    if previous is not None:
        _remove(previous)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM for the few system calls that swap an output into place."""
    try:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    except (AttributeError, OSError, ValueError):  # no POSIX signal masks here
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _temporary_name(target: Path) -> Path:
    """A fresh name ``.<target name>.<pid>-<random>.tmp`` beside ``target`` (nothing is created there)."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}-", suffix=".tmp", dir=target.parent)
    os.close(fd)
    os.unlink(name)
    return Path(name)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        path.unlink(missing_ok=True)


def _remove_stale_temporaries(target: Path) -> None:
    """Temporaries of ``target`` left by a killed writer (SIGKILL skips ``finally``) go; one of a writer still
    running (its PID is in the name) is left alone, and this write is refused: one writer per target."""
    prefix = f".{target.name}."
    for temporary in target.parent.glob(f"{glob_escape(prefix)}*.tmp"):
        writer = _writer_of(temporary.name[len(prefix):])
        if writer is not None and writer != os.getpid():
            raise SpanftError(f"output {target} is being written by another process (PID {writer}, into "
                              f"{temporary.name}): wait for it to end, or choose another path")
        log.info("removing %s, left by an interrupted earlier write", temporary)
        _remove(temporary)


def _writer_of(rest: str) -> int | None:
    """The PID in a temporary's name (``<pid>-<random>.tmp``) if that process still runs; else None."""
    pid, dash, _ = rest.partition("-")
    if not dash or not pid.isdigit():
        return None  # a name from before the PID was in it
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, OverflowError):
        return None
    except PermissionError:  # another user's process
        pass
    return int(pid)


def glob_escape(name: str) -> str:
    return glob.escape(name)


@contextlib.contextmanager
def atomic_open(target: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8", *,
                inputs: Inputs = ()) -> Iterator[IO]:
    """Open a temporary file for writing; it replaces ``target`` only if the block succeeds."""
    if "b" in mode:
        encoding = None
    with atomic_path(target, inputs=inputs) as tmp:
        with open(tmp, mode, encoding=encoding, newline="\n" if encoding else None) as handle:
            yield handle


# -------------------------------------------------------------------------------------------------- input


def require_file(path: str | os.PathLike, what: str = "file") -> Path:
    """Return ``path`` as a Path, or raise a one-line error if it is not an existing file."""
    path = Path(path)
    if path.is_dir():
        raise SpanftError(f"{path}: {what} expected, found a directory")
    if not path.is_file():
        raise SpanftError(f"{path}: {what} not found")
    return path


def read_text_lines(path: str | os.PathLike, what: str = "file") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` (1-based, ``\\n`` or ``\\r\\n`` stripped) from a UTF-8 file.

    Only ``\\n`` ends a line. Non-UTF-8 bytes raise a SpanftError naming the file and line instead of a
    UnicodeDecodeError; a byte-order mark at the start is dropped.
    """
    path = require_file(path, what)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.endswith(b"\n"):
                raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SpanftError(
                    f"{where(path, number)}: not valid UTF-8 (byte {raw[exc.start]:#04x} at column {exc.start + 1})"
                ) from None
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]
            yield number, line


def split_text_lines(text: str) -> list[str]:
    """The lines of ``text`` as :func:`read_text_lines` reads them: split on ``\\n``, one ``\\r`` before it dropped."""
    parts = text.split("\n")
    last = parts.pop()  # after the final newline: empty, or a last line without one
    lines = [part[:-1] if part.endswith("\r") else part for part in parts]
    return [*lines, last] if last else lines


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
