"""One split of a task as columns, and the labels shared by every reader.

Prepared layout (``spanft prepare-task``): ``<out>/<split>.parquet`` per split with columns

- ``idx`` int64: GLUE test files' ``index`` (the hub's ``idx``), else the row number in the source split
  (SNLI: counting the rows without a gold label; CoNLL: the sentence number, ``-DOCSTART-`` not counted);
- ``words_a`` (and ``words_b`` for pairs) list<string>: words in their original case, split with
  ``WordTokenizer(lowercase=False)``; CoNLL keeps its own tokens;
- ``label`` int64 (registry order, -1 unlabeled) or float64 for STS-B (NaN unlabeled); tagging tasks have
  ``tags`` list<int64> (IOB2 ids; empty list unlabeled) instead.
"""

from __future__ import annotations

import contextlib
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from spanft.data.registry import TaskSpec
from spanft.errors import SpanftError

log = logging.getLogger("spanft")


@dataclass(frozen=True)
class SyntheticSizes:
    """Sizes of generated splits (params ``data.synthetic.*``); every eval/test split gets its own size."""

    train: int = 2000
    eval: int = 500
    test: int = 500
    seed: int = 0
    language_seed: int = 0


@dataclass
class SplitColumns:
    """Normalised examples of one split, column by column."""

    task: TaskSpec
    split: str
    idx: list[int] = field(default_factory=list)
    words_a: list[list[str]] = field(default_factory=list)
    words_b: list[list[str]] = field(default_factory=list)
    labels: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.idx)

    def add(self, idx: int, words: Sequence[Sequence[str]], label, location: str) -> None:
        """Append one example; ``words`` holds one word list per sentence; ``label`` is already an id/score/tag ids."""
        if self.task.is_tagging and not words[0]:  # a classification split may hold an empty sentence (readers)
            raise SpanftError(f"{location}: sentence 1 is empty")
        self.idx.append(int(idx))
        self.words_a.append(list(words[0]))
        if self.task.is_pair:
            self.words_b.append(list(words[1]))
        self.labels.append(label)

    def to_table(self) -> pa.Table:
        columns = {"idx": pa.array(self.idx, pa.int64()), "words_a": pa.array(self.words_a, pa.list_(pa.string()))}
        if self.task.is_pair:
            columns["words_b"] = pa.array(self.words_b, pa.list_(pa.string()))
        if self.task.is_tagging:
            columns["tags"] = pa.array(self.labels, pa.list_(pa.int64()))
        elif self.task.is_regression:
            columns["label"] = pa.array(self.labels, pa.float64())
        else:
            columns["label"] = pa.array(self.labels, pa.int64())
        return pa.table(columns)


def unlabeled_value(task: TaskSpec):
    """The label of an unlabeled example: -1, NaN (regression) or an empty tag list."""
    if task.is_tagging:
        return []
    return math.nan if task.is_regression else -1


def parse_raw_label(task: TaskSpec, raw: str, location: str) -> int | float:
    """A label as written in the official files (``0``/``1``, ``entailment``, a score) -> id or score."""
    if task.is_regression:
        try:
            score = float(raw)
        except ValueError:
            raise SpanftError(f"{location}: score {raw!r} is not a number") from None
        check_score(task, score, location)
        return score
    if raw not in task.raw_labels:
        raise SpanftError(f"{location}: label {raw!r} is not one of {list(task.raw_labels)}")
    return task.raw_labels.index(raw)


def check_score(task: TaskSpec, score: float, location: str) -> None:
    low, high = task.label_range or (-math.inf, math.inf)
    if not (low <= score <= high):
        raise SpanftError(f"{location}: score {score} is outside [{low}, {high}]")


def require_prepared(path: Path) -> None:
    if not path.is_file():
        raise SpanftError(f"{path}: prepared split not found (run `spanft prepare-task` / `dvc repro`)")


@contextlib.contextmanager
def _parquet_errors(path: Path) -> Iterator[None]:
    """A damaged parquet file is one line naming it (pyarrow raises several classes)."""
    try:
        yield
    except (pa.ArrowException, OSError) as exc:
        raise SpanftError(f"{path}: cannot read parquet ({exc})") from None


def read_table(path: Path) -> pa.Table:
    with _parquet_errors(path):
        return pq.read_table(path)


def split_schema(path: Path) -> tuple[list[str], int]:
    """A prepared split's column names and row count, from the file's footer (its rows are not read)."""
    require_prepared(path)
    with _parquet_errors(path):
        metadata = pq.read_metadata(path)
        return metadata.schema.to_arrow_schema().names, metadata.num_rows


def read_prepared(path: str | Path):
    """One prepared (or segmented) split as a pandas DataFrame; a one-line error when the file is missing or damaged."""
    path = Path(path)
    require_prepared(path)
    return read_table(path).to_pandas()
