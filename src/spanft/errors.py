"""User-facing errors: the CLI prints them as one line and exits non-zero (never a traceback)."""

from __future__ import annotations


class SpanftError(Exception):
    """A mistake in the user's input (file, key, value). The message names what is wrong."""


def where(path: object, line: int | None = None) -> str:
    """Format a location for an error message: ``path`` or ``path:line``."""
    return f"{path}:{line}" if line is not None else str(path)
