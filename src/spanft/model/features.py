"""Model inputs for any backbone: sub-tokens, labels, and the word spans mapped onto sub-token ranges.

Words come pre-split (the task data stores them), so a fast tokenizer is called with
``is_split_into_words=True`` and ``word_ids()`` tells which word every sub-token belongs to. A span of words
becomes the contiguous range of sub-tokens of those words; every special token ([CLS], [SEP], <s>, </s>) is a
span of length 1. Pairs are ``[CLS] s1 [SEP] s2 [SEP]`` (RoBERTa: ``<s> s1 </s></s> s2 </s>``), each sentence
with the spans of its own segmentation.

Limits, in this order (the official code's reading; the paper's text swaps the two numbers):
  1. ``max_seq_len`` sub-tokens: the tokenizer truncates (pairs: longest sentence first);
  2. ``max_spans`` spans per input: spans past the limit are dropped;
  3. ``max_span_len`` pieces per span: pieces past the limit are dropped (the span keeps its first pieces).
Everything cut is counted in ``TruncationStats`` and logged.

A word that the tokenizer maps to zero sub-tokens (an empty string, a lone control or zero-width character)
simply has no pieces: the alignment goes through ``word_ids()``, so later words keep their spans, and a span
whose words all vanished is not emitted.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping, Sequence

import datasets
import numpy as np
import pandas as pd
import pyarrow.compute as pc
import torch
from tqdm.auto import tqdm

from spanft.errors import SpanftError
from spanft.model.span_model import token_span_ids

log = logging.getLogger("spanft")

IGNORE_INDEX = -100  # label of sub-tokens that carry no tag (not a word's first piece, special, padding)
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "span_starts", "span_lengths", "labels")
SPAN_KEYS = ("span_starts", "span_lengths", "span_ids")


@dataclass(frozen=True)
class FeatureConfig:
    """Input limits (params: ``max_seq_len``, ``max_spans`` = max_seq_len / 2, ``max_span_len``)."""

    max_seq_len: int = 128
    max_spans: int = 64
    max_span_len: int = 16

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or value < 1:
                raise SpanftError(f"{field.name}: must be a positive integer, got {value!r}")


@dataclass
class TruncationStats:
    """What the limits cut from one split."""

    examples: int = 0
    truncated_examples: int = 0  # examples cut by max_seq_len
    examples_with_dropped_spans: int = 0
    dropped_spans: int = 0  # spans past max_spans
    spans_with_dropped_pieces: int = 0
    dropped_pieces: int = 0  # pieces past max_span_len, in the spans kept
    words_without_tokens: int = 0  # words with zero sub-tokens (counted in untruncated examples)

    def __iadd__(self, other: "TruncationStats") -> "TruncationStats":
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))
        return self

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def log(self, name: str = "split") -> None:
        """Say what was cut (a warning when anything was)."""
        cut = self.truncated_examples or self.dropped_spans or self.dropped_pieces or self.words_without_tokens
        (log.warning if cut else log.info)(
            "%s: %d examples; %d truncated to max_seq_len; %d spans dropped past max_spans (in %d examples); "
            "%d pieces dropped past max_span_len (in %d spans); %d words without sub-tokens",
            name, self.examples, self.truncated_examples, self.dropped_spans, self.examples_with_dropped_spans,
            self.dropped_pieces, self.spans_with_dropped_pieces, self.words_without_tokens,
        )


def check_tokenizer(tokenizer: Any) -> None:
    """A fast tokenizer, and for byte-level BPE (RoBERTa) one built with ``add_prefix_space=True``."""
    name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    if not getattr(tokenizer, "is_fast", False):
        raise SpanftError(f"tokenizer {name}: not a fast tokenizer (word alignment needs word_ids())")
    if "ByteLevel(add_prefix_space=False" in repr(tokenizer.backend_tokenizer.pre_tokenizer):
        raise SpanftError(
            f"tokenizer {name}: byte-level BPE without add_prefix_space; load it with "
            "AutoTokenizer.from_pretrained(..., add_prefix_space=True)"
        )
    if tokenizer.pad_token_id is None:
        raise SpanftError(f"tokenizer {name}: has no padding token")


def encode_split(
    df: pd.DataFrame, tokenizer: Any, task: Any, cfg: FeatureConfig, batch_size: int = 1000, name: str = "split"
) -> tuple["datasets.Dataset", TruncationStats]:  # noqa: F821
    """Tokenize a prepared (or segmented) split into model inputs.

    Columns: ``idx, input_ids, attention_mask, [token_type_ids], labels`` and, when ``df`` has ``spans_a``,
    ``span_starts, span_lengths``. ``labels``: the class id (-1 unlabeled), the float score (NaN unlabeled), or
    for tagging one id per sub-token: the word's tag on its first sub-token, -100 elsewhere; an unlabeled
    tagging example (empty ``tags``) has 0 on each first sub-token, so the positions to predict stay marked.
    """
    check_tokenizer(tokenizer)
    _check_columns(df, task)
    columns: dict[str, list] = {}
    stats = TruncationStats()
    starts = range(0, len(df), batch_size)
    for start in tqdm(starts, desc=f"encode {name}", unit="batch", disable=True if len(starts) < 5 else None):
        chunk_columns, chunk_stats = _encode_chunk(df.iloc[start : start + batch_size], tokenizer, task, cfg)
        for key, values in chunk_columns.items():
            columns.setdefault(key, []).extend(values)
        stats += chunk_stats
    stats.log(name)
    if not columns:  # an empty split still has the schema
        columns = {key: [] for key in ("idx", "input_ids", "attention_mask", "labels")}
    return datasets.Dataset.from_dict(columns), stats


def _check_columns(df: pd.DataFrame, task: Any) -> None:
    needed = ["idx", "words_a"] + (["words_b"] if task.is_pair else []) + (["tags"] if task.is_tagging else ["label"])
    if "spans_a" in df.columns and task.is_pair:
        needed.append("spans_b")
    missing = [column for column in needed if column not in df.columns]
    if missing:
        raise SpanftError(f"task {task.name}: data lacks column(s) {', '.join(missing)}")


def _as_word_lists(values: Sequence) -> list[list[str]]:
    return [[str(word) for word in words] for words in values]


def _encode_chunk(chunk: pd.DataFrame, tokenizer: Any, task: Any, cfg: FeatureConfig) -> tuple[dict, TruncationStats]:
    words_a = _as_word_lists(chunk["words_a"])
    words_b = _as_word_lists(chunk["words_b"]) if task.is_pair else None
    encoded = tokenizer(
        words_a, words_b, is_split_into_words=True, max_length=cfg.max_seq_len,
        truncation="longest_first" if task.is_pair else True,
    )
    tokens = _TokenTable.from_encodings(encoded.encodings)
    idx = chunk["idx"].to_numpy()
    columns: dict[str, list] = {"idx": idx.astype(np.int64).tolist()}
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        if key in encoded:
            columns[key] = encoded[key]
    stats = TruncationStats(examples=len(chunk), truncated_examples=int(tokens.truncated.sum()))
    stats.words_without_tokens = _words_without_tokens(tokens, words_a, words_b)
    if task.is_tagging:
        columns["labels"] = _tag_labels(tokens, chunk["tags"], words_a, idx)
    elif task.is_regression:
        columns["labels"] = chunk["label"].to_numpy(dtype=np.float64).tolist()
    else:
        columns["labels"] = chunk["label"].to_numpy(dtype=np.int64).tolist()
    if "spans_a" in chunk.columns:
        spans_b = chunk["spans_b"] if task.is_pair else None
        span_starts, span_lengths = _span_columns(tokens, chunk["spans_a"], spans_b, words_a, words_b, idx, cfg, stats)
        columns["span_starts"], columns["span_lengths"] = span_starts, span_lengths
    return columns, stats


@dataclass
class _TokenTable:
    """Every sub-token of a chunk, flattened: its example, position, sentence (-1 special) and word (-1 special)."""

    example: np.ndarray
    position: np.ndarray
    sentence: np.ndarray
    word: np.ndarray
    lengths: np.ndarray  # sub-tokens per example
    truncated: np.ndarray  # bool per example

    @classmethod
    def from_encodings(cls, encodings: Sequence) -> "_TokenTable":
        lengths = np.array([len(e.ids) for e in encodings], dtype=np.int64)
        # float conversion turns None (special tokens) into NaN in one call per chunk
        word = np.array(list(itertools.chain.from_iterable(e.word_ids for e in encodings)), dtype=np.float64)
        sentence = np.array(list(itertools.chain.from_iterable(e.sequence_ids for e in encodings)), dtype=np.float64)
        example = np.repeat(np.arange(len(encodings)), lengths)
        position = np.arange(len(word)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        truncated = np.array([len(e.overflowing) > 0 for e in encodings], dtype=bool)
        special = np.isnan(word) | np.isnan(sentence)
        return cls(
            example=example, position=position,
            sentence=np.where(special, -1, np.nan_to_num(sentence)).astype(np.int64),
            word=np.where(special, -1, np.nan_to_num(word)).astype(np.int64),
            lengths=lengths, truncated=truncated,
        )

    def first_pieces(self) -> np.ndarray:
        """Bool per sub-token: the first piece of a word."""
        if len(self.word) == 0:
            return np.zeros(0, dtype=bool)
        new_word = np.ones(len(self.word), dtype=bool)
        new_word[1:] = (
            (self.word[1:] != self.word[:-1]) | (self.sentence[1:] != self.sentence[:-1]) | (self.position[1:] == 0)
        )
        return new_word & (self.word >= 0)


def _words_without_tokens(tokens: _TokenTable, words_a: list, words_b: list | None) -> int:
    """Words that got no sub-token, in the examples the tokenizer did not truncate."""
    word_count = np.array([len(w) for w in words_a]) + (np.array([len(w) for w in words_b]) if words_b else 0)
    seen = np.bincount(tokens.example[tokens.first_pieces()], minlength=len(words_a))
    return int((word_count - seen)[~tokens.truncated].sum())


def _tag_labels(tokens: _TokenTable, tags: pd.Series, words: list, idx: np.ndarray) -> list[list[int]]:
    tag_lists = [np.asarray(t, dtype=np.int64) for t in tags]
    word_counts = np.array([len(w) for w in words], dtype=np.int64)
    tag_counts = np.array([len(t) for t in tag_lists], dtype=np.int64)
    labelled = tag_counts > 0
    bad = np.flatnonzero(labelled & (tag_counts != word_counts))
    if len(bad):
        i = bad[0]
        raise SpanftError(f"example idx {idx[i]}: {tag_counts[i]} tags for {word_counts[i]} words")
    # unlabeled examples get tag 0 on each first piece: the positions to predict stay marked
    padded = [t if len(t) else np.zeros(n, dtype=np.int64) for t, n in zip(tag_lists, word_counts)]
    flat_tags = np.concatenate(padded) if padded else np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(word_counts) - word_counts
    labels = np.full(len(tokens.word), IGNORE_INDEX, dtype=np.int64)
    first = tokens.first_pieces()
    labels[first] = flat_tags[offsets[tokens.example[first]] + tokens.word[first]]
    return _split_rows(labels, tokens.lengths)


def _word_to_span(spans: pd.Series, words: list, idx: np.ndarray, column: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Global span id of every word (flattened over the chunk), each example's word offset, number of spans."""
    span_lists = [np.asarray(s, dtype=np.int64) for s in spans]
    word_counts = np.array([len(w) for w in words], dtype=np.int64)
    for i, (span_list, count) in enumerate(zip(span_lists, word_counts)):
        if span_list.sum() != count or (span_list < 1).any():
            raise SpanftError(
                f"example idx {idx[i]}: {column} {span_list.tolist()} must be positive and sum to its {count} words"
            )
    flat = np.concatenate(span_lists) if span_lists else np.zeros(0, dtype=np.int64)
    return np.repeat(np.arange(len(flat)), flat), np.cumsum(word_counts) - word_counts, len(flat)


def _span_columns(
    tokens: _TokenTable, spans_a: pd.Series, spans_b: pd.Series | None, words_a: list, words_b: list | None,
    idx: np.ndarray, cfg: FeatureConfig, stats: TruncationStats,
) -> tuple[list[list[int]], list[list[int]]]:
    """Spans as (start, length) sub-token ranges per example, after the max_spans / max_span_len limits."""
    # 1. a group id per sub-token: its word span's global id, or a fresh id for each special token
    span_of_word_a, offset_a, count_a = _word_to_span(spans_a, words_a, idx, "spans_a")
    group = np.empty(len(tokens.word), dtype=np.int64)
    in_a, special = tokens.sentence == 0, tokens.sentence < 0
    group[in_a] = span_of_word_a[offset_a[tokens.example[in_a]] + tokens.word[in_a]]
    count_b = 0
    if spans_b is not None:
        span_of_word_b, offset_b, count_b = _word_to_span(spans_b, words_b, idx, "spans_b")
        in_b = tokens.sentence == 1
        group[in_b] = count_a + span_of_word_b[offset_b[tokens.example[in_b]] + tokens.word[in_b]]
    group[special] = count_a + count_b + np.flatnonzero(special)
    # 2. a span starts wherever the group changes (groups never repeat across examples)
    is_start = np.ones(len(group), dtype=bool)
    is_start[1:] = group[1:] != group[:-1]
    start_index = np.flatnonzero(is_start)
    length = np.diff(np.append(start_index, len(group)))
    example = tokens.example[start_index]
    # 3. limits: rank of each span in its example -> drop past max_spans; clip pieces past max_span_len
    spans_per_example = np.bincount(example, minlength=len(tokens.lengths))
    rank = np.arange(len(start_index)) - np.repeat(np.cumsum(spans_per_example) - spans_per_example, spans_per_example)
    keep = rank < cfg.max_spans
    dropped_per_example = spans_per_example - np.bincount(example[keep], minlength=len(tokens.lengths))
    stats.dropped_spans += int(dropped_per_example.sum())
    stats.examples_with_dropped_spans += int((dropped_per_example > 0).sum())
    kept_length = length[keep]
    clipped = np.minimum(kept_length, cfg.max_span_len)
    stats.dropped_pieces += int((kept_length - clipped).sum())
    stats.spans_with_dropped_pieces += int((kept_length > clipped).sum())
    kept_per_example = spans_per_example - dropped_per_example
    return (
        _split_rows(tokens.position[start_index[keep]], kept_per_example),
        _split_rows(clipped, kept_per_example),
    )


def _split_rows(flat: np.ndarray, counts: np.ndarray) -> list[list[int]]:
    return [row.tolist() for row in np.split(flat, np.cumsum(counts)[:-1])] if len(counts) else []


# ---------------------------------------------------------------------------------------------------------
# Batching

MEGA_BATCHES = 50  # batches sorted together by length: wide enough to pad little, narrow enough to stay random


def example_lengths(dataset: "datasets.Dataset") -> np.ndarray:  # noqa: F821
    """Sub-tokens per example of an encoded split, read from its arrow column (no row is decoded)."""
    return pc.list_value_length(dataset.with_format("arrow")[:]["input_ids"]).to_numpy().astype(np.int64)


def length_grouped_order(lengths: np.ndarray, batch_size: int, seed: int, epoch: int) -> np.ndarray:
    """A permutation of the examples in which each run of ``batch_size`` holds examples of similar length.

    Shuffle, cut into mega-batches of ``MEGA_BATCHES`` batches, sort each by length, cut into batches and
    shuffle the order of the full batches (a last partial batch stays last, where the data loader expects it).
    With dynamic padding a batch is then padded to about its own examples' length. The order depends on
    (lengths, batch_size, seed, epoch) alone, so a resumed run and a run on several processes (``batch_size``
    is the global batch) see the batches of an uninterrupted single-process run.
    """
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    mega = batch_size * MEGA_BATCHES
    for start in range(0, len(order), mega):
        chunk = order[start : start + mega]
        order[start : start + mega] = chunk[np.argsort(-lengths[chunk], kind="stable")]
    full = len(order) // batch_size
    batches = rng.permutation(full)
    grouped = order[: full * batch_size].reshape(full, batch_size)[batches].reshape(-1)
    return np.concatenate([grouped, order[full * batch_size :]])


class LengthGroupedSampler(torch.utils.data.Sampler):
    """Training order of :func:`length_grouped_order`, a new one each epoch (the Trainer calls ``set_epoch``)."""

    def __init__(self, lengths: np.ndarray, batch_size: int, seed: int) -> None:
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size = batch_size
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self):
        return iter(length_grouped_order(self.lengths, self.batch_size, self.seed, self.epoch).tolist())


@dataclass
class SpanCollator:
    """Dynamic padding of a list of feature dicts (what the HF Trainer hands a data collator).

    input_ids with the tokenizer's pad id, attention_mask / token_type_ids with 0, spans with (start 0,
    length 0), tagging labels with -100. Keys that are not model inputs (``idx``) are left out. With spans, it
    adds ``span_ids`` [B, T]: the span of every token (-1 for none), spans cut at ``max_span_len`` pieces (the
    model's limit), so the training step does not derive them.
    """

    tokenizer: Any
    pad_to_multiple_of: int | None = None
    max_span_len: int | None = None

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        if not features:
            raise ValueError("SpanCollator: empty batch")
        pad_values = {
            "input_ids": self.tokenizer.pad_token_id, "attention_mask": 0, "token_type_ids": 0,
            "span_starts": 0, "span_lengths": 0, "labels": IGNORE_INDEX,
        }
        batch = {}
        for key in MODEL_INPUTS:
            if key not in features[0]:
                continue
            rows = [f[key] for f in features]
            if key == "labels" and np.ndim(rows[0]) == 0:
                batch[key] = torch.tensor(rows, dtype=torch.float32 if _is_float(rows) else torch.long)
            else:
                multiple = self.pad_to_multiple_of if key not in SPAN_KEYS else None
                batch[key] = _pad_rows(rows, pad_values[key], multiple)
        if "span_starts" in batch:
            lengths = batch["span_lengths"]
            if self.max_span_len is not None:
                lengths = lengths.clamp(max=self.max_span_len)
            batch["span_ids"] = token_span_ids(batch["span_starts"], lengths, batch["input_ids"].shape[1])
        return batch


def _is_float(values: Sequence) -> bool:
    return any(isinstance(v, (float, np.floating)) for v in values)


def _pad_rows(rows: Sequence[Sequence[int]], pad_value: int, multiple: int | None) -> torch.Tensor:
    """Right-pad ragged integer rows into one [N, max_len] tensor without a per-row copy loop."""
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    width = int(lengths.max()) if len(lengths) else 0
    if multiple:
        width = -(-width // multiple) * multiple
    out = np.full((len(rows), width), pad_value, dtype=np.int64)
    out[np.arange(width) < lengths[:, None]] = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64)
    return torch.from_numpy(out)
