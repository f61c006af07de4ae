"""Task data from official local files (GLUE TSV, SNLI JSONL, CoNLL-2003 columns) and from the hub.

A missing test split (local file or hub split) is skipped with a warning: no test predictions, no submission
file for it; a missing train or dev split is an error naming the file. Rows dropped by rule (SNLI's "-"
labels, blank lines, training examples with an empty sentence) are counted in the log; an empty sentence in a
dev or test split is kept and predicted (the GLUE server wants every test index); CoNLL-2003 rows without
tokens are boundaries, skipped everywhere.
Files are checked to be what they claim before their rows are read: a GLUE file's header names the columns
read from it (a header-less file or another task's file stops at line 1), every row has the header's number
of fields, SNLI records carry non-null strings, and no split is empty.

CoNLL-2003 also carries a Penn Treebank POS tag per token (the second column of the files, ``pos_tags`` on the
hub): :func:`conll_pos_sentences` reads them for the chunker's tagger.
"""

from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path
from typing import Iterator, Sequence

from spanft.data.columns import (
    SplitColumns,
    check_score,
    parse_raw_label,
    unlabeled_value,
)
from spanft.data.registry import SplitSpec, TaskSpec
from spanft.errors import SpanftError, where
from spanft.fileio import read_text_lines
from spanft.text.chunker import penn_tag
from spanft.text.words import WordTokenizer

log = logging.getLogger("spanft")


_WORDS = WordTokenizer(lowercase=False)


def _find_local(split: SplitSpec, folder: Path) -> Path | None:
    for name in split.local_names:
        if (folder / name).is_file():
            return folder / name
    return None


# The official header of each GLUE file read (the classic download script's layout). MNLI train has one
# annotator label column, dev five, before gold_label: columns are compared by position, from the end for
# negative positions, so the train header stands for both.
_MNLI_HEAD = ("index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
              "sentence1_parse", "sentence2_parse", "sentence1", "sentence2")
_GLUE_HEADERS: dict[tuple[str, bool], tuple[str, ...] | None] = {  # (task, labeled) -> header
    ("cola", True): None,
    ("cola", False): ("index", "sentence"),
    ("sst2", True): ("sentence", "label"),
    ("sst2", False): ("index", "sentence"),
    ("mrpc", True): ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"),
    ("mrpc", False): ("index", "#1 ID", "#2 ID", "#1 String", "#2 String"),
    ("stsb", True): ("index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
                     "sentence2", "score"),
    ("stsb", False): ("index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
                      "sentence2"),
    ("qqp", True): ("id", "qid1", "qid2", "question1", "question2", "is_duplicate"),
    ("qqp", False): ("id", "question1", "question2"),
    ("mnli", True): (*_MNLI_HEAD, "label1", "gold_label"),
    ("mnli", False): _MNLI_HEAD,
    ("qnli", True): ("index", "question", "sentence", "label"),
    ("qnli", False): ("index", "question", "sentence"),
    ("rte", True): ("index", "sentence1", "sentence2", "label"),
    ("rte", False): ("index", "sentence1", "sentence2"),
    ("wnli", True): ("index", "sentence1", "sentence2", "label"),
    ("wnli", False): ("index", "sentence1", "sentence2"),
}
_DIAGNOSTIC_HEADER = ("index", "sentence1", "sentence2")  # MNLI's "ax" split


def official_header(task: TaskSpec, split: SplitSpec) -> tuple[str, ...] | None:
    """The header line of a GLUE split's official file, as field names (None: the file has no header)."""
    if split.hub_config == "ax":
        return _DIAGNOSTIC_HEADER
    return _GLUE_HEADERS[(task.name, split.labeled)]


def _read_positions(cols) -> list[int]:
    return [*cols.text_cols, *(c for c in (cols.label_col, cols.idx_col) if c is not None)]


def _check_glue_header(task: TaskSpec, split: SplitSpec, fields: list[str], location: str) -> None:
    """The header must name, at every position read, the column the official file has there."""
    official = official_header(task, split)
    positions = _read_positions(split.local_columns)
    wrong = any(not -len(fields) <= p < len(fields) or fields[p] != official[p] for p in positions)
    if wrong:
        raise SpanftError(
            f"{location}: expected the official {task.name} {split.name} header "
            f"{chr(9).join(official)!r}, found {chr(9).join(fields)[:120]!r} (a file without its header, or "
            f"another task's file?)"
        )


def _read_glue_tsv(task: TaskSpec, split: SplitSpec, path: Path, out: SplitColumns) -> None:
    """A GLUE TSV as the classic download script unpacks it: split on tabs, no quoting, BOM stripped."""
    cols = split.local_columns
    expected = cols.fields
    row = 0
    blank = 0
    empty = _EmptyCount(split, str(path))
    for number, line in read_text_lines(path, what=f"{task.name} {split.name} file"):
        if number == 1 and cols.header:
            _check_glue_header(task, split, line.split("\t"), where(path, number))
            expected = expected or len(line.split("\t"))
            continue
        if not line.strip():
            blank += 1
            continue
        location = where(path, number)
        fields = line.split("\t")
        if len(fields) != expected:
            raise SpanftError(f"{location}: expected {expected} tab-separated fields, found {len(fields)}")
        idx = _parse_index(fields[cols.idx_col], location) if cols.idx_col is not None else row
        label = parse_raw_label(task, fields[cols.label_col], location) if split.labeled else unlabeled_value(task)
        words = [_WORDS.words(fields[c]) for c in cols.text_cols]
        if empty.keeps(words, location):
            out.add(idx, words, label, location)
        row += 1
    if blank:
        log.info("%s: skipped %d blank line(s)", path, blank)
    empty.report()


class _EmptyCount:
    """Examples with an empty sentence (a blank question or hypothesis): dropped from training and counted;
    kept, and predicted, in every dev and test split (a score or a leaderboard file covers every row)."""

    def __init__(self, split: SplitSpec, origin: str) -> None:
        self.split, self.origin = split, origin
        self.training = split.name == "train"
        self.seen: list[str] = []

    def keeps(self, words: Sequence[Sequence[str]], location: str) -> bool:
        if all(words):
            return True
        self.seen.append(location)
        return not self.training

    def report(self) -> None:
        if not self.seen:
            return
        where = "; ".join(self.seen[:5]) + (" ..." if len(self.seen) > 5 else "")
        if self.training:
            log.warning("%s: dropped %d training example(s) with an empty sentence: %s", self.origin,
                        len(self.seen), where)
        else:
            log.info("%s: kept %d example(s) with an empty sentence (predicted like any other): %s", self.origin,
                     len(self.seen), where)


def _parse_index(raw: str, location: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise SpanftError(f"{location}: index {raw!r} is not an integer") from None


_SNLI_FIELDS = ("sentence1", "sentence2", "gold_label")


def _snli_record(line: str, location: str) -> list[str]:
    """``[sentence1, sentence2, gold_label]`` of one SNLI line: a JSON object whose three fields are strings."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SpanftError(f"{location}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise SpanftError(f"{location}: not valid JSON (nested too deeply)") from None
    if not isinstance(record, dict):
        raise SpanftError(f"{location}: expected a JSON object with {', '.join(_SNLI_FIELDS)}, "
                          f"found {type(record).__name__}")
    values = []
    for name in _SNLI_FIELDS:
        if name not in record:
            raise SpanftError(f"{location}: missing field {name!r} (an SNLI line has {', '.join(_SNLI_FIELDS)})")
        value = record[name]
        if not isinstance(value, str):
            found = "null" if value is None else type(value).__name__
            raise SpanftError(f"{location}: field {name!r} must be a string, found {found}")
        values.append(value)
    return values


def _read_snli_jsonl(task: TaskSpec, split: SplitSpec, path: Path, out: SplitColumns) -> None:
    """SNLI's jsonl: sentence1, sentence2, gold_label; rows whose gold_label is "-" are dropped and counted."""
    dropped = 0
    row = 0
    empty = _EmptyCount(split, str(path))
    for number, line in read_text_lines(path, what=f"{task.name} {split.name} file"):
        if not line.strip():
            continue
        location = where(path, number)
        *texts, raw = _snli_record(line, location)
        words = [_WORDS.words(t) for t in texts]
        if raw == task.local_dropped_label:
            dropped += 1
        elif empty.keeps(words, location):
            out.add(row, words, parse_raw_label(task, raw, location), location)
        row += 1
    if dropped:
        log.info("%s: dropped %d example(s) without a gold label (%r)", path, dropped, task.local_dropped_label)
    empty.report()


_TAG = re.compile(r"^(O|[BI]-(PER|LOC|ORG|MISC))$")


def _read_conll(task: TaskSpec, split: SplitSpec, path: Path, out: SplitColumns) -> None:
    """CoNLL-2003 columns (token first, NER tag last); IOB1 files are detected and rewritten as IOB2."""
    sentences = list(_conll_sentences(path))
    converted = 0
    for number, (line, tokens, tags, _) in enumerate(sentences):
        iob2 = to_iob2(tags)
        converted += iob2 != tags
        out.add(number, [tokens], [task.label_names.index(t) for t in iob2], where(path, line))
    if converted:
        log.info("%s: IOB1 tags detected; %d of %d sentences rewritten as IOB2", path, converted, len(sentences))


def _conll_sentences(path: Path) -> Iterator[tuple[int, list[str], list[str], list[str] | None]]:
    """Yield (first line number, tokens, NER tags, POS tags) per sentence, skipping -DOCSTART- lines.

    A blank line or ``-DOCSTART-`` ends a sentence; runs of them make no empty sentences (the hub readers skip
    a row without tokens the same way: :func:`_report_boundaries`).

    POS tags are the second column when the file has three or more (token, POS, [chunk,] NER), else None.
    """
    expected = None
    tokens, tags, pos, start = [], [], [], 0
    for number, line in read_text_lines(path, what="CoNLL-2003 file"):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if tokens:
                yield start, tokens, tags, (pos if expected >= 3 else None)
            tokens, tags, pos = [], [], []
            continue
        expected = expected or len(fields)
        if len(fields) != expected or expected < 2:
            raise SpanftError(f"{where(path, number)}: expected {expected} columns (token ... tag), found {len(fields)}")
        if not _TAG.match(fields[-1]):
            raise SpanftError(f"{where(path, number)}: NER tag {fields[-1]!r} is not O or [BI]-PER/LOC/ORG/MISC")
        if not tokens:
            start = number
        tokens.append(fields[0])
        tags.append(fields[-1])
        pos.append(fields[1])
    if tokens:
        yield start, tokens, tags, (pos if expected >= 3 else None)


def to_iob2(tags: Sequence[str]) -> list[str]:
    """Rewrite IOB1 tags as IOB2: an ``I-X`` that starts an entity becomes ``B-X``. IOB2 input is unchanged."""
    result = []
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            tag = "B-" + tag[2:]
        result.append(tag)
        previous = tag
    return result


_LOCAL_READERS = {"glue_tsv": _read_glue_tsv, "snli_jsonl": _read_snli_jsonl, "conll": _read_conll}


def local_files(task: TaskSpec, folder: str | Path) -> dict[str, Path]:
    """The official file of every split inside the task's ``folder``; a missing train/dev file is an error.

    Only the folder is read (params ``tasks.<task>`` under ``data.dir``: the prepare stage's data dependency).
    A missing test file skips that split with a warning (no test predictions, no submission file for it).
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise SpanftError(f"{folder}: expected the {task.name} folder (params data.dir / tasks.{task.name}), found a file")
    if not folder.is_dir():
        raise SpanftError(f"{folder}: {task.name} folder not found (params data.dir / tasks.{task.name}; --data-dir / --task-dir)")
    paths = {}
    for name in task.all_splits:
        split = task.splits[name]
        path = _find_local(split, folder)
        if path is None:
            _missing_file(task, split, folder)
            continue
        paths[name] = path
    return paths


def _missing_file(task: TaskSpec, split: SplitSpec, folder: Path) -> None:
    """A missing test file: a warning (the split is skipped); a missing train or dev file: the error."""
    looked = " or ".join(str(folder / name) for name in split.local_names)
    if not split.optional:
        raise SpanftError(f"{looked}: {task.name} {split.name} file not found")
    hint = " (the download's diagnostic/diagnostic.tsv, copied into the MNLI folder)" if split.hub_config == "ax" else ""
    log.warning("%s %s: no file %s%s; the split is skipped: no test predictions%s", task.name, split.name, looked,
                hint, f", no {split.submission_stem}.tsv submission file" if split.submission_stem else "")


def iter_local(
    task: TaskSpec, folder: str | Path, paths: dict[str, Path] | None = None
) -> Iterator[tuple[str, SplitColumns]]:
    """``(split, examples)`` from the official files inside the task's ``folder``, one split at a time.

    Every file is located before any is read (:func:`local_files`, unless ``paths`` gives them), so a missing
    train/dev file fails at once.
    """
    paths = local_files(task, folder) if paths is None else paths
    for name, path in paths.items():
        columns = SplitColumns(task, name)
        _LOCAL_READERS[task.local_format](task, task.splits[name], path, columns)
        require_examples(columns, path)
        yield name, columns


def require_examples(columns: SplitColumns, origin: object) -> None:
    """An empty split (an empty file, or only rows dropped by rule) is a mistake, not data."""
    if len(columns) == 0:
        raise SpanftError(f"{origin}: no {columns.task.name} {columns.split} examples (an empty split)")


def read_local(task: TaskSpec, folder: str | Path) -> dict[str, SplitColumns]:
    """Every split of ``task`` from the official files inside its ``folder`` (missing test splits skipped)."""
    return dict(iter_local(task, folder))


def iter_hub(task: TaskSpec, revision: str | None = None) -> Iterator[tuple[str, SplitColumns]]:
    """``(split, examples)`` from the Hub (needs network; the error says how to use local files instead).

    ``revision`` (a branch, tag or commit) overrides the registry's; a test split the hub lacks is skipped.
    """
    for name in task.all_splits:
        ds = _load_hub_split(task, task.splits[name], revision)
        if ds is not None:
            yield name, _read_hub_split(task, task.splits[name], ds)


def hub_revision(task: TaskSpec, revision: str | None = None) -> str | None:
    """The revision a hub read of ``task`` asks for: the given one, else the registry's (None: main)."""
    return revision or task.hub_revision


def _load_hub_split(task: TaskSpec, split: SplitSpec, revision: str | None = None):
    """The hub split as a ``datasets.Dataset``; None for an optional split the repository does not have."""
    from spanft.data.hub import settle_offline_mode

    settle_offline_mode()
    import datasets

    config = split.hub_config or task.hub_config
    revision = hub_revision(task, revision)
    at = f" at revision {revision}" if revision else ""
    try:
        return datasets.load_dataset(task.hub_id, config, split=split.hub_split, revision=revision)
    except Exception as exc:  # network, missing repo, auth, schema: sorted below
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
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
            f"source hf: cannot load {task.hub_id} (config {config}, split {split.hub_split}){at} from the Hugging "
            f"Face Hub ({type(exc).__name__}: {reason}); without network use the official files: --source local "
            f"--data-dir DIR (params data.source: local, data.dir), layouts in the README"
        ) from None


def _is_schema_error(exc: Exception) -> bool:
    """The repository answered but has no such config or split (``datasets`` raises ValueError for both)."""
    text = str(exc)
    return isinstance(exc, ValueError) and any(
        marker in text for marker in ("BuilderConfig", "Unknown split", "Bad split", "config name is missing")
    )


def _hub_label_names(ds, column: str) -> list[str] | None:
    feature = ds.features.get(column)
    feature = getattr(feature, "feature", feature)  # a sequence of ClassLabel (NER tags)
    return list(getattr(feature, "names", None) or []) or None


def _read_hub_split(task: TaskSpec, split: SplitSpec, ds) -> SplitColumns:
    origin = f"{task.hub_id}/{split.hub_config or task.hub_config or ''} {split.hub_split}"
    missing = [c for c in (*task.hub_text_columns, task.hub_label_column) if c not in ds.column_names]
    if missing:
        raise SpanftError(f"{origin}: columns {missing} not found (has {ds.column_names})")
    id_map = _hub_label_map(task, _hub_label_names(ds, task.hub_label_column), origin)
    texts = [list(ds[c]) for c in task.hub_text_columns]
    labels = list(ds[task.hub_label_column])
    ids = list(ds["idx"]) if "idx" in ds.column_names else range(len(ds))
    out = SplitColumns(task, split.name)
    dropped = boundaries = 0
    empty = _EmptyCount(split, origin)
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
            words = [_WORDS.words(column[row] or "") for column in texts]
            if empty.keeps(words, f"{location} (idx {idx})"):
                out.add(idx, words, _hub_label(task, label, id_map, location, split.labeled), location)
    if dropped:
        log.info("%s: dropped %d example(s) with label %d (no gold label)", origin, dropped, task.hub_dropped_label)
    _report_boundaries(origin, boundaries)
    empty.report()
    return out


def _report_boundaries(origin: str, count: int) -> None:
    """CoNLL-2003's one rule for a sentence without tokens, in every reader (NER and POS, files and hub): it
    is not a sentence but a boundary (the files' -DOCSTART- lines and runs of blank lines), skipped and counted;
    nothing is lost, as it has no token to label or predict."""
    if count:
        log.info("%s: skipped %d empty sentence(s): boundaries, not sentences (no tokens to tag)", origin, count)


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


# --------------------------------------------------------------------------------------------------
# CoNLL-2003 part-of-speech tags (the chunker's tagger trains on them)

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
    for line, tokens, _, pos in _conll_sentences(path):
        if pos is None:
            raise SpanftError(f"{where(path, line)}: no POS column (expected token, POS, chunk, NER columns)")
        sentences.append([(word, penn_tag(tag)) for word, tag in zip(tokens, pos)])
    return sentences


def _hub_pos(task: TaskSpec, split: str, revision: str | None) -> list[list[tuple[str, str]]] | None:
    ds = _load_hub_split(task, task.splits[split], revision)
    if ds is None:
        return None
    origin = f"{task.hub_id} {task.splits[split].hub_split}"
    if POS_COLUMN not in ds.column_names or "tokens" not in ds.column_names:
        raise SpanftError(f"{origin}: columns tokens and {POS_COLUMN} not found (has {ds.column_names})")
    names = _hub_label_names(ds, POS_COLUMN)
    if names is None:
        raise SpanftError(f"{origin}: {POS_COLUMN} has no tag names (expected a sequence of ClassLabel)")
    tags = [penn_tag(name) for name in names]
    sentences = []
    for row, (tokens, ids) in enumerate(zip(ds["tokens"], ds[POS_COLUMN])):
        if len(tokens) != len(ids) or any(not 0 <= i < len(tags) for i in ids):
            raise SpanftError(f"{origin} row {row}: {len(tokens)} tokens, POS ids {list(ids)} (0..{len(tags) - 1})")
        if tokens:
            sentences.append([(word, tags[i]) for word, i in zip(tokens, ids)])
    _report_boundaries(origin, len(ds) - len(sentences))
    return sentences
