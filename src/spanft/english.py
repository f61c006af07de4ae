"""Words that generated text shares: a count with its noun in the right number."""

from __future__ import annotations


def count_of(n: int, noun: str, plural: str | None = None) -> str:
    """``1 seed``, ``2 seeds``, ``0 seeds``; ``plural`` for a noun that does not take an s (``1 process``)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
