"""N-gram dictionary files: UTF-8, one n-gram a line, words joined by one space, a tab, its count.

Most frequent first. Ties are broken by the n-gram text (code-point order), so a dictionary of size
K is always the first K lines of the counts file and is deterministic.
"""

from __future__ import annotations

import logging
import os
from typing import Iterable, Iterator

from spanft.errors import SpanftError, where
from spanft.fileio import atomic_open, read_text_lines

log = logging.getLogger("spanft")

NGram = tuple[str, ...]


def parse_entry(line: str, path: object, number: int) -> tuple[NGram, int]:
    """Parse one ``ngram<TAB>count`` line; raise a SpanftError naming the file and line."""
    text, tab, count = line.partition("\t")
    if not tab:
        raise SpanftError(f"{where(path, number)}: expected 'ngram<TAB>count', found no tab")
    words = tuple(text.split(" "))
    if not text or any(not w for w in words):
        raise SpanftError(f"{where(path, number)}: empty n-gram or doubled space in {text!r}")
    try:
        value = int(count)
    except ValueError:
        raise SpanftError(f"{where(path, number)}: count {count!r} is not an integer") from None
    if value < 0:
        raise SpanftError(f"{where(path, number)}: negative count {value}")
    return words, value


def iter_entries(path: str | os.PathLike) -> Iterator[tuple[NGram, int]]:
    """Yield ``(ngram_words, count)`` from a counts or dictionary file, in file order."""
    for number, line in read_text_lines(path, what="n-gram file"):
        if line:
            yield parse_entry(line, path, number)


def read_dictionary(path: str | os.PathLike) -> list[tuple[NGram, int]]:
    """All entries of a dictionary file, most frequent first."""
    return list(iter_entries(path))


def write_entries(entries: Iterable[tuple[NGram, int]], path: str | os.PathLike, *,
                  inputs: Iterable[str | os.PathLike] = ()) -> int:
    """Write ``(ngram_words, count)`` pairs atomically (never over one of ``inputs``); return the lines written."""
    written = 0
    with atomic_open(path, inputs=inputs) as out:
        for words, count in entries:
            out.write(f"{' '.join(words)}\t{count}\n")
            written += 1
    return written


def sort_key(entry: tuple[NGram, int]) -> tuple[int, str]:
    """The canonical order: count descending, then the n-gram text ascending."""
    words, count = entry
    return (-count, " ".join(words))


def build_dictionary(counts_path: str | os.PathLike, size: int, out: str | os.PathLike) -> int:
    """Write the first ``size`` entries of a counts file (checked to be in canonical order)."""
    if size <= 0:
        raise SpanftError(f"--size (dict_size) must be > 0, got {size}")
    return write_entries(_checked_top(counts_path, size), out, inputs=[counts_path])


def _checked_top(path: str | os.PathLike, size: int) -> Iterator[tuple[tuple[str, ...], int]]:
    previous = None
    taken = 0
    for number, entry in enumerate(iter_entries(path), start=1):
        key = sort_key(entry)
        if previous is not None and key <= previous:
            raise SpanftError(
                f"{where(path, number)}: counts file not sorted (count descending, then n-gram text ascending)"
            )
        previous = key
        yield entry
        taken += 1
        if taken == size:
            return
    # A "400k" dictionary that holds 300k entries would mislabel the dictionary-size study: refuse it.
    raise SpanftError(
        f"{path}: holds only {taken} n-grams, fewer than the {size} asked for (dict_size / dict_sizes): "
        f"ask for at most {taken}, lower ngrams.min_count, or count a larger corpus"
    )
