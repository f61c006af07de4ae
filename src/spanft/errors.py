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
    of the user's text it quotes (a key holding U+0085, a value with a line feed) is shown escaped. It is not
    shortened here, where it may become part of another message: the error line that prints it is
    (:func:`run_command`, :data:`MAX_LINE`)."""

    @property
    def message(self) -> str:
        """The message as raised, unescaped (a :func:`parts` message keeps its parts): for code that rewrites it
        (a temporary path into the target's) and for the error line, which cuts its context first."""
        first = self.args[0] if len(self.args) == 1 else None
        return first if isinstance(first, str) else super().__str__()

    def __str__(self) -> str:
        return one_line(self.message, limit=None)


class Terminated(BaseException):
    """Raised in the main process on SIGTERM, so that ``finally`` blocks remove half-written outputs."""


def where(path: object, line: int | None = None) -> str:
    """Format a location for an error message: ``path`` or ``path:line``."""
    return f"{path}:{line}" if line is not None else str(path)


# Characters a terminal does not show as themselves: controls (ESC starts a terminal sequence), format
# characters (zero-width space, bidi overrides), surrogates, private-use and unassigned code points, and line
# or paragraph separators. One line shows each as its Python escape.
_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
MAX_LINE = 300  # characters of a whole error line, prefix included; a longer one keeps its head and tail
ERROR_PREFIX = "spanft: error: "


def _shown(ch: str) -> str:
    if ch == " " or (unicodedata.category(ch) not in _UNSHOWN and len(f"{ch}x".splitlines()) == 1):
        return ch
    return ascii(ch)[1:-1]


class Context(str):
    """A part of a :func:`parts` message that explains (why, how it came about): cut first, from its end."""

    level = 1


class Value(str):
    """A quoted value in a :func:`parts` message: cut after the context, in its middle."""

    level = 2


class Message(str):
    """A message built from parts (:func:`parts`); reads as the plain text of them all."""

    pieces: tuple[str, ...] = ()


def parts(*pieces: str) -> Message:
    """A message whose line, when it must be cut, shortens its :class:`Context` pieces first, then its
    :class:`Value` pieces, each with "…"; plain pieces (what is wrong, the key, the fix) stay whole."""
    message = Message("".join(pieces))
    message.pieces = pieces
    return message


def one_line(text: str, limit: int | None = MAX_LINE) -> str:
    """``text`` as one readable line of at most ``limit`` characters (None: any length): every character a
    terminal or ``str.splitlines`` would not show as itself (line breaks, ESC, zero-width and other invisible
    characters) escaped. A longer :func:`parts` message loses its context first, then the middle of its values;
    whatever is still too long is cut in the middle, keeping its head (what is wrong) and its tail (the fix),
    with how much was left out between them."""
    pieces = [(getattr(piece, "level", 0), "".join(_shown(ch) for ch in piece))
              for piece in (getattr(text, "pieces", ()) or (text,))]
    shown = "".join(piece for _, piece in pieces)
    if limit is None or len(shown) <= limit:
        return shown
    for level in (Context.level, Value.level):
        pieces = _shortened(pieces, level, len(shown) - limit)
        shown = "".join(piece for _, piece in pieces)
        if len(shown) <= limit:
            return shown
    marker = f" ...[{len(shown)} characters left out]... "  # the count has at most as many digits as this
    kept = limit - len(marker)
    if kept < 2:
        return shown[:limit]
    head, tail = kept - kept * 2 // 5, kept * 2 // 5
    return f"{shown[:head]} ...[{len(shown) - head - tail} characters left out]... {shown[len(shown) - tail:]}"


def _shortened(pieces: list[tuple[int, str]], level: int, excess: int) -> list[tuple[int, str]]:
    """``pieces`` with those of ``level`` cut to one common cap (the longest first), ``excess`` characters
    less in all where they hold that many (each keeps at least its "…")."""
    lengths = [len(piece) for kind, piece in pieces if kind == level]
    if not lengths or excess <= 0:
        return pieces
    low, high = 1, max(lengths)  # the largest cap that removes enough (1: each piece is only its "…")
    while low < high:
        cap = (low + high + 1) // 2
        low, high = (cap, high) if sum(max(0, n - cap) for n in lengths) >= excess else (low, cap - 1)
    return [(kind, _cut(piece, low, kind) if kind == level and len(piece) > low else piece) for kind, piece in pieces]


def _cut(piece: str, cap: int, level: int) -> str:
    if level == Context.level:
        return piece[:cap - 1].rstrip() + "…"
    head = (cap - 1) - (cap - 1) // 3
    return piece[:head] + "…" + piece[len(piece) - (cap - 1 - head):]


def describe_os_error(exc: OSError) -> str:
    """A system error as one line naming its path(s): ``data/x: Permission denied``."""
    reason = exc.strerror or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if exc.errno == errno.ENOSPC:
        reason = "disk full (no space left on device)"
    if exc.errno == errno.EFBIG and (limit := file_size_limit()) is not None:
        reason = f"{reason}: over the file-size limit (ulimit -f) of {limit:,} bytes; lift it: {LIFT_FILE_SIZE_LIMIT}"
    paths = [os.fsdecode(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {reason}" if paths else reason


LIFT_FILE_SIZE_LIMIT = "`ulimit -f unlimited`"


def file_size_limit() -> int | None:
    """This process's file-size limit in bytes (``ulimit -f``, RLIMIT_FSIZE: a write beyond it fails with
    EFBIG), None where there is none."""
    try:
        import resource  # POSIX only
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else soft


STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while a child process starts: one arriving meanwhile is raised on leaving, when the
    caller knows the child and can stop it (raised inside ``Popen``, it would leave the child running).

    Two holds, because the mask is per thread: this thread blocks the signals (a forked child inherits that and
    releases it itself, :func:`release_stop_signals`, once its own handlers are set), and in the main thread the
    Python handlers are swapped for ones that only take note, for a signal that another thread received.
    """
    noted: list[int] = []
    swapped = {}
    if threading.current_thread() is threading.main_thread():
        swapped = {number: signal.signal(number, lambda signum, frame: noted.append(signum)) for number in STOP_SIGNALS}
    masked = hasattr(signal, "pthread_sigmask")
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS) if masked else None
    try:
        yield
    finally:
        if masked:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)  # one held by the mask is noted now
        for number, handler in swapped.items():
            if handler is not None:  # None: a handler not set from Python, which cannot be put back
                signal.signal(number, handler)
        if noted:
            signal.raise_signal(noted[0])  # to the caller's own handler, now back in place


def release_stop_signals() -> None:
    """In a child started under :func:`stop_signals_held`: take Ctrl-C and SIGTERM again."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def open_missing_standard_streams() -> None:
    """Put /dev/null where a command was started with stdin, stdout or stderr closed (``2>&-``).

    Otherwise the first file the command opens takes that descriptor, and whatever goes to the stream (a
    progress bar, a library's warning written from C) lands in that file. A closed stdin reads as empty;
    stderr, which only carries diagnostics, writes to /dev/null when closed or not writable; a closed stdout
    gets /dev/null opened read-only, so a command whose result goes to stdout still fails with one line
    (as ``echo hi >&-`` does) instead of losing its result. :func:`run_command` calls this first, before the
    command opens a file or sets up logging.
    """
    for fd, mode in ((0, os.O_RDONLY), (1, os.O_RDONLY), (2, os.O_WRONLY)):
        if _is_open(fd) and (fd != 2 or _is_writable(fd)):
            continue
        null = os.open(os.devnull, mode)  # the lowest free descriptor: ``fd`` itself when it is closed
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        if getattr(sys, name) is None:  # Python leaves a stream it found closed at start as None
            setattr(sys, name, open(fd, mode, encoding="utf-8", errors="backslashreplace", closefd=False))


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _is_writable(fd: int) -> bool:
    """False for a descriptor open read-only (a shell's ``2>&-`` under a script launcher can leave one there)."""
    try:
        import fcntl  # POSIX only; elsewhere an open descriptor is taken as it is
    except ImportError:
        return True
    return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)


def run_command(body: Callable[[], int | None]) -> int:
    """Run an entry point's body; every mistake the user can make ends as one ``spanft: error:`` line.

    Exit 2 for a wrong input (the project's own checks) or a system error on a file (missing, not
    readable, a directory, disk full), 130 on Ctrl-C, 143 on SIGTERM. The ``spanft`` command line and every
    ``pipeline/`` stage script go through here, so they fail alike.
    """
    with _stop_signals_raise() as received:
        try:
            open_missing_standard_streams()  # first: before any file is opened, inside the Ctrl-C handling
            try:
                status = int(body() or 0)
            except SystemExit:  # argparse's --help or usage error: what it printed must still reach stdout
                _flush_stdout()
                raise
            _flush_stdout()  # here, so that a stdout that cannot take the result is one line, not exit 120
            if received:  # raised inside a finalizer, which Python reports and ignores: the stop still counts
                raise KeyboardInterrupt if received[0] == signal.SIGINT else Terminated(received[0])
            return status
        except SpanftError as exc:
            return _fail(exc.message, 2)  # as raised: _fail cuts it once, to the line's own limit
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
    try:  # what the command printed before it failed still goes out...
        sys.stdout.flush()
    except (OSError, ValueError):  # ...unless stdout is what failed: then the exit's own flush must not fail again
        _silence_stdout()
    with contextlib.suppress(OSError, ValueError):  # no stderr to tell it on: the exit status still does
        print(f"{ERROR_PREFIX}{one_line(message, MAX_LINE - len(ERROR_PREFIX))}", file=sys.stderr)
    return status


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, "<stdout>") from None  # the errno keeps its subclass (BrokenPipeError)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush raises no second BrokenPipeError."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@contextlib.contextmanager
def _stop_signals_raise() -> Iterator[list[int]]:
    """While the body runs, Ctrl-C raises KeyboardInterrupt and SIGTERM :class:`Terminated` (so that ``finally``
    blocks remove half-written outputs), and each is noted in the list yielded: an exception raised inside a
    finalizer (``__del__``) is printed and dropped by Python, and the body would go on to exit 0. The main thread
    only can install handlers; elsewhere the list stays empty.
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def stop(signum: int, frame) -> None:
        received.append(signum)
        raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)

    # Ctrl-C only where Python's own handler has it: a command started with SIGINT ignored (`nohup`, `cmd &` in a
    # script) keeps ignoring it
    taken = [number for number in STOP_SIGNALS
             if number != signal.SIGINT or signal.getsignal(number) is signal.default_int_handler]
    previous = {number: signal.signal(number, stop) for number in taken}
    python_hook = sys.unraisablehook

    def hook(unraisable) -> None:  # a stop dropped in a finalizer: said at once, in a line, not as a traceback
        if not isinstance(unraisable.exc_value, (KeyboardInterrupt, Terminated)):
            python_hook(unraisable)
            return
        name = "Ctrl-C" if isinstance(unraisable.exc_value, KeyboardInterrupt) else "SIGTERM"
        with contextlib.suppress(OSError, ValueError):
            print(f"spanft: {name} landed in a library's clean-up code, which drops it: send it again to stop now, "
                  f"else the command ends as stopped once it is done", file=sys.stderr, flush=True)

    sys.unraisablehook = hook
    try:
        yield received
    finally:
        sys.unraisablehook = python_hook
        for number, handler in previous.items():
            if handler is not None:
                signal.signal(number, handler)
