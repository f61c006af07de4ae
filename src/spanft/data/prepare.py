"""Task data from three sources (hub, local official files, synthetic), normalised to one parquet schema.

Prepared layout (the prepare-task stage, ``spanft prepare-task``): ``<out>/<split>.parquet`` per split with columns

- ``idx`` int64: GLUE test files' ``index`` (the hub's ``idx``), else the row number in the source split
  (SNLI: counting the rows without a gold label; CoNLL: the sentence number, ``-DOCSTART-`` not counted);
- ``words_a`` (and ``words_b`` for pairs) list<string>: words in their original case, split with
  ``WordTokenizer(lowercase=False)``; CoNLL keeps its own tokens;
- ``label`` int64 (registry order, -1 unlabeled) or float64 for STS-B (NaN unlabeled); tagging tasks have
  ``tags`` list<int64> (IOB2 ids; empty list unlabeled) instead.

A missing local test file skips that split (a warning: no submission file for it); a missing train or
validation file is an error. Rows dropped by rule (SNLI's "-" labels, blank lines) are counted in the log.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import pyarrow.parquet as pq

from spanft.data.columns import SplitColumns, SyntheticSizes
from spanft.data.readers import iter_hub, iter_local
from spanft.data.registry import TaskSpec, get_task
from spanft.errors import SpanftError
from spanft.fileio import atomic_path

log = logging.getLogger("spanft")


SOURCES = ("synthetic", "hf", "local")


def iter_task(
    task: TaskSpec | str,
    source: str = "synthetic",
    data_dir: str | Path | None = None,
    sizes: SyntheticSizes | None = None,
) -> Iterator[tuple[str, SplitColumns]]:
    """``(split, examples)`` of a task from ``source`` (``synthetic``, ``hf`` or ``local``), split by split."""
    task = get_task(task) if isinstance(task, str) else task
    if source == "local":
        if data_dir is None:
            raise SpanftError("source local needs --data-dir (params data.dir): the directory of the official files")
        return iter_local(task, data_dir)
    if source == "hf":
        return iter_hub(task)
    if source == "synthetic":
        from spanft.data.synthetic_tasks import iter_synthetic

        return iter_synthetic(task, sizes or SyntheticSizes())
    raise SpanftError(f"unknown source {source!r}; valid sources: {', '.join(SOURCES)}")


def load_task(
    task: TaskSpec | str,
    source: str = "synthetic",
    data_dir: str | Path | None = None,
    sizes: SyntheticSizes | None = None,
) -> dict[str, SplitColumns]:
    """Every split of a task from ``source``, in memory (see :func:`iter_task`)."""
    return dict(iter_task(task, source, data_dir, sizes))


def write_prepared(splits: Mapping[str, SplitColumns] | Iterable[tuple[str, SplitColumns]], out_dir: str | Path, *,
                   inputs: Iterable[str | Path | None] = ()) -> None:
    """Write ``<out_dir>/<split>.parquet`` for every split; the directory appears whole or not at all.

    ``inputs`` (the local data directory) may not hold, be or lie inside the output.

    Given an iterator (:func:`iter_task`), only one split is held in memory at a time.
    """
    items = splits.items() if isinstance(splits, Mapping) else splits
    with atomic_path(out_dir, inputs=inputs, made_by="prepare-task") as tmp:
        tmp.mkdir(parents=True)
        for name, columns in items:
            pq.write_table(columns.to_table(), tmp / f"{name}.parquet")
            log.info("%s: %d examples", Path(out_dir) / f"{name}.parquet", len(columns))


def read_prepared(path: str | Path):
    """One prepared (or segmented) split as a pandas DataFrame; a one-line error when the file is missing."""
    path = Path(path)
    if not path.is_file():
        raise SpanftError(f"{path}: prepared split not found (run `spanft prepare-task` / `dvc repro`)")
    return pq.read_table(path).to_pandas()


def describe(task: TaskSpec, splits: Mapping[str, SplitColumns] | Iterable[tuple[str, SplitColumns]]) -> dict:
    """The JSON summary of ``spanft describe``: examples per split, label names (null for regression)."""
    items = splits.items() if isinstance(splits, Mapping) else splits
    return {"task": task.name, "splits": {name: len(columns) for name, columns in items}, "labels": task.label_names}


def synthetic_sizes(train_size: int, eval_size: int, test_size: int, seed: int = 0,
                    language_seed: int = 0) -> SyntheticSizes:
    """The synthetic stand-ins' sizes (params ``data.synthetic``), each checked to be positive."""
    for name, value in (("train_size", train_size), ("eval_size", eval_size), ("test_size", test_size)):
        if value <= 0:
            raise SpanftError(f"{name} must be positive, got {value}")
    return SyntheticSizes(train_size, eval_size, test_size, seed, language_seed)


def prepare_task(task: str, out_dir: str | Path, source: str = "synthetic", data_dir: str | Path | None = None,
                 sizes: SyntheticSizes | None = None) -> None:
    """The prepare-task stage: a task from ``source`` normalised to ``<out_dir>/<split>.parquet``."""
    spec = get_task(task)
    write_prepared(iter_task(spec, source, data_dir, sizes), out_dir, inputs=[data_dir] if data_dir else [])
