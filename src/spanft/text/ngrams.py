"""Word n-gram counting at corpus scale, and dictionaries (the top-K n-grams of a counts file).

Counting never builds a Python dict of distinct n-grams. Words are integer-encoded (chunks of the
corpus tokenised in worker processes, :mod:`spanft.text.parallel`), then counted order by order with numpy:

* a stream ``ids`` holds one word id per token and ``-1`` for barriers (line ends and tokens with
  no letter or digit), so no n-gram crosses a barrier;
* ``cur[i]`` is the id of the surviving k-gram starting at token ``i`` (or -1). The (k+1)-gram at
  ``i`` is a candidate only if both its k-gram prefix (``cur[i]``) and suffix (``cur[i + 1]``)
  survived, because an n-gram cannot be more frequent than its sub-grams;
* its exact int64 key is ``cur[i] * V + word[i + k]``; sorting the keys gives the counts, and the
  keys that reach ``min_count`` get the dense ids of the next ``cur``.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
from tqdm import tqdm

from spanft.errors import SpanftError, where
from spanft.fileio import atomic_open, check_output, require_file
from spanft.text.parallel import ordered_map
from spanft.text.words import WordTokenizer, has_letter_or_digit

log = logging.getLogger("spanft")

LINE_END = "\n"  # the word appended after every line: it can never be a real word (words hold no whitespace)
CHUNK_BYTES = 8 << 20
SMALL_CORPUS_BYTES = 4 << 20  # below this, encode in-process (a pool costs more than it saves)
DEFAULT_MAX_N = 5  # the longest n-gram counted and matched when nothing else says (params: ngrams.max_n)


# ----------------------------------------------------------------------------------------------
# Encoding: text -> int32 word ids with -1 barriers


@dataclass
class EncodedCorpus:
    """The corpus as one id stream: ``ids[i]`` indexes ``vocab``, -1 marks a barrier."""

    ids: np.ndarray
    vocab: list[str]
    lines: int = 0
    words: int = 0


@dataclass(frozen=True)
class _Chunk:
    path: str
    start: int
    end: int
    first_in_file: bool


@dataclass
class _EncodedChunk:
    local_vocab: list[str] = field(default_factory=list)
    local_ids: np.ndarray | None = None
    lines: int = 0
    bytes: int = 0
    error_line: int | None = None  # line within the chunk (1-based) holding bad UTF-8
    error_message: str = ""


def _plan_chunks(path: Path, chunk_bytes: int) -> list[_Chunk]:
    """Cut a file into byte ranges that end on line boundaries."""
    size = path.stat().st_size
    chunks: list[_Chunk] = []
    start = 0
    with open(path, "rb") as handle:
        while start < size:
            handle.seek(min(start + chunk_bytes, size))
            handle.readline()  # finish the line the cut fell into
            end = min(handle.tell(), size)
            chunks.append(_Chunk(str(path), start, end, first_in_file=start == 0))
            start = end
    return chunks


def _encode_chunk(chunk: _Chunk, tokenizer: WordTokenizer) -> _EncodedChunk:
    with open(chunk.path, "rb") as handle:
        handle.seek(chunk.start)
        data = handle.read(chunk.end - chunk.start)
    result = _EncodedChunk(lines=data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1), bytes=len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        result.error_line = data.count(b"\n", 0, exc.start) + 1
        result.error_message = f"not valid UTF-8 (byte {data[exc.start]:#04x} at column {exc.start - line_start + 1})"
        return result
    if chunk.first_in_file and text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()  # the empty string after the final newline is not a line
    tokens: list[str] = []
    for line in lines:
        tokens.extend(tokenizer.words(line))
        tokens.append(LINE_END)
    local = {word: i for i, word in enumerate(dict.fromkeys(tokens))}
    result.local_vocab = list(local)
    result.local_ids = np.fromiter(map(local.__getitem__, tokens), dtype=np.int32, count=len(tokens))
    return result


class _Vocabulary:
    """Global word ids; words without a letter or digit (and the line end) map to the barrier -1."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.words: list[str] = []

    def lookup(self, word: str) -> int:
        found = self.index.get(word)
        if found is not None:
            return found
        if has_letter_or_digit(word):
            found = len(self.words)
            self.words.append(word)
        else:
            found = -1
        self.index[word] = found
        return found

    def global_ids(self, chunk: _EncodedChunk) -> np.ndarray:
        mapping = np.fromiter(map(self.lookup, chunk.local_vocab), dtype=np.int32, count=len(chunk.local_vocab))
        return mapping[chunk.local_ids]


def encode_corpus(
    paths: Sequence[str | os.PathLike],
    tokenizer: WordTokenizer,
    workers: int | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    progress: bool = True,
) -> EncodedCorpus:
    """Tokenise and integer-encode corpus files (one paragraph a line), chunks in worker processes."""
    files = [require_file(path, "corpus file") for path in paths]
    chunks = [chunk for path in files for chunk in _plan_chunks(path, chunk_bytes)]
    total_bytes = sum(chunk.end - chunk.start for chunk in chunks)
    if workers is None:
        workers = 1 if total_bytes < SMALL_CORPUS_BYTES else min(2, os.cpu_count() or 1)
    vocab = _Vocabulary()
    pieces: list[np.ndarray] = []
    lines_before = {str(path): 0 for path in files}
    encode = functools.partial(_encode_chunk, tokenizer=tokenizer)
    bars = None if progress else True  # None: tqdm draws only on a terminal
    with (tqdm(total=total_bytes, unit="B", unit_scale=True, desc="encode", disable=bars) as bar,
          ordered_map(encode, chunks, workers) as encoded_chunks):
        for chunk, encoded in zip(chunks, encoded_chunks):
            if encoded.error_line is not None:
                line = lines_before[chunk.path] + encoded.error_line
                raise SpanftError(f"{where(chunk.path, line)}: {encoded.error_message}")
            lines_before[chunk.path] += encoded.lines
            pieces.append(vocab.global_ids(encoded))
            bar.update(encoded.bytes)
    ids = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
    return EncodedCorpus(ids, vocab.words, lines=sum(lines_before.values()), words=int(np.count_nonzero(ids >= 0)))


# ----------------------------------------------------------------------------------------------
# Counting: int32 id stream -> counts of surviving n-grams, order by order


@dataclass
class NgramCounts:
    """Counted n-grams in canonical order (count descending, then n-gram text ascending)."""

    texts: list[str]
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)

    def entries(self) -> Iterator[tuple[tuple[str, ...], int]]:
        for text, count in zip(self.texts, self.counts.tolist()):
            yield tuple(text.split(" ")), count


def _group_keys(keys: np.ndarray, min_count: int, want_ids: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Distinct keys reaching ``min_count`` (sorted), their counts, and per input the dense id (-1 if pruned).

    ``keys`` is used as scratch space (it is sorted in place).
    """
    n = len(keys)
    order = None
    position_bits = max(int(n - 1).bit_length(), 1)
    if not want_ids:
        keys.sort()
    elif int(keys.max()).bit_length() + position_bits <= 63:
        # sort (key, position) packed in one int64: a plain sort is much faster than argsort
        keys <<= position_bits
        keys |= np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
        keys.sort()
        order = np.empty(n, dtype=np.int32 if n < 2**31 else np.int64)
        np.bitwise_and(keys, (1 << position_bits) - 1, out=order, casting="unsafe")
        keys >>= position_bits
    else:
        order = np.argsort(keys)
        keys[:] = keys[order]
    is_start = np.empty(n, dtype=bool)
    is_start[0] = True
    np.not_equal(keys[1:], keys[:-1], out=is_start[1:])
    starts = np.flatnonzero(is_start)
    del is_start
    counts = np.diff(np.append(starts, n))
    survive = counts >= min_count
    distinct = keys[starts[survive]]
    ids = None
    if order is not None:
        group_id = np.where(survive, np.cumsum(survive) - 1, -1).astype(np.int32)
        ids = np.empty(n, dtype=np.int32)
        ids[order] = np.repeat(group_id, counts)
    return distinct, counts[survive], ids


@dataclass
class _Order:
    prefix: np.ndarray  # id of the (k-1)-gram prefix (for k = 1: the word's original vocab id)
    last: np.ndarray  # dense id of the last word
    counts: np.ndarray


def count_encoded(
    corpus: EncodedCorpus,
    min_n: int = 2,
    max_n: int = DEFAULT_MAX_N,
    min_count: int = 10,
    progress: bool = True,
    release: bool = False,
) -> NgramCounts:
    """Count every n-gram (min_n <= n <= max_n) of the id stream with count >= min_count.

    ``release`` drops ``corpus.ids`` as soon as it is no longer needed (saves memory at scale).
    """
    _check_orders(min_n, max_n, min_count)
    unigram_counts = np.bincount(corpus.ids[corpus.ids >= 0], minlength=len(corpus.vocab))
    kept_words = np.flatnonzero(unigram_counts >= min_count)
    log.info(
        "%d of %d distinct words reach min_count %d; n-grams holding any other word are skipped",
        len(kept_words), len(corpus.vocab), min_count,
    )
    dense = np.full(len(corpus.vocab) + 1, -1, dtype=np.int32)  # the extra slot maps the barrier -1 to -1
    dense[kept_words] = np.arange(len(kept_words), dtype=np.int32)
    words = dense[corpus.ids]
    if release:
        corpus.ids = np.zeros(0, dtype=np.int32)
    vocab_size = max(len(kept_words), 1)
    orders = [_Order(kept_words, np.arange(len(kept_words)), unigram_counts[kept_words])]
    cur = words
    for k in tqdm(range(2, max_n + 1), desc="count", disable=None if progress else True):
        if len(cur) < 2:
            break
        valid = cur[:-1] >= 0
        valid &= cur[1:] >= 0
        keys = cur[:-1][valid].astype(np.int64)
        del cur
        keys *= vocab_size
        keys += words[k - 1 :][valid]
        if len(keys) == 0:
            break
        candidates = len(keys)
        distinct, counts, new_ids = _group_keys(keys, min_count, want_ids=k < max_n)
        del keys
        orders.append(_Order(distinct // vocab_size, distinct % vocab_size, counts))
        log.debug("order %d: %d candidates, %d kept", k, candidates, len(distinct))
        if new_ids is None:
            break
        cur = np.full(len(valid), -1, dtype=np.int32)
        cur[valid] = new_ids
        del valid, new_ids
    return _collect(orders, corpus.vocab, min_n, max_n)


def _collect(orders: list[_Order], vocab: list[str], min_n: int, max_n: int) -> NgramCounts:
    """Build the n-gram texts order by order and sort everything into canonical order."""
    word_texts = [vocab[i] for i in orders[0].prefix.tolist()]
    texts_by_order: list[list[str]] = [word_texts]
    all_texts: list[str] = []
    all_counts: list[np.ndarray] = []
    for k, order in enumerate(orders, start=1):
        if k > 1:
            previous = texts_by_order[-1]
            texts_by_order.append(
                [previous[p] + " " + word_texts[w] for p, w in zip(order.prefix.tolist(), order.last.tolist())]
            )
        if min_n <= k <= max_n:
            all_texts.extend(texts_by_order[-1])
            all_counts.append(order.counts)
    counts = np.concatenate(all_counts).astype(np.int64) if all_counts else np.zeros(0, dtype=np.int64)
    by_text = np.empty(len(all_texts), dtype=np.int64)
    by_text[sorted(range(len(all_texts)), key=all_texts.__getitem__)] = np.arange(len(all_texts))
    order = np.lexsort((by_text, -counts))
    return NgramCounts([all_texts[i] for i in order.tolist()], counts[order])


MIN_N, MAX_N = 2, 5  # n-grams of 2 to 5 words: the paper's, and the longest span segmentation matches


def n_range_problem(min_n: int, max_n: int) -> str | None:
    """Why ``min_n .. max_n`` is not a range of n-gram lengths (params ngrams.* and the flags alike), or None."""
    if not MIN_N <= min_n <= max_n <= MAX_N:
        return (f"must satisfy {MIN_N} <= min_n <= max_n <= {MAX_N} (the longest span segmentation matches), "
                f"found min_n {min_n}, max_n {max_n}")
    return None


def check_n_flags(min_n: int, max_n: int) -> None:
    """``--min-n``/``--max-n`` of the command line: the bounds of params ``ngrams.*``."""
    problem = n_range_problem(min_n, max_n)
    if problem:
        raise SpanftError(f"--min-n/--max-n (ngrams.min_n/max_n) {problem}")


def _check_orders(min_n: int, max_n: int, min_count: int) -> None:
    if min_n < 1:
        raise SpanftError(f"--min-n must be >= 1, got {min_n}")
    if max_n < min_n:
        raise SpanftError(f"--max-n ({max_n}) must be >= --min-n ({min_n})")
    if min_count < 1:
        raise SpanftError(f"--min-count must be >= 1, got {min_count}")


def count_ngrams(
    paths: Sequence[str | os.PathLike],
    min_n: int = 2,
    max_n: int = DEFAULT_MAX_N,
    min_count: int = 10,
    pretokenized: bool = False,
    lowercase: bool = True,
    workers: int | None = None,
    progress: bool = True,
) -> NgramCounts:
    """Count word n-grams over corpus files (never across a line); raise SpanftError on bad input."""
    _check_orders(min_n, max_n, min_count)
    tokenizer = WordTokenizer(lowercase=lowercase, pretokenized=pretokenized)
    corpus = encode_corpus(paths, tokenizer, workers=workers, progress=progress)
    if corpus.words == 0:
        raise SpanftError(f"{', '.join(map(str, paths))}: empty corpus (no words with a letter or digit)")
    log.info("encoded %d words on %d lines, %d distinct words", corpus.words, corpus.lines, len(corpus.vocab))
    return count_encoded(corpus, min_n, max_n, min_count, progress=progress, release=True)


def write_counts(counts: NgramCounts, path: str | os.PathLike, batch: int = 1 << 16, *,
                 inputs: Sequence[str | os.PathLike] = ()) -> int:
    """Write ``ngram<TAB>count`` lines atomically (never over one of ``inputs``); return the number of lines."""
    with atomic_open(path, inputs=inputs) as out:
        for start in range(0, len(counts), batch):
            texts = counts.texts[start : start + batch]
            values = counts.counts[start : start + batch].tolist()
            out.write("".join(f"{t}\t{c}\n" for t, c in zip(texts, values)))
    return len(counts)


def count_ngrams_to_file(paths: Sequence[str | os.PathLike], out: str | os.PathLike, *, min_n: int = 2,
                         max_n: int = DEFAULT_MAX_N, min_count: int = 10, lowercase: bool = True,
                         pretokenized: bool = False, progress: bool = True) -> int:
    """The count-ngrams stage: count ``paths`` and write the counts file; return the n-grams written."""
    check_output(out, inputs=paths)  # before the long count
    counts = count_ngrams(paths, min_n=min_n, max_n=max_n, min_count=min_count, pretokenized=pretokenized,
                          lowercase=lowercase, progress=progress)
    if len(counts) == 0:
        log.warning("no n-gram reached --min-count %d (ngrams.min_count): writing an empty counts file", min_count)
    written = write_counts(counts, out, inputs=paths)
    log.info("wrote %d n-grams to %s", written, out)
    return written
