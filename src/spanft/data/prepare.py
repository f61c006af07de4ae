"""Task data from three sources (hub, local official files, synthetic), normalised to one parquet schema.

Prepared layout (the prepare-task stage, ``spanft prepare-task``): ``<out>/<split>.parquet`` per split with columns

- ``idx`` int64: GLUE test files' ``index`` (the hub's ``idx``), else the row number in the source split
  (SNLI: counting the rows without a gold label; CoNLL: the sentence number, ``-DOCSTART-`` not counted);
- ``words_a`` (and ``words_b`` for pairs) list<string>: words in their original case, split with
  ``WordTokenizer(lowercase=False)``; CoNLL keeps its own tokens;
- ``label`` int64 (registry order, -1 unlabeled) or float64 for STS-B (NaN unlabeled); tagging tasks have
  ``tags`` list<int64> (IOB2 ids; empty list unlabeled) instead.

A missing test split skips that split (a warning: no test predictions, no submission file for it); a
missing train or dev file is an error. Rows dropped by rule (SNLI's "-" labels, blank lines, training examples
with an empty sentence) are counted in the log; dev and test keep every row (a leaderboard file needs them all). ``<out>/provenance.json`` records where the data came from (hub repository and
resolved commit, or the local files' digest) and which splits were present (:mod:`spanft.data.provenance`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import pyarrow.parquet as pq

from spanft.data.columns import SplitColumns, SyntheticSizes
from spanft.data.hub_readers import hub_revision, iter_hub
from spanft.data.local_readers import iter_local, local_files
from spanft.data.provenance import (
    PROVENANCE_FILE,
    hub_record,
    local_record,
    paths_digest,
    read_provenance,
)
from spanft.data.registry import TaskSpec, get_task
from spanft.data.synthetic.tasks import iter_synthetic
from spanft.errors import SpanftError
from spanft.fileio import atomic_path

log = logging.getLogger("spanft")


SOURCES = ("synthetic", "hf", "local")


def iter_task(
    task: TaskSpec | str,
    source: str = "synthetic",
    folder: str | Path | None = None,
    sizes: SyntheticSizes | None = None,
    revision: str | None = None,
) -> Iterator[tuple[str, SplitColumns]]:
    """``(split, examples)`` of a task from ``source`` (``synthetic``, ``hf`` or ``local``), split by split.

    ``folder``: local only, the task's folder of official files (``data.dir`` joined with ``tasks.<task>``).
    ``revision``: hub only, a branch, tag or commit of the task's dataset repository (None: the registry's).
    """
    task = get_task(task) if isinstance(task, str) else task
    if source == "local":
        return iter_local(task, _require_folder(task, folder))
    if source == "hf":
        return iter_hub(task, revision)
    if source == "synthetic":
        return iter_synthetic(task, sizes or SyntheticSizes())
    raise SpanftError(f"unknown source {source!r}; valid sources: {', '.join(SOURCES)}")


def _require_folder(task: TaskSpec, folder: str | Path | None) -> Path:
    if folder is None or not str(folder):
        raise SpanftError(f"source local needs {task.name}'s folder of official files (--data-dir / --task-dir; "
                          f"params data.dir and tasks.{task.name})")
    return Path(folder)


def load_task(
    task: TaskSpec | str,
    source: str = "synthetic",
    folder: str | Path | None = None,
    sizes: SyntheticSizes | None = None,
) -> dict[str, SplitColumns]:
    """Every split of a task from ``source``, in memory (see :func:`iter_task`)."""
    return dict(iter_task(task, source, folder, sizes))


def write_prepared(
    splits: Mapping[str, SplitColumns] | Iterable[tuple[str, SplitColumns]],
    out_dir: str | Path,
    provenance: dict | None = None,
    task: TaskSpec | None = None,
    *,
    inputs: Iterable[str | Path | None] = (),
) -> None:
    """Write ``<out_dir>/<split>.parquet`` for every split; the directory appears whole or not at all.

    ``inputs`` (the task's local folder) may not hold, be or lie inside the output.

    Given an iterator (:func:`iter_task`), only one split is held in memory at a time. ``provenance`` (a
    record of :mod:`spanft.data.provenance`) is written to ``provenance.json`` with the splits present and,
    given ``task``, those absent; a record without revision or digest gets the digest of the parquet files.
    """
    items = splits.items() if isinstance(splits, Mapping) else splits
    with atomic_path(out_dir, inputs=inputs, made_by="prepare-task") as tmp:
        tmp.mkdir(parents=True)
        written = []
        for name, columns in items:
            pq.write_table(columns.to_table(), tmp / f"{name}.parquet")
            written.append(name)
            log.info("%s: %d examples", Path(out_dir) / f"{name}.parquet", len(columns))
        if provenance is not None:
            record = dict(provenance, splits=written)
            if task is not None:
                record["absent_splits"] = [name for name in task.all_splits if name not in written]
            if "revision" not in record and "digest" not in record:
                record["digest"] = paths_digest(tmp / f"{name}.parquet" for name in written)
            with open(tmp / PROVENANCE_FILE, "w", encoding="utf-8") as handle:
                json.dump(record, handle, indent=2, sort_keys=True)
                handle.write("\n")


def prepare_task(
    task: TaskSpec | str,
    out_dir: str | Path,
    source: str = "synthetic",
    folder: str | Path | None = None,
    sizes: SyntheticSizes | None = None,
    revision: str | None = None,
) -> dict:
    """The prepare stage: every split of ``task`` to ``<out_dir>/<split>.parquet`` plus ``provenance.json``.

    ``folder``: local only, the task's folder of official files (nothing outside it is read).

    Returns the provenance record (its ``splits`` list what was written).
    """
    task = get_task(task) if isinstance(task, str) else task
    if source == "local":
        given = _require_folder(task, folder)  # named as the user wrote it in messages
        folder = given.resolve()
        paths = local_files(task, folder)
        record = local_record("local", folder, paths_digest(paths.values(), folder),
                              files={name: str(path.relative_to(folder)) for name, path in paths.items()})
        write_prepared(iter_local(task, folder, paths), out_dir, record, task, inputs=[given])
    elif source == "hf":
        writes = list(iter_hub(task, revision))  # read first: the hub cache then knows the commit even offline
        config = task.hub_config
        record = hub_record(task.hub_id, hub_revision(task, revision), "dataset", config=config)
        write_prepared(writes, out_dir, record, task)
    else:
        sizes = sizes or SyntheticSizes()
        record = {"source": source, "id_or_path": f"synthetic {task.name} (language seed {sizes.language_seed}, "
                                                  f"sample seed {sizes.seed})"}
        write_prepared(iter_task(task, source, folder, sizes), out_dir, record, task)
    return read_provenance(out_dir) or {}


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
