"""Task data from the official local files (GLUE TSV, SNLI JSONL, CoNLL-2003 columns), each checked to be what it
claims before its rows are read: a GLUE file's header names the columns read from it (a header-less file or another
task's file stops at line 1), every row has the header's number of fields, SNLI records carry non-null strings,
CoNLL-2003 tags are IOB1 or IOB2 (IOB1 rewritten), and no split is empty. A missing test file skips its split with
a warning (no test predictions, no submission file for it); a missing train or dev file is an error naming it.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Iterator, Sequence

from spanft.data.columns import SplitColumns, parse_raw_label, unlabeled_value
from spanft.data.reader_rules import WORDS, EmptyCount
from spanft.data.registry import SplitSpec, TaskSpec
from spanft.errors import SpanftError, where
from spanft.fileio import read_text_lines

log = logging.getLogger("spanft")


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
    empty = EmptyCount(split, str(path))
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
        words = [WORDS.words(fields[c]) for c in cols.text_cols]
        if empty.keeps(words, location):
            out.add(idx, words, label, location)
        row += 1
    if blank:
        log.info("%s: skipped %d blank line(s)", path, blank)
    empty.report()



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
    empty = EmptyCount(split, str(path))
    for number, line in read_text_lines(path, what=f"{task.name} {split.name} file"):
        if not line.strip():
            continue
        location = where(path, number)
        *texts, raw = _snli_record(line, location)
        words = [WORDS.words(t) for t in texts]
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
    sentences = list(conll_sentences(path))
    converted = 0
    for number, (line, tokens, tags, _) in enumerate(sentences):
        iob2 = to_iob2(tags)
        converted += iob2 != tags
        out.add(number, [tokens], [task.label_names.index(t) for t in iob2], where(path, line))
    if converted:
        log.info("%s: IOB1 tags detected; %d of %d sentences rewritten as IOB2", path, converted, len(sentences))


def conll_sentences(path: Path) -> Iterator[tuple[int, list[str], list[str], list[str] | None]]:
    """Yield (first line number, tokens, NER tags, POS tags) per sentence, skipping -DOCSTART- lines.

    A blank line or ``-DOCSTART-`` ends a sentence; runs of them make no empty sentences (the hub readers skip
    a row without tokens the same way: :func:`spanft.data.reader_rules.report_boundaries`).

    POS tags are the second column when the file has three or more (token, POS, [chunk,] NER), else None.
    The column count is the one most lines have, so a wrong line is the one named, the first line included. A
    sentence that runs through several sentence ends ('.', '?', '!' followed by more tokens) is refused: the
    blank lines between sentences are missing, and the file would be read as document-long sentences.
    """
    expected = _conll_columns(path)
    tokens, tags, pos, start = [], [], [], 0
    for number, line in read_text_lines(path, what="CoNLL-2003 file"):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if tokens:
                _check_sentence_ends(path, start, tokens)
                yield start, tokens, tags, (pos if expected >= 3 else None)
            tokens, tags, pos = [], [], []
            continue
        if expected < 2:
            raise SpanftError(f"{where(path, number)}: expected at least 2 columns (token ... tag), found {len(fields)}")
        if len(fields) != expected:
            raise SpanftError(f"{where(path, number)}: expected {expected} columns (token ... tag, as most lines "
                              f"have), found {len(fields)}")
        if not _TAG.match(fields[-1]):
            raise SpanftError(f"{where(path, number)}: NER tag {fields[-1]!r} is not O or [BI]-PER/LOC/ORG/MISC")
        if not tokens:
            start = number
        tokens.append(fields[0])
        tags.append(fields[-1])
        pos.append(fields[1])
    if tokens:
        _check_sentence_ends(path, start, tokens)
        yield start, tokens, tags, (pos if expected >= 3 else None)


def _conll_columns(path: Path) -> int:
    """The column count most token lines of the file have (the first such line's, on a tie)."""
    counts: dict[int, int] = {}
    for _, line in read_text_lines(path, what="CoNLL-2003 file"):
        fields = line.split()
        if fields and fields[0] != "-DOCSTART-":
            counts[len(fields)] = counts.get(len(fields), 0) + 1
    return max(counts, key=counts.get) if counts else 0


_SENTENCE_ENDS = frozenset({".", "?", "!"})
MAX_INNER_ENDS = 2  # "Mr . Smith" may hold one; a run through more is several sentences without blank lines


def _check_sentence_ends(path: Path, start: int, tokens: list[str]) -> None:
    inner = [i for i, token in enumerate(tokens[:-1]) if token in _SENTENCE_ENDS]
    if len(inner) >= MAX_INNER_ENDS:
        lines = ", ".join(str(start + i) for i in inner[:3])
        raise SpanftError(
            f"{where(path, start)}: a sentence of {len(tokens)} tokens runs through {len(inner)} sentence ends "
            f"(at lines {lines}{', ...' if len(inner) > 3 else ''}): a blank line must end each sentence")


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
