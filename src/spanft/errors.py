"""User-facing errors: every entry point prints them as one line and exits non-zero (never a traceback)."""

from __future__ import annotations

import sys
from typing import Callable


class SpanftError(Exception):
    """A mistake in the user's input (file, key, value). The message names what is wrong."""


def where(path: object, line: int | None = None) -> str:
    """Format a location for an error message: ``path`` or ``path:line``."""
    return f"{path}:{line}" if line is not None else str(path)


def run_command(body: Callable[[], int | None]) -> int:
    """Run an entry point's body; a user mistake becomes one ``spanft: error:`` line and exit code 2.

    The ``spanft`` command line and every ``pipeline/`` stage script go through here, so they fail alike.
    """
    try:
        return int(body() or 0)
    except SpanftError as exc:
        print(f"spanft: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spanft: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
