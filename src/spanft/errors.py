"""User-facing errors: every entry point prints them as one line and exits non-zero (never a traceback)."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
import unicodedata
from typing import Callable, Iterator


class SpanftError(Exception):
    """A mistake in the user's input (file, key, value). The message names what is wrong, on one line: whatever
    of the user's text it quotes (a key holding U+0085, a value with a line feed) is shown escaped."""

    def __str__(self) -> str:
        return one_line(super().__str__())


class Terminated(BaseException):
    """Raised in the main process on SIGTERM, so that ``finally`` blocks remove half-written outputs."""


def where(path: object, line: int | None = None) -> str:
    """Format a location for an error message: ``path`` or ``path:line``."""
    return f"{path}:{line}" if line is not None else str(path)


# Characters a terminal does not show as themselves: controls (ESC starts a terminal sequence), format
# characters (zero-width space, bidi overrides), surrogates, private-use and unassigned code points, and line
# or paragraph separators. One line shows each as its Python escape.
_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
MAX_LINE = 2000  # characters of an error line; a longer one keeps its head and tail, the middle counted


def _shown(ch: str) -> str:
    if ch == " " or (unicodedata.category(ch) not in _UNSHOWN and len(f"{ch}x".splitlines()) == 1):
        return ch
    return ascii(ch)[1:-1]


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """``text`` as one readable line: every character a terminal or ``str.splitlines`` would not show as
    itself (line breaks, ESC, zero-width and other invisible characters) escaped, and a text longer than
    ``limit`` characters shortened in the middle, saying how much was left out."""
    shown = "".join(_shown(ch) for ch in text)
    if len(shown) <= limit:
        return shown
    head, tail = limit * 2 // 3, limit // 4
    cut = shown[head:len(shown) - tail]
    return f"{shown[:head]} ...[{len(cut)} characters left out]... {shown[len(shown) - tail:]}"


def describe_os_error(exc: OSError) -> str:
    """A system error as one line naming its path(s): ``data/x: Permission denied``."""
    reason = exc.strerror or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if exc.errno == errno.ENOSPC:
        reason = "disk full (no space left on device)"
    paths = [os.fsdecode(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {reason}" if paths else reason


STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while a child process starts: one arriving meanwhile is raised on leaving, when the
    caller knows the child and can stop it (raised inside ``Popen``, it would leave the child running). The child
    inherits the held mask and must release it itself (:func:`release_stop_signals`)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def release_stop_signals() -> None:
    """In a child started under :func:`stop_signals_held`: take Ctrl-C and SIGTERM again."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def open_missing_standard_streams() -> None:
    """Give a command started with stdin, stdout or stderr closed (``2>&-``) /dev/null there.

    Otherwise the first file it opens takes that descriptor, and what goes to the stream (a progress bar, a
    library's warning written from C) lands in the file; and Python's ``sys.stderr`` is None, on which a
    progress bar fails. Entry points call this before anything opens a file or sets up logging.
    """
    for fd in (0, 1, 2):
        if not _usable(fd):
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, encoding="utf-8", errors="backslashreplace", closefd=False))


def _usable(fd: int) -> bool:
    """Open, and open for writing where it is an output (a shell's ``2>&-`` may leave a read-only file there)."""
    try:
        import fcntl  # POSIX
    except ImportError:
        fcntl = None
    try:
        if fcntl is None:
            return os.fstat(fd) is not None
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    except OSError:
        return False
    return fd == 0 or mode in (os.O_WRONLY, os.O_RDWR)


def run_command(body: Callable[[], int | None]) -> int:
    """Run an entry point's body; every mistake the user can make ends as one ``spanft: error:`` line.

    Exit 2 for a wrong input (the project's own checks) or a system error on a file (missing, not
    readable, a directory, disk full), 130 on Ctrl-C, 143 on SIGTERM. The ``spanft`` command line and every
    ``pipeline/`` stage script go through here, so they fail alike.
    """
    with _sigterm_raises():
        try:
            return int(body() or 0)
        except SpanftError as exc:
            return _fail(str(exc), 2)
        except KeyboardInterrupt:
            return _fail("interrupted (Ctrl-C)", 130)
        except Terminated:
            return _fail("terminated (SIGTERM)", 143)
        except BrokenPipeError:  # `spanft segment | head`: the reader left; nothing more to say
            _silence_stdout()
            return 0
        except OSError as exc:
            return _fail(describe_os_error(exc), 2)


def _fail(message: str, status: int) -> int:
    with contextlib.suppress(OSError, ValueError):  # no stderr to tell it on: the exit status still does
        print(f"spanft: error: {one_line(message)}", file=sys.stderr)
    return status


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush raises no second BrokenPipeError."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _raise_terminated(signum: int, frame) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` while the body runs (the main thread only can install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
