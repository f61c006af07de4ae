"""Sentence segmentation into spans: greedy n-gram longest match, random, and (via chunker.py) NLTK chunks.

A segmentation of a sentence of ``n`` words is a list of span lengths in words summing to ``n``.

Greedy n-gram segmentation (the paper's rule): from the head of the sentence, at each position take
the longest n-gram (``max_n`` words down to 2) found in the dictionary, else the single word. A span
may end on the sentence's last word (the official code's off-by-one that forbids this is not copied).

The fast path encodes words as integers (only words that occur in the dictionary get an id; any
other word can never be part of a match), stores the dictionary as an exact trie of sorted int64
keys ``parent_node * (V + 1) + word_id`` per level, and finds the longest match at every position of
a whole batch of sentences at once, level by level, with ``np.searchsorted``. The greedy jumps are
then followed for all sentences together, one span per sentence per numpy step.
"""

from __future__ import annotations

import json
import logging
import sys
import random
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Iterable, Iterator, Protocol, Sequence

import numpy as np

from spanft.errors import SpanftError
from spanft.text.dictionary import iter_entries
from spanft.text.ngrams import DEFAULT_MAX_N
from spanft.text.words import WordTokenizer

log = logging.getLogger("spanft")

METHODS = ("ngram", "random", "chunker")
SPAN_SEPARATOR = " | "
METADATA_KEY = b"spanft.segmentation"
SIDECAR_NAME = "segmentation.json"


class Segmenter(Protocol):
    """Anything that turns sentences (lists of words) into span lengths."""

    def segment_batch(self, sentences: Sequence[Sequence[str]]) -> list[list[int]]: ...

    def describe(self) -> dict: ...


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
        entries, skipped = self._normalise(ngrams)
        if skipped:
            log.info("segmentation: ignored %d dictionary entries shorter than 2 or longer than %d words",
                     skipped, max_n)
        self.num_entries = len(entries)
        self._build_trie(entries)

    @classmethod
    def from_dictionary(cls, path: str | Path, max_n: int, lowercase: bool = True) -> "GreedySegmenter":
        """Load a dictionary file (``ngram<TAB>count`` lines; counts are not used)."""
        return cls((words for words, _ in iter_entries(path)), max_n=max_n, lowercase=lowercase,
                   source=str(path))

    def _normalise(self, ngrams: Iterable[Sequence[str]]) -> tuple[set[tuple[str, ...]], int]:
        entries: set[tuple[str, ...]] = set()
        skipped = 0
        for ngram in ngrams:
            if not 2 <= len(ngram) <= self.max_n:
                skipped += 1
                continue
            entries.add(tuple(w.lower() for w in ngram) if self.lowercase else tuple(ngram))
        return entries, skipped

    def _build_trie(self, entries: set[tuple[str, ...]]) -> None:
        vocab = sorted({w for ngram in entries for w in ngram})
        self._word_ids = {w: i for i, w in enumerate(vocab, start=1)}  # 0 = never matches
        self._id_cache = _WordIdCache(self._word_ids, self.lowercase)
        self._base = np.int64(len(vocab) + 1)
        ordered = sorted(entries)
        n_entries = len(ordered)
        matrix = np.zeros((n_entries, self.max_n), dtype=np.int64)
        sizes = np.fromiter((len(e) for e in ordered), dtype=np.int64, count=n_entries)
        for row, ngram in enumerate(ordered):
            matrix[row, : len(ngram)] = [self._word_ids[w] for w in ngram]
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

    def _encode(self, sentences: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Word ids of all sentences concatenated, and the sentence offsets."""
        offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences)), out=offsets[1:])
        if len(self._id_cache) > _ID_CACHE_LIMIT:
            self._id_cache.clear()
        words = map(self._id_cache.__getitem__, chain.from_iterable(sentences))
        ids = np.fromiter(words, dtype=np.int64, count=int(offsets[-1]))
        return ids, offsets

    # ---- matching -------------------------------------------------------------------------------

    def longest_matches(self, ids: np.ndarray, sentence_end: np.ndarray) -> np.ndarray:
        """Length (1..max_n) of the longest dictionary n-gram starting at each position.

        ``sentence_end[p]`` is the end (exclusive) of the sentence holding position ``p``: a match never
        crosses it.
        """
        best = np.ones(len(ids), dtype=np.int64)
        if len(ids) == 0 or self.num_entries == 0:
            return best
        nodes = self._level1[ids]
        positions = np.flatnonzero(nodes >= 0)
        nodes = nodes[positions]
        for k in range(2, self.max_n + 1):
            inside = positions + (k - 1) < sentence_end[positions]
            positions, nodes = positions[inside], nodes[inside]
            if positions.size == 0:
                break
            keys = nodes * self._base + ids[positions + (k - 1)]
            child = self._index[k].find(keys)
            found = child >= 0
            positions, nodes = positions[found], child[found]
            best[positions[self._terminal[k][nodes]]] = k
        return best

    def segment_flat(self, sentences: Sequence[Sequence[str]]) -> FlatSpans:
        """Segment many sentences at once; the fast entry point."""
        ids, offsets = self._encode(sentences)
        counts = np.diff(offsets)
        sentence_end = np.repeat(offsets[1:], counts)
        jump = np.arange(len(ids), dtype=np.int64) + self.longest_matches(ids, sentence_end)
        return _follow_jumps(jump, offsets)

    def segment_batch(self, sentences: Sequence[Sequence[str]]) -> list[list[int]]:
        return self.segment_flat(sentences).to_lists()

    def segment(self, words: Sequence[str]) -> list[int]:
        return self.segment_batch([words])[0]


_ID_CACHE_LIMIT = 2_000_000
_EMPTY = np.int64(-1)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


class _HashIndex:
    """Open-addressing hash (linear probing, load <= 1/2) from distinct non-negative int64 keys to their rank.

    A vectorised replacement for ``np.searchsorted`` on a sorted key array: one or two random reads per
    query instead of ~20, which matters at every word position of the level-2 walk.
    """

    def __init__(self, keys: np.ndarray) -> None:
        self._bits = max(4, int(2 * len(keys)).bit_length())
        self._mask = np.int64((1 << self._bits) - 1)
        self._keys = np.full(1 << self._bits, _EMPTY, dtype=np.int64)
        self._ranks = np.full(1 << self._bits, -1, dtype=np.int64)
        pending = np.arange(len(keys), dtype=np.int64)
        slot = self._home(keys)
        while pending.size:
            free = self._keys[slot] == _EMPTY
            # among pending keys aiming at the same free slot, the first one takes it
            claim_slots, first = np.unique(slot[free], return_index=True)
            winners = pending[free][first]
            self._keys[claim_slots] = keys[winners]
            self._ranks[claim_slots] = winners
            placed = np.zeros(len(pending), dtype=bool)
            placed[np.flatnonzero(free)[first]] = True
            pending, slot = pending[~placed], slot[~placed]
            slot = np.where(self._keys[slot] != _EMPTY, (slot + 1) & self._mask, slot)

    def _home(self, keys: np.ndarray) -> np.ndarray:
        mixed = keys.astype(np.uint64) * _GOLDEN  # wraps modulo 2**64 (Fibonacci hashing)
        return (mixed >> np.uint64(64 - self._bits)).astype(np.int64)

    def find(self, queries: np.ndarray) -> np.ndarray:
        """Rank of each query among the keys, or -1 where absent."""
        result = np.full(len(queries), -1, dtype=np.int64)
        pending = np.arange(len(queries), dtype=np.int64)
        slot = self._home(queries)
        while pending.size:
            stored = self._keys[slot]
            hit = stored == queries[pending]
            result[pending[hit]] = self._ranks[slot[hit]]
            go_on = ~hit & (stored != _EMPTY)
            pending, slot = pending[go_on], (slot[go_on] + 1) & self._mask
        return result


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


def _follow_jumps(jump: np.ndarray, offsets: np.ndarray) -> FlatSpans:
    """Span starts reached from each sentence head by following ``jump``; one numpy step per span rank."""
    starts = offsets[:-1][np.diff(offsets) > 0]
    ends = offsets[1:][np.diff(offsets) > 0]
    visited = np.zeros(len(jump), dtype=bool)
    current, end = starts, ends
    while current.size:
        visited[current] = True
        current = jump[current]
        more = current < end
        current, end = current[more], end[more]
    span_starts = np.flatnonzero(visited)
    lengths = (jump[span_starts] - span_starts).astype(np.int32)
    span_offsets = np.searchsorted(span_starts, offsets).astype(np.int64)
    return FlatSpans(lengths, span_offsets)


# ---- random segmentation ------------------------------------------------------------------------

class RandomSegmenter:
    """Random spans with the n-gram segmenter's span counts.

    Rule: a sentence of ``n`` words that the greedy segmenter cuts into ``m`` spans is cut into ``m``
    spans drawn uniformly at random among all compositions of ``n`` into ``m`` parts of 1..max_n words
    (always possible, since the greedy spans are such a composition). The generator of each sentence
    is seeded from ``seed`` and the sentence's words, so the result does not depend on batching or order.
    """

    def __init__(self, reference: GreedySegmenter, seed: int = 0) -> None:
        self.reference = reference
        self.max_n = reference.max_n
        self.seed = seed

    def describe(self) -> dict:
        return {**self.reference.describe(), "method": "random", "seed": self.seed}

    def segment_batch(self, sentences: Sequence[Sequence[str]]) -> list[list[int]]:
        counts = self.reference.segment_flat(sentences).counts().tolist()
        return [self._draw(words, m) for words, m in zip(sentences, counts)]

    def segment(self, words: Sequence[str]) -> list[int]:
        return self.segment_batch([words])[0]

    def _draw(self, words: Sequence[str], parts: int) -> list[int]:
        rng = random.Random(f"{self.seed}\x1f" + "\x1f".join(words))
        return random_composition(len(words), parts, self.max_n, rng)


@lru_cache(maxsize=None)
def count_compositions(total: int, parts: int, largest: int) -> int:
    """Number of ways to write ``total`` as an ordered sum of ``parts`` integers in 1..largest."""
    if parts == 0:
        return 1 if total == 0 else 0
    if not parts <= total <= parts * largest:
        return 0
    return sum(count_compositions(total - first, parts - 1, largest) for first in range(1, largest + 1))


def random_composition(total: int, parts: int, largest: int, rng: random.Random) -> list[int]:
    """A uniformly random composition of ``total`` into ``parts`` parts of 1..largest (exact big ints)."""
    if count_compositions(total, parts, largest) == 0:
        raise ValueError(f"no composition of {total} into {parts} parts of 1..{largest}")
    result = []
    for remaining_parts in range(parts, 0, -1):
        pick = rng.randrange(count_compositions(total, remaining_parts, largest))
        for first in range(1, largest + 1):
            ways = count_compositions(total - first, remaining_parts - 1, largest)
            if pick < ways:
                break
            pick -= ways
        result.append(first)
        total -= first
    return result


# ---- construction and helpers -------------------------------------------------------------------

MAX_N = 5  # the longest dictionary n-gram the pipeline's segmentation matches (spanft segment / segment-task)


def make_segmenter(method: str, dict_path: str | None = None, seed: int = 0, tagger: str | None = None,
                   keep_case: bool = False, *, max_n: int) -> Segmenter:
    """The segmenter of ``method`` (n-gram and random: longest span ``max_n`` words, from params
    ``ngrams.max_n``); a one-line SpanftError on a missing input."""
    if method not in METHODS:
        raise SpanftError(f"unknown segmentation method {method!r} (expected one of {', '.join(METHODS)})")
    if method == "chunker":
        from spanft.text.chunker import ChunkSegmenter

        return ChunkSegmenter.load(tagger or None)  # '' (params.yaml chunker.tagger) = NLTK's pretrained tagger
    if dict_path is None:
        raise SpanftError(f"--dict is required for --method {method}")
    greedy = GreedySegmenter.from_dictionary(dict_path, max_n=max_n, lowercase=not keep_case)
    return greedy if method == "ngram" else RandomSegmenter(greedy, seed=seed)


def format_spans(words: Sequence[str], lengths: Sequence[int]) -> str:
    """``w1 w2 | w3 | ...``: the words of each span joined by a space, spans by `` | ``."""
    pieces, start = [], 0
    for length in lengths:
        pieces.append(" ".join(words[start : start + length]))
        start += length
    return SPAN_SEPARATOR.join(pieces)


def _batched(items: Iterable, size: int) -> Iterator[list]:
    batch: list = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def stdin_lines() -> Iterator[str]:
    """Standard input as lines: UTF-8 (a BOM dropped), split on \n and \r\n only."""
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpanftError(f"<stdin>:{line}: not valid UTF-8 (byte {data[exc.start]:#04x})") from None
    text = text[1:] if text.startswith("\ufeff") else text
    from spanft.fileio import split_text_lines

    return iter(split_text_lines(text))


def segment_lines(lines: Iterable[str], segmenter: Segmenter, pretokenized: bool = False) -> Iterator[str]:
    """Each text line segmented and formatted (``a b | c``); words keep their case."""
    tokenizer = WordTokenizer(lowercase=False, pretokenized=pretokenized)
    for batch in _batched(lines, 4096):
        sentences = tokenizer.words_batch(batch)
        for words, lengths in zip(sentences, segmenter.segment_batch(sentences)):
            yield format_spans(words, lengths)


# ---- task data ----------------------------------------------------------------------------------

def segment_columns(frame, segmenter: Segmenter, batch_size: int = 8192):
    """A copy of a prepared task frame with ``spans_a`` (and ``spans_b`` when ``words_b`` exists)."""
    if "words_a" not in frame.columns:
        raise SpanftError("prepared task data has no 'words_a' column")
    out = frame.copy()
    for side in ("a", "b"):
        column = f"words_{side}"
        if column not in frame.columns:
            continue
        sentences = [list(words) for words in frame[column]]
        spans: list[list[int]] = []
        for batch in _batched(sentences, batch_size):
            spans.extend(segmenter.segment_batch(batch))
        out[f"spans_{side}"] = spans
    return out


def _span_table(frame):
    """An arrow table of ``frame`` with the span columns typed list<int32>."""
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    for name in ("spans_a", "spans_b"):
        if name in table.column_names:
            i = table.column_names.index(name)
            table = table.set_column(i, name, table.column(name).cast(pa.list_(pa.int32())))
    return table


def _mean_spans(frame) -> dict[str, float]:
    stats = {}
    for side in ("a", "b"):
        if f"spans_{side}" in frame.columns and len(frame):
            stats[f"mean_spans_{side}"] = float(np.mean([len(s) for s in frame[f"spans_{side}"]]))
            stats[f"mean_words_{side}"] = float(np.mean([len(w) for w in frame[f"words_{side}"]]))
    return stats


def segment_task_dir(in_dir: str | Path, out_dir: str | Path, segmenter: Segmenter, *,
                     inputs: Iterable[str | Path | None] = ()) -> dict:
    """Segment every ``<split>.parquet`` of ``in_dir`` into ``out_dir`` (written atomically as a whole).

    Each output file keeps every input column and adds the span columns; the segmenter's description
    is stored in each file's schema metadata and, with per-split statistics, in ``segmentation.json``.
    """
    import shutil

    import pandas as pd
    import pyarrow.parquet as pq

    from spanft.fileio import atomic_path

    in_dir = Path(in_dir)
    if not in_dir.is_dir():
        raise SpanftError(f"{in_dir}: prepared task directory not found")
    files = sorted(in_dir.glob("*.parquet"))
    if not files:
        raise SpanftError(f"{in_dir}: no <split>.parquet files")
    info = {"segmenter": segmenter.describe(), "splits": {}}
    description = json.dumps(segmenter.describe(), sort_keys=True).encode()
    with atomic_path(out_dir, inputs=[in_dir, *inputs], made_by="segment-task") as tmp:
        tmp.mkdir()
        for path in files:
            try:
                frame = pd.read_parquet(path)
            except Exception as exc:  # pyarrow raises several types for a damaged file
                raise SpanftError(f"{path}: cannot read parquet ({exc})") from None
            segmented = segment_columns(frame, segmenter)
            table = _span_table(segmented)
            metadata = dict(table.schema.metadata or {})
            metadata[METADATA_KEY] = description
            pq.write_table(table.replace_schema_metadata(metadata), tmp / path.name)
            stats = {"rows": len(segmented), **_mean_spans(segmented)}
            info["splits"][path.stem] = stats
            log.info("segment-task: %s: %d rows, %s", path.stem, len(segmented),
                     ", ".join(f"{k} {v:.2f}" for k, v in stats.items() if k.startswith("mean_spans")))
        (tmp / SIDECAR_NAME).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        for record in in_dir.glob("*.json"):  # the prepared data's provenance travels with it
            if record.name != SIDECAR_NAME:
                shutil.copyfile(record, tmp / record.name)
    return info


def read_segmentation_info(path: str | Path) -> dict:
    """The segmenter description stored in a segmented parquet file's metadata."""
    import pyarrow.parquet as pq

    metadata = pq.read_schema(path).metadata or {}
    if METADATA_KEY not in metadata:
        raise SpanftError(f"{path}: no segmentation metadata (not written by 'spanft segment-task')")
    return json.loads(metadata[METADATA_KEY])
