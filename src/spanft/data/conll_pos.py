"""CoNLL-2003's Penn Treebank POS tags per sentence (the second column of the official files, ``pos_tags`` on the
hub), which the chunker's tagger trains on.
"""

from __future__ import annotations

from pathlib import Path

from spanft.data.hub_readers import hub_label_names, load_hub_split
from spanft.data.local_readers import conll_sentences, local_files
from spanft.data.reader_rules import report_boundaries
from spanft.data.registry import TaskSpec
from spanft.errors import SpanftError, where
from spanft.text.chunker import penn_tag

POS_COLUMN = "pos_tags"


def conll_pos_sentences(
    task: TaskSpec, split: str, source: str, folder: str | Path | None = None, revision: str | None = None
) -> list[list[tuple[str, str]]] | None:
    """``[(word, Penn tag), ...]`` per sentence of a CoNLL-2003 split; None when the split is absent.

    ``source`` is ``local`` (the second column of the files inside CoNLL-2003's ``folder``) or ``hf`` (``pos_tags`` ids
    mapped through the feature's own names). Tags come out in Penn's spelling (brackets ``-LRB-``/``-RRB-``).
    """
    if source == "local":
        return _local_pos(task, split, Path(folder) if folder is not None else None)
    if source == "hf":
        return _hub_pos(task, split, revision)
    raise SpanftError(f"CoNLL-2003 POS tags come from source local or hf, not {source!r} (synthetic data has none)")


def _local_pos(task: TaskSpec, split: str, folder: Path | None) -> list[list[tuple[str, str]]] | None:
    if folder is None:
        raise SpanftError("source local needs CoNLL-2003's folder (params data.dir / chunker.conll_dir)")
    path = local_files(task, folder).get(split)
    if path is None:
        return None
    sentences = []
    for line, tokens, _, pos in conll_sentences(path):
        if pos is None:
            raise SpanftError(f"{where(path, line)}: no POS column (expected token, POS, chunk, NER columns)")
        sentences.append([(word, penn_tag(tag)) for word, tag in zip(tokens, pos)])
    return sentences


def _hub_pos(task: TaskSpec, split: str, revision: str | None) -> list[list[tuple[str, str]]] | None:
    ds = load_hub_split(task, task.splits[split], revision)
    if ds is None:
        return None
    origin = f"{task.hub_id} {task.splits[split].hub_split}"
    if POS_COLUMN not in ds.column_names or "tokens" not in ds.column_names:
        raise SpanftError(f"{origin}: columns tokens and {POS_COLUMN} not found (has {ds.column_names})")
    names = hub_label_names(ds, POS_COLUMN)
    if names is None:
        raise SpanftError(f"{origin}: {POS_COLUMN} has no tag names (expected a sequence of ClassLabel)")
    tags = [penn_tag(name) for name in names]
    sentences = []
    for row, (tokens, ids) in enumerate(zip(ds["tokens"], ds[POS_COLUMN])):
        if len(tokens) != len(ids) or any(not 0 <= i < len(tags) for i in ids):
            raise SpanftError(f"{origin} row {row}: {len(tokens)} tokens, POS ids {list(ids)} (0..{len(tags) - 1})")
        if tokens:
            sentences.append([(word, tags[i]) for word, i in zip(tokens, ids)])
    report_boundaries(origin, len(ds) - len(sentences))
    return sentences
