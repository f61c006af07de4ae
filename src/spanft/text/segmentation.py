"""Segmentation of sentences and task data into spans: the segmenter of a method, and the files it writes.

A segmentation of a sentence of ``n`` words is a list of span lengths in words summing to ``n``. Three
methods (:data:`METHODS`): greedy n-gram longest match against a dictionary (:mod:`spanft.text.greedy`),
random spans as many as the n-gram ones (:mod:`spanft.text.random_spans`), and NLTK chunks
(:mod:`spanft.text.chunker`). :func:`make_segmenter` builds one; :func:`segment_lines` segments text lines
(``spanft segment``) and :func:`segment_task_dir` adds span columns to every split of a prepared task
(``spanft segment-task``, the segment stages), recording the segmenter in each parquet file's metadata
(:func:`read_segmentation_info`) and in ``segmentation.json``.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Iterable, Iterator, Protocol, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from spanft.errors import SpanftError
from spanft.fileio import atomic_path, split_text_lines
from spanft.text.chunker import ChunkSegmenter
from spanft.text.greedy import GreedySegmenter
from spanft.text.random_spans import RandomSegmenter
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


# ---- construction and helpers -------------------------------------------------------------------

def make_segmenter(method: str, dict_path: str | None = None, seed: int = 0, tagger: str | None = None,
                   keep_case: bool = False, *, max_n: int) -> Segmenter:
    """The segmenter of ``method`` (n-gram and random: longest span ``max_n`` words, from params
    ``ngrams.max_n``); a one-line SpanftError on a missing input."""
    if method not in METHODS:
        raise SpanftError(f"unknown segmentation method {method!r} (expected one of {', '.join(METHODS)})")
    if method == "chunker":
        return ChunkSegmenter.load(tagger or None)  # None (spanft segment without --tagger): NLTK's pretrained tagger
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
    return iter(split_text_lines(text))


def segment_lines(lines: Iterable[str], segmenter: Segmenter, pretokenized: bool = False) -> Iterator[str]:
    """Each text line segmented and formatted (``a b | c``); words keep their case."""
    tokenizer = WordTokenizer(lowercase=False, pretokenized=pretokenized)
    for batch in _batched(lines, 4096):
        sentences = tokenizer.words_batch(batch)
        for words, lengths in zip(sentences, segmenter.segment_batch(sentences)):
            yield format_spans(words, lengths)


# ---- task data ----------------------------------------------------------------------------------

def span_column(words, segmenter: Segmenter, batch_size: int = 8192):
    """The ``list<int32>`` span column of a ``list<string>`` words column (arrow)."""
    if isinstance(segmenter, GreedySegmenter):
        return segmenter.segment_arrow(words)
    spans: list[list[int]] = []
    for batch in _batched(words.to_pylist(), batch_size):
        spans.extend(segmenter.segment_batch(batch))
    return pa.array(spans, pa.list_(pa.int32()))


def _mean_spans(table) -> dict[str, float]:
    stats = {}
    for side in ("a", "b"):
        if f"spans_{side}" in table.column_names and table.num_rows:
            stats[f"mean_spans_{side}"] = float(pc.mean(pc.list_value_length(table[f"spans_{side}"])).as_py())
            stats[f"mean_words_{side}"] = float(pc.mean(pc.list_value_length(table[f"words_{side}"])).as_py())
    return stats


def segment_task_dir(in_dir: str | Path, out_dir: str | Path, segmenter: Segmenter, *,
                     inputs: Iterable[str | Path | None] = ()) -> dict:
    """Segment every ``<split>.parquet`` of ``in_dir`` into ``out_dir`` (written atomically as a whole).

    Each output file keeps every input column and adds the span columns; the segmenter's description
    is stored in each file's schema metadata and, with per-split statistics, in ``segmentation.json``.
    """
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
                table = pq.read_table(path)
            except Exception as exc:  # pyarrow raises several types for a damaged file
                raise SpanftError(f"{path}: cannot read parquet ({exc})") from None
            if "words_a" not in table.column_names:
                raise SpanftError(f"{path}: prepared task data has no 'words_a' column")
            for side in ("a", "b"):
                if f"words_{side}" in table.column_names:
                    table = table.append_column(f"spans_{side}", span_column(table[f"words_{side}"], segmenter))
            metadata = {key: value for key, value in (table.schema.metadata or {}).items() if key != b"pandas"}
            metadata[METADATA_KEY] = description
            pq.write_table(table.replace_schema_metadata(metadata), tmp / path.name)
            stats = {"rows": table.num_rows, **_mean_spans(table)}
            info["splits"][path.stem] = stats
            log.info("segment-task: %s: %d rows, %s", path.stem, table.num_rows,
                     ", ".join(f"{k} {v:.2f}" for k, v in stats.items() if k.startswith("mean_spans")))
        (tmp / SIDECAR_NAME).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        for record in in_dir.glob("*.json"):  # the prepared data's provenance travels with it
            if record.name != SIDECAR_NAME:
                shutil.copyfile(record, tmp / record.name)
    return info


def read_segmentation_info(path: str | Path) -> dict:
    """The segmenter description stored in a segmented parquet file's metadata."""
    metadata = pq.read_schema(path).metadata or {}
    if METADATA_KEY not in metadata:
        raise SpanftError(f"{path}: no segmentation metadata (not written by 'spanft segment-task')")
    return json.loads(metadata[METADATA_KEY])
