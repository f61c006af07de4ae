"""Greedy n-gram segmentation: the dictionary as a trie of integer keys, longest matches found with arrays.

A segmentation of a sentence of ``n`` words is a list of span lengths in words summing to ``n``. The paper's
rule: from the head of the sentence, at each position take the longest n-gram (``max_n`` words down to 2)
found in the dictionary, else the single word. A span may end on the sentence's last word (the official
code's off-by-one that forbids this is not copied).

The fast path encodes words as integers (only words that occur in the dictionary get an id; any
other word can never be part of a match) without a Python step per word: a batch's words become one
arrow string array (prepared task data already is one), ASCII case is folded and every word found in
the dictionary's vocabulary by arrow's hash lookup (``pyarrow.compute.index_in``); only non-ASCII
words, when folding case, go through Python's ``str.lower`` one by one. Sentences are separated by an
id that matches nothing, so no match crosses a sentence end. The dictionary is an exact trie of int64
keys ``parent_node * (V + 1) + word_id`` per level, and the longest match at every position of the
batch is found level by level with vectorised hash lookups. The greedy jumps are then followed for all
sentences together, one span per sentence per numpy step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from spanft.errors import SpanftError
from spanft.fileio import read_text, split_text_lines
from spanft.text.dictionary import iter_entries
from spanft.text.ngrams import DEFAULT_MAX_N

log = logging.getLogger("spanft")


@dataclass(frozen=True)
class FlatSpans:
    """Span lengths of many sentences, flat: sentence ``i`` owns ``lengths[offsets[i]:offsets[i+1]]``."""

    lengths: np.ndarray  # int32
    offsets: np.ndarray  # int64, len(sentences) + 1

    def to_lists(self) -> list[list[int]]:
        flat = self.lengths.tolist()
        bounds = self.offsets.tolist()
        return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)


class GreedySegmenter:
    """Greedy longest-match segmentation against an n-gram dictionary (n = 2..max_n)."""

    def __init__(self, ngrams: Iterable[Sequence[str]], max_n: int = DEFAULT_MAX_N, lowercase: bool = True,
                 source: str | None = None) -> None:
        if max_n < 2:
            raise SpanftError(f"max_n must be at least 2, got {max_n}")
        self.max_n = max_n
        self.lowercase = lowercase
        self.source = source
        table = ngrams if isinstance(ngrams, _EntryTable) else self._normalise(ngrams)
        if table.skipped:
            log.info("segmentation: ignored %d dictionary entries shorter than 2 or longer than %d words",
                     table.skipped, max_n)
        self.num_entries = len(table.matrix)
        self._build_trie(table)

    @classmethod
    def from_dictionary(cls, path: str | Path, max_n: int, lowercase: bool = True) -> "GreedySegmenter":
        """Load a dictionary file (``ngram<TAB>count`` lines; counts are not used).

        A well-formed file is read whole and turned into the entry table with array operations; anything
        else (a malformed line, a non-digit count, bad UTF-8) goes through the line-by-line reader, which
        names the file and line of the first mistake.
        """
        if max_n >= 2:
            table = _read_entry_table(path, max_n, lowercase)
            if table is not None:
                return cls(table, max_n=max_n, lowercase=lowercase, source=str(path))
        return cls((words for words, _ in iter_entries(path)), max_n=max_n, lowercase=lowercase,
                   source=str(path))

    def _normalise(self, ngrams: Iterable[Sequence[str]]) -> "_EntryTable":
        entries: set[tuple[str, ...]] = set()
        skipped = 0
        for ngram in ngrams:
            if not 2 <= len(ngram) <= self.max_n:
                skipped += 1
                continue
            entries.add(tuple(w.lower() for w in ngram) if self.lowercase else tuple(ngram))
        vocab = sorted({w for ngram in entries for w in ngram})
        word_ids = {w: i for i, w in enumerate(vocab, start=1)}
        ordered = sorted(entries)
        matrix = np.zeros((len(ordered), self.max_n), dtype=np.int64)
        for row, ngram in enumerate(ordered):
            matrix[row, : len(ngram)] = [word_ids[w] for w in ngram]
        return _EntryTable(vocab, matrix, skipped)

    def _build_trie(self, table: "_EntryTable") -> None:
        vocab, matrix = table.vocab, table.matrix
        self._word_ids = {w: i for i, w in enumerate(vocab, start=1)}  # 0 = never matches
        self._id_cache = _WordIdCache(self._word_ids, self.lowercase)
        self._vocab = vocab  # id - 1 -> word
        self._vocab_arrays: dict = {}  # arrow type -> the vocabulary as an array of that type
        self._base = np.int64(len(vocab) + 1)
        n_entries = len(matrix)
        sizes = (matrix > 0).sum(axis=1)
        # Level 1 is a dense table word_id -> node; level k >= 2 holds sorted keys parent*base + word_id.
        self._level1 = np.full(len(vocab) + 1, -1, dtype=np.int64)
        first_words, first_nodes = np.unique(matrix[:, 0], return_inverse=True) if n_entries else (
            np.zeros(0, np.int64), np.zeros(0, np.int64))
        self._level1[first_words] = np.arange(len(first_words))
        node = first_nodes.reshape(-1)
        self._index: dict[int, _HashIndex] = {}
        self._terminal: dict[int, np.ndarray] = {}
        for k in range(2, self.max_n + 1):
            alive = sizes >= k
            keys = node[alive] * self._base + matrix[alive, k - 1]
            unique_keys, child = np.unique(keys, return_inverse=True)
            terminal = np.zeros(len(unique_keys), dtype=bool)
            terminal[child.reshape(-1)[sizes[alive] == k]] = True
            self._index[k], self._terminal[k] = _HashIndex(unique_keys), terminal
            node = np.full(n_entries, -1, dtype=np.int64)
            node[alive] = child.reshape(-1)

    def describe(self) -> dict:
        return {"method": "ngram", "dictionary": self.source, "dictionary_entries": self.num_entries,
                "max_n": self.max_n, "lowercase": self.lowercase}

    # ---- encoding -------------------------------------------------------------------------------

    def _encode_by_dict(self, words: Sequence[str]) -> np.ndarray:
        """The same ids, one dict lookup per word (for words arrow cannot hold)."""
        if len(self._id_cache) > _ID_CACHE_LIMIT:
            self._id_cache.clear()
        return np.fromiter(map(self._id_cache.__getitem__, words), dtype=np.int64, count=len(words))

    # ---- matching -------------------------------------------------------------------------------

    def longest_matches(self, ids: np.ndarray) -> np.ndarray:
        """Length (1..max_n) of the longest dictionary n-gram starting at each position.

        ``ids`` ends with ``max_n`` zeros; a 0 never takes part in a match (each sentence end holds one).
        """
        best = np.ones(len(ids), dtype=np.int64)
        if len(ids) == 0 or self.num_entries == 0:
            return best
        nodes = self._level1[ids]
        positions = np.flatnonzero(nodes >= 0)
        nodes = nodes[positions]
        for k in range(2, self.max_n + 1):
            if positions.size == 0:
                break
            keys = nodes * self._base + ids[positions + (k - 1)]
            child = self._index[k].find(keys)
            found = child >= 0
            positions, nodes = positions[found], child[found]
            best[positions[self._terminal[k][nodes]]] = k
        return best

    def segment_flat(self, sentences: Sequence[Sequence[str]]) -> FlatSpans:
        """Segment many sentences at once; the fast entry point for Python lists of words."""
        counts = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
        words = list(chain.from_iterable(sentences))
        try:
            ids = self._ids_of_strings(pa.array(words, pa.string()))
        except (UnicodeEncodeError, pa.ArrowException):  # lone surrogates: not UTF-8, arrow cannot hold them
            ids = self._encode_by_dict(words)
        return self._segment_ids(ids, counts)

    def segment_arrow(self, words) -> pa.ListArray:
        """Segment a ``list<string>`` arrow column (prepared task data) into a ``list<int32>`` column of span
        lengths, reading the words from arrow's own buffers: no Python object per word."""
        words = words.combine_chunks() if isinstance(words, pa.ChunkedArray) else words
        if words.null_count:
            return pa.array(self.segment_batch([w or [] for w in words.to_pylist()]), pa.list_(pa.int32()))
        counts = pc.list_value_length(words).to_numpy(zero_copy_only=False).astype(np.int64)
        spans = self._segment_ids(self._ids_of_strings(pc.list_flatten(words)), counts)
        return pa.ListArray.from_arrays(pa.array(spans.offsets.astype(np.int32)), pa.array(spans.lengths))

    def _ids_of_strings(self, words: pa.Array) -> np.ndarray:
        """Word ids of an arrow string array: arrow's hash lookup in the vocabulary, after ASCII case folding
        (Python's rule for ASCII); non-ASCII words, when folding case, through ``str.lower`` one by one."""
        if len(words) == 0:
            return np.zeros(0, dtype=np.int64)
        keys = pc.ascii_lower(words) if self.lowercase else words
        if words.type not in self._vocab_arrays:
            self._vocab_arrays[words.type] = pa.array(self._vocab, words.type)
        found = pc.index_in(keys, value_set=self._vocab_arrays[words.type])
        ids = pc.add(found, 1).fill_null(0).to_numpy()  # int32: vocabulary index + 1, 0 for any other word
        if self.lowercase and _has_non_ascii(words):
            other = np.flatnonzero(~pc.string_is_ascii(words).to_numpy(zero_copy_only=False))
            if other.size:
                ids = ids.copy()  # arrow's buffer is read-only
                ids[other] = [self._id_cache[w] for w in words.take(pa.array(other)).to_pylist()]
        return ids

    def _segment_ids(self, ids: np.ndarray, counts: np.ndarray) -> FlatSpans:
        """Spans from the word ids of sentences of ``counts`` words, concatenated."""
        starts = np.zeros(len(counts), dtype=np.int64)
        np.cumsum(counts[:-1] + 1, out=starts[1:])
        spaced = np.zeros(len(ids) + len(counts) + self.max_n, dtype=np.int64)  # 0 after each sentence
        spaced[np.arange(len(ids)) + np.repeat(np.arange(len(counts)), counts)] = ids
        jump = np.arange(len(spaced), dtype=np.int64) + self.longest_matches(spaced)
        return _follow_jumps(jump, starts, starts + counts)

    def segment_batch(self, sentences: Sequence[Sequence[str]]) -> list[list[int]]:
        return self.segment_flat(sentences).to_lists()

    def segment(self, words: Sequence[str]) -> list[int]:
        return self.segment_batch([words])[0]


_ID_CACHE_LIMIT = 2_000_000


@dataclass(frozen=True)
class _EntryTable:
    """A dictionary as arrays: the sorted vocabulary, one row of word ids (1-based, 0-padded) per distinct
    n-gram, and ``skipped``, the entries outside 2..max_n words."""

    vocab: list[str]
    matrix: np.ndarray  # [entries, max_n] int64
    skipped: int


def _read_entry_table(path: str | Path, max_n: int, lowercase: bool) -> _EntryTable | None:
    """The entry table of a well-formed dictionary file, or ``None`` for the line-by-line reader to judge."""
    try:
        lines = split_text_lines(read_text(path, what="n-gram file"))
    except SpanftError:
        return None
    texts, tabs, counts = zip(*(line.partition("\t") for line in lines if line)) if any(lines) else ((), (), ())
    if "" in tabs or not all(count.isascii() and count.isdigit() for count in counts):
        return None
    words = " ".join(texts).split(" ") if texts else []
    if "" in words:
        return None  # an empty n-gram, or a doubled, leading or trailing space
    lengths = np.fromiter((text.count(" ") + 1 for text in texts), dtype=np.int64, count=len(texts))
    keep = (lengths >= 2) & (lengths <= max_n)
    kept_lengths = lengths[keep]
    codes, surface = pd.factorize(np.array(words, dtype=object)[np.repeat(keep, lengths)])
    forms = [w.lower() for w in surface] if lowercase else list(surface)
    vocab = sorted(set(forms))
    rank = {w: i for i, w in enumerate(vocab, start=1)}
    ids = np.fromiter((rank[w] for w in forms), dtype=np.int64, count=len(forms))[codes]
    rows = np.repeat(np.arange(len(kept_lengths)), kept_lengths)
    starts = np.cumsum(kept_lengths) - kept_lengths
    matrix = np.zeros((len(kept_lengths), max_n), dtype=np.int64)
    matrix[rows, np.arange(len(ids)) - np.repeat(starts, kept_lengths)] = ids
    matrix = matrix[~pd.DataFrame(matrix).duplicated().to_numpy()]  # distinct n-grams (the trie ignores order)
    return _EntryTable(vocab, matrix, int((~keep).sum()))


class _HashIndex:
    """Distinct int64 keys -> their rank, for a whole array of queries at once (-1 where absent).

    pandas' hash-table engine (one C pass over the queries) in place of ``np.searchsorted`` on sorted
    keys: one hash probe per query instead of ~20 comparisons, at every word position of each level.
    """

    def __init__(self, keys: np.ndarray) -> None:
        self._index = pd.Index(np.asarray(keys, dtype=np.int64))

    def find(self, queries: np.ndarray) -> np.ndarray:
        """Rank of each query among the keys, or -1 where absent."""
        return self._index.get_indexer(np.asarray(queries, dtype=np.int64)).astype(np.int64, copy=False)


class _WordIdCache(dict):
    """Surface form -> word id (0 = not in the dictionary), filled on first sight.

    One C-level dict lookup per word on the hot path: lower-casing happens once per distinct surface
    form, not once per occurrence.
    """

    def __init__(self, word_ids: dict[str, int], lowercase: bool) -> None:
        super().__init__()
        self._word_ids = word_ids
        self._lowercase = lowercase

    def __missing__(self, word: str) -> int:
        value = self._word_ids.get(word.lower() if self._lowercase else word, 0)
        self[word] = value
        return value


def _has_non_ascii(words) -> bool:
    """Whether any byte of an arrow string array's data is outside ASCII (a slice may count bytes beside it)."""
    data = words.buffers()[2]
    return data is not None and data.size > 0 and int(np.frombuffer(data, dtype=np.uint8).max()) >= 0x80


def _follow_jumps(jump: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> FlatSpans:
    """Span starts reached from each sentence head by following ``jump``; one numpy step per span rank."""
    visited = np.zeros(len(jump), dtype=bool)
    nonempty = ends > starts
    current, end = starts[nonempty], ends[nonempty]
    while current.size:
        visited[current] = True
        current = jump[current]
        more = current < end
        current, end = current[more], end[more]
    span_starts = np.flatnonzero(visited)
    lengths = (jump[span_starts] - span_starts).astype(np.int32)
    span_offsets = np.searchsorted(span_starts, np.append(starts, len(jump))).astype(np.int64)
    return FlatSpans(lengths, span_offsets)

