"""Task data from the Hugging Face hub (``datasets``), at the registry's revision or a given one: hub columns and
class names mapped onto the registry's, labels checked to be in range. A test split the hub repository lacks is
skipped with a warning; any other failure (network, missing repository or config) is one error saying how to use
the official local files instead.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Iterator

from spanft.data.columns import SplitColumns, check_score, unlabeled_value
from spanft.data.hub import settle_offline_mode
from spanft.data.reader_rules import WORDS, EmptyCount, report_boundaries
from spanft.data.registry import SplitSpec, TaskSpec
from spanft.errors import SpanftError

if TYPE_CHECKING:
    import datasets

log = logging.getLogger("spanft")


def iter_hub(task: TaskSpec, revision: str | None = None) -> Iterator[tuple[str, SplitColumns]]:
    """``(split, examples)`` from the Hub (needs network; the error says how to use local files instead).

    ``revision`` (a branch, tag or commit) overrides the registry's; a test split the hub lacks is skipped.
    """
    for name in task.all_splits:
        ds = load_hub_split(task, task.splits[name], revision)
        if ds is not None:
            yield name, _read_hub_split(task, task.splits[name], ds)


def hub_revision(task: TaskSpec, revision: str | None = None) -> str | None:
    """The revision a hub read of ``task`` asks for: the given one, else the registry's (None: main)."""
    return revision or task.hub_revision


def load_hub_split(task: TaskSpec, split: SplitSpec, revision: str | None = None) -> datasets.Dataset | None:
    """The hub split as a ``datasets.Dataset``; None for an optional split the repository does not have."""
    settle_offline_mode()
    # Imported here, after settle_offline_mode: datasets reads the offline variables when first imported, and it
    # takes seconds to import, which only the hub source should pay.
    import datasets

    config = split.hub_config or task.hub_config
    revision = hub_revision(task, revision)
    at = f" at revision {revision}" if revision else ""
    try:
        return datasets.load_dataset(task.hub_id, config, split=split.hub_split, revision=revision)
    except Exception as exc:  # network, missing repo, auth, schema: sorted below
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:60]  # the line stays readable (errors.MAX_LINE)
        if _is_schema_error(exc):
            if split.optional and "Unknown split" in str(exc):
                log.warning("%s: the hub has no %s split (%s); it is skipped: no test predictions",
                            task.hub_id, split.hub_split, reason)
                return None
            raise SpanftError(
                f"source hf: {task.hub_id}{at} has no config {config!r} / split {split.hub_split!r} "
                f"({type(exc).__name__}: {reason}); the hub repository's layout differs from the task registry's"
            ) from None
        raise SpanftError(
            f"source hf: cannot load {task.hub_id} (config {config}, split {split.hub_split}){at} from the hub "
            f"({type(exc).__name__}: {reason}); without network use the official files: --source local "
            f"--data-dir DIR (params data.source, data.dir)"
        ) from None


def _is_schema_error(exc: Exception) -> bool:
    """The repository answered but has no such config or split (``datasets`` raises ValueError for both)."""
    text = str(exc)
    return isinstance(exc, ValueError) and any(
        marker in text for marker in ("BuilderConfig", "Unknown split", "Bad split", "config name is missing")
    )


def hub_label_names(ds: datasets.Dataset, column: str) -> list[str] | None:
    """The class names of ``column``'s ``ClassLabel`` feature (or of its sequence's); None when it has none."""
    feature = ds.features.get(column)
    feature = getattr(feature, "feature", feature)  # a sequence of ClassLabel (NER tags)
    return list(getattr(feature, "names", None) or []) or None


def _read_hub_split(task: TaskSpec, split: SplitSpec, ds: datasets.Dataset) -> SplitColumns:
    origin = f"{task.hub_id}/{split.hub_config or task.hub_config or ''} {split.hub_split}"
    missing = [c for c in (*task.hub_text_columns, task.hub_label_column) if c not in ds.column_names]
    if missing:
        raise SpanftError(f"{origin}: columns {missing} not found (has {ds.column_names})")
    id_map = _hub_label_map(task, hub_label_names(ds, task.hub_label_column), origin)
    texts = [list(ds[c]) for c in task.hub_text_columns]
    labels = list(ds[task.hub_label_column])
    ids = list(ds["idx"]) if "idx" in ds.column_names else range(len(ds))
    out = SplitColumns(task, split.name)
    dropped = boundaries = 0
    empty = EmptyCount(split, origin)
    for row, idx in enumerate(ids):
        location = f"{origin} row {row}"
        label = labels[row]
        if task.hub_dropped_label is not None and label == task.hub_dropped_label:
            dropped += 1
            continue
        if task.is_tagging and not texts[0][row]:
            boundaries += 1
            continue
        if task.is_tagging:
            out.add(idx, [list(texts[0][row])], _hub_tags(task, label, id_map, location, split.labeled), location)
        else:
            words = [WORDS.words(column[row] or "") for column in texts]
            if empty.keeps(words, f"{location} (idx {idx})"):
                out.add(idx, words, _hub_label(task, label, id_map, location, split.labeled), location)
    if dropped:
        log.info("%s: dropped %d example(s) with label %d (no gold label)", origin, dropped, task.hub_dropped_label)
    report_boundaries(origin, boundaries)
    empty.report()
    return out


def _hub_label_map(task: TaskSpec, hub_names: list[str] | None, origin: str) -> list[int] | None:
    """Hub class id -> registry id, matched by name; None when the hub gives no names (ids used as they are)."""
    if hub_names is None or task.label_names is None:
        return None
    unknown = [n for n in hub_names if n not in task.label_names]
    if unknown:
        raise SpanftError(f"{origin}: hub labels {unknown} are not in the registry's {task.label_names}")
    return [task.label_names.index(n) for n in hub_names]


def _hub_label(task: TaskSpec, label, id_map, location: str, labeled: bool):
    if not labeled or label is None or (not task.is_regression and label == -1):
        return unlabeled_value(task)
    if task.is_regression:
        score = float(label)
        if math.isnan(score):
            return score
        check_score(task, score, location)
        return score
    return _map_id(task, int(label), id_map, location)


def _hub_tags(task: TaskSpec, tags, id_map, location: str, labeled: bool) -> list[int]:
    return [_map_id(task, int(t), id_map, location) for t in tags] if labeled else []


def _map_id(task: TaskSpec, label: int, id_map, location: str) -> int:
    size = len(id_map) if id_map is not None else task.num_labels
    if not 0 <= label < size:
        raise SpanftError(f"{location}: label {label} is outside 0..{size - 1}")
    return id_map[label] if id_map is not None else label
