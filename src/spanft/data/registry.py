"""The task registry: one table for the 9 GLUE tasks, SNLI and CoNLL-2003 (like run_glue.py's ``task_to_keys``).

Every reader, the metrics, the feature encoder, the trainer and the GLUE submission writer take what they
need about a task from its :class:`TaskSpec`; nothing else branches on task names.

Hub sources (``source: hf``):

- GLUE: ``nyu-mll/glue`` with the task's config; MNLI's model also predicts the diagnostic set (config ``ax``).
- SNLI: ``stanfordnlp/snli``; examples with label -1 (no gold label) are dropped and counted.
- CoNLL-2003: ``eriktks/conll2003`` at revision ``refs/convert/parquet``, whose one config is ``default``. The
  original ``conll2003`` repository is a loading script, which ``datasets`` >= 4 no longer runs; the Hub's
  parquet conversion of that same repository keeps its schema (``tokens``, ``pos_tags``, ``ner_tags`` with
  the ClassLabel order O, B-PER, I-PER, B-ORG, I-ORG, B-LOC, I-LOC, B-MISC, I-MISC) and loads without a script.

Local sources (``source: local``): every task reads one folder (params ``tasks.<task>`` under ``data.dir``,
:attr:`TaskSpec.folder` by default: the official layout) and nothing outside it, so the folder is its
prepare stage's one data dependency. Inside the folder:

- GLUE as unpacked by the classic download script (``train.tsv``, ``dev.tsv``, ``test.tsv``; MNLI
  ``dev_matched.tsv`` ...); column positions are listed per file below. MNLI's diagnostic set (AX, the
  download's ``diagnostic/diagnostic.tsv``) is read as ``diagnostic.tsv`` inside the MNLI folder.
- SNLI ``snli_1.0_{train,dev,test}.jsonl``.
- CoNLL-2003 ``eng.train/eng.testa/eng.testb`` (IOB1) or ``train.txt/valid.txt/test.txt`` (IOB2).

Splits: ``eval_splits`` are labeled and scored; the best epoch is chosen on ``eval_splits[0]``
(:attr:`TaskSpec.selection_split`). ``test_splits`` are unlabeled: only predicted (GLUE submission files).
SNLI and CoNLL-2003 have labeled test sets, so their ``test`` split is an eval split. Every test split,
labeled or not, is ``optional``: many users hold train and dev only, and a run without it simply has no
test predictions; train and the dev splits (:attr:`TaskSpec.required_splits`) must be there.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from spanft.errors import SpanftError

TaskType = Literal["single", "pair", "regression", "tagging"]


@dataclass(frozen=True)
class LocalColumns:
    """Where one local file keeps its fields (0-based positions; negative counts from the end).

    ``fields``: the number of tab-separated fields every row must have; ``None`` means the header's count.
    ``idx_col``: the example id column (GLUE test files' ``index``); ``None`` uses the data row number.
    """

    text_cols: tuple[int, ...]
    label_col: int | None = None
    idx_col: int | None = None
    header: bool = True
    fields: int | None = None


@dataclass(frozen=True)
class SplitSpec:
    """One split of a task: where it lives on the Hub and on disk, and whether it carries labels."""

    name: str
    hub_split: str
    local_names: tuple[str, ...]  # file names inside the task's folder, the first that exists is read
    labeled: bool = True
    hub_config: str | None = None  # overrides the task's config (MNLI's "ax" split)
    local_columns: LocalColumns | None = None  # GLUE TSV files only
    submission_stem: str | None = None  # GLUE leaderboard file stem for unlabeled test splits
    optional: bool = False  # a test split: absent files mean no test predictions, not an error


@dataclass(frozen=True)
class TaskSpec:
    """Everything the pipeline knows about one task."""

    name: str
    task_type: TaskType
    label_names: list[str] | None
    train_split: str
    eval_splits: list[str]
    test_splits: list[str]
    main_metric: str
    metrics: tuple[str, ...]
    hub_id: str
    hub_config: str | None
    hub_text_columns: tuple[str, ...]
    hub_label_column: str
    local_format: Literal["glue_tsv", "snli_jsonl", "conll"]
    splits: dict[str, SplitSpec]
    folder: str = ""  # its folder under data.dir in the official layout (params tasks' default)
    # The label strings in local files and on the GLUE leaderboard, in label-id order (None: regression/tagging).
    raw_labels: tuple[str, ...] | None = None
    hub_revision: str | None = None
    # SNLI: the hub label that marks "no gold label"; the local jsonl marks it with gold_label "-".
    hub_dropped_label: int | None = None
    local_dropped_label: str | None = None
    label_range: tuple[float, float] | None = None  # regression: the valid score interval

    @property
    def is_pair(self) -> bool:
        return len(self.hub_text_columns) == 2 and not self.is_tagging

    @property
    def is_regression(self) -> bool:
        return self.task_type == "regression"

    @property
    def is_tagging(self) -> bool:
        return self.task_type == "tagging"

    @property
    def num_labels(self) -> int:
        return 1 if self.label_names is None else len(self.label_names)

    @property
    def selection_split(self) -> str:
        """The split whose main metric picks the best epoch."""
        return self.eval_splits[0]

    @property
    def all_splits(self) -> list[str]:
        return [self.train_split, *self.eval_splits, *self.test_splits]

    @property
    def required_splits(self) -> list[str]:
        """Train and the dev splits: no run without them (test splits may be absent)."""
        return [name for name in self.all_splits if not self.splits[name].optional]

    def label_id(self, name: str) -> int:
        """Class id of a label name; SpanftError when the name is not in the label set."""
        if self.label_names is None or name not in self.label_names:
            raise SpanftError(f"task {self.name}: label {name!r} is not one of {self.label_names}")
        return self.label_names.index(name)


GLUE = "nyu-mll/glue"
CONLL_TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
NLI3 = ["entailment", "neutral", "contradiction"]
NLI2 = ["entailment", "not_entailment"]


def _glue_splits(
    labeled: LocalColumns,
    test: LocalColumns,
    stem: str,
) -> dict[str, SplitSpec]:
    """train/validation/test of a GLUE task with one dev file (every task but MNLI)."""
    return {
        "train": SplitSpec("train", "train", ("train.tsv",), local_columns=labeled),
        "validation": SplitSpec("validation", "validation", ("dev.tsv",), local_columns=labeled),
        "test": SplitSpec(
            "test", "test", ("test.tsv",), labeled=False, local_columns=test, submission_stem=stem,
            optional=True,
        ),
    }


def _glue_task(
    name: str,
    folder: str,
    stem: str,
    task_type: TaskType,
    label_names: list[str] | None,
    raw_labels: tuple[str, ...] | None,
    hub_text_columns: tuple[str, ...],
    labeled: LocalColumns,
    test: LocalColumns,
    metrics: tuple[str, ...],
    label_range: tuple[float, float] | None = None,
) -> TaskSpec:
    return TaskSpec(
        name=name,
        task_type=task_type,
        label_names=label_names,
        train_split="train",
        eval_splits=["validation"],
        test_splits=["test"],
        main_metric=metrics[0],
        metrics=metrics,
        hub_id=GLUE,
        hub_config=name,
        hub_text_columns=hub_text_columns,
        hub_label_column="label",
        local_format="glue_tsv",
        splits=_glue_splits(labeled, test, stem),
        folder=f"glue_data/{folder}",
        raw_labels=raw_labels,
        label_range=label_range,
    )


_BINARY = ("0", "1")
# GLUE test files (every task): an `index` column first, sentences at the given positions, no label.
_PAIR_TEST = LocalColumns(text_cols=(1, 2), idx_col=0)
_RTE_LIKE = LocalColumns(text_cols=(1, 2), label_col=3)  # index, sentence1/question, sentence2/sentence, label


def _mnli() -> TaskSpec:
    # index promptID pairID genre s1_binary_parse s2_binary_parse s1_parse s2_parse sentence1 sentence2
    # [label1 .. label5] gold_label: train has 12 fields, dev 16, test 10; the gold label is the last one.
    labeled = LocalColumns(text_cols=(8, 9), label_col=-1)
    test = LocalColumns(text_cols=(8, 9), idx_col=0)
    splits = {
        "train": SplitSpec("train", "train", ("train.tsv",), local_columns=labeled),
        "validation_matched": SplitSpec(
            "validation_matched", "validation_matched", ("dev_matched.tsv",), local_columns=labeled
        ),
        "validation_mismatched": SplitSpec(
            "validation_mismatched",
            "validation_mismatched",
            ("dev_mismatched.tsv",),
            local_columns=labeled,
        ),
        "test_matched": SplitSpec(
            "test_matched",
            "test_matched",
            ("test_matched.tsv",),
            labeled=False,
            local_columns=test,
            submission_stem="MNLI-m",
            optional=True,
        ),
        "test_mismatched": SplitSpec(
            "test_mismatched",
            "test_mismatched",
            ("test_mismatched.tsv",),
            labeled=False,
            local_columns=test,
            submission_stem="MNLI-mm",
            optional=True,
        ),
        # The diagnostic set: index, sentence1, sentence2 (no label), predicted by the MNLI model.
        "ax": SplitSpec(
            "ax",
            "test",
            ("diagnostic.tsv",),  # the download's diagnostic/diagnostic.tsv, in the MNLI folder
            labeled=False,
            hub_config="ax",
            local_columns=_PAIR_TEST,
            submission_stem="AX",
            optional=True,
        ),
    }
    return TaskSpec(
        name="mnli",
        task_type="pair",
        label_names=NLI3,
        train_split="train",
        eval_splits=["validation_matched", "validation_mismatched"],
        test_splits=["test_matched", "test_mismatched", "ax"],
        main_metric="accuracy",
        metrics=("accuracy",),
        hub_id=GLUE,
        hub_config="mnli",
        hub_text_columns=("premise", "hypothesis"),
        hub_label_column="label",
        local_format="glue_tsv",
        splits=splits,
        folder="glue_data/MNLI",
        raw_labels=tuple(NLI3),
    )


def _snli() -> TaskSpec:
    def split(name: str, hub: str, local: str) -> SplitSpec:
        filename = f"snli_1.0_{local}.jsonl"
        return SplitSpec(name, hub, (filename,), optional=name == "test")

    return TaskSpec(
        name="snli",
        task_type="pair",
        label_names=NLI3,
        train_split="train",
        eval_splits=["validation", "test"],
        test_splits=[],
        main_metric="accuracy",
        metrics=("accuracy",),
        hub_id="stanfordnlp/snli",
        hub_config=None,
        hub_text_columns=("premise", "hypothesis"),
        hub_label_column="label",
        local_format="snli_jsonl",
        folder="snli_1.0",
        splits={
            "train": split("train", "train", "train"),
            "validation": split("validation", "validation", "dev"),
            "test": split("test", "test", "test"),
        },
        raw_labels=tuple(NLI3),
        hub_dropped_label=-1,
        local_dropped_label="-",
    )


def _conll2003() -> TaskSpec:
    def split(name: str, hub: str, iob1: str, iob2: str) -> SplitSpec:
        return SplitSpec(name, hub, (iob1, iob2), optional=name == "test")

    return TaskSpec(
        name="conll2003",
        task_type="tagging",
        label_names=CONLL_TAGS,
        train_split="train",
        eval_splits=["validation", "test"],
        test_splits=[],
        main_metric="f1",
        metrics=("f1", "precision", "recall", "accuracy"),
        hub_id="eriktks/conll2003",
        hub_config="default",
        hub_revision="refs/convert/parquet",
        hub_text_columns=("tokens",),
        hub_label_column="ner_tags",
        local_format="conll",
        folder="conll2003",
        splits={
            "train": split("train", "train", "eng.train", "train.txt"),
            "validation": split("validation", "validation", "eng.testa", "valid.txt"),
            "test": split("test", "test", "eng.testb", "test.txt"),
        },
    )


def _build_registry() -> dict[str, TaskSpec]:
    tasks = [
        # CoLA train/dev: source, label, original annotation, sentence; no header.
        _glue_task(
            "cola", "CoLA", "CoLA", "single", ["unacceptable", "acceptable"], _BINARY, ("sentence",),
            LocalColumns(text_cols=(3,), label_col=1, header=False, fields=4),
            LocalColumns(text_cols=(1,), idx_col=0),
            ("mcc", "accuracy"),
        ),
        # SST-2 train/dev: sentence, label.
        _glue_task(
            "sst2", "SST-2", "SST-2", "single", ["negative", "positive"], _BINARY, ("sentence",),
            LocalColumns(text_cols=(0,), label_col=1),
            LocalColumns(text_cols=(1,), idx_col=0),
            ("accuracy",),
        ),
        # MRPC: Quality, #1 ID, #2 ID, #1 String, #2 String (test: index instead of Quality).
        _glue_task(
            "mrpc", "MRPC", "MRPC", "pair", ["not_equivalent", "equivalent"], _BINARY, ("sentence1", "sentence2"),
            LocalColumns(text_cols=(3, 4), label_col=0),
            LocalColumns(text_cols=(3, 4), idx_col=0),
            ("f1", "accuracy"),
        ),
        # STS-B: index genre filename year old_index source1 source2 sentence1 sentence2 score.
        _glue_task(
            "stsb", "STS-B", "STS-B", "regression", None, None, ("sentence1", "sentence2"),
            LocalColumns(text_cols=(7, 8), label_col=9),
            LocalColumns(text_cols=(7, 8), idx_col=0),
            ("pearson", "spearman"),
            label_range=(0.0, 5.0),
        ),
        # QQP train/dev: id qid1 qid2 question1 question2 is_duplicate; test: id question1 question2.
        _glue_task(
            "qqp", "QQP", "QQP", "pair", ["not_duplicate", "duplicate"], _BINARY, ("question1", "question2"),
            LocalColumns(text_cols=(3, 4), label_col=5),
            _PAIR_TEST,
            ("f1", "accuracy"),
        ),
        _mnli(),
        _glue_task(
            "qnli", "QNLI", "QNLI", "pair", NLI2, tuple(NLI2), ("question", "sentence"), _RTE_LIKE, _PAIR_TEST,
            ("accuracy",),
        ),
        _glue_task(
            "rte", "RTE", "RTE", "pair", NLI2, tuple(NLI2), ("sentence1", "sentence2"), _RTE_LIKE, _PAIR_TEST,
            ("accuracy",),
        ),
        # WNLI's files label with 0/1, 1 meaning entailment (the hub's order: not_entailment, entailment).
        _glue_task(
            "wnli", "WNLI", "WNLI", "pair", ["not_entailment", "entailment"], _BINARY, ("sentence1", "sentence2"),
            _RTE_LIKE, _PAIR_TEST, ("accuracy",),
        ),
        _snli(),
        _conll2003(),
    ]
    return {task.name: task for task in tasks}


TASKS: dict[str, TaskSpec] = _build_registry()
GLUE_TASKS = [name for name, task in TASKS.items() if task.hub_id == GLUE]
OFFICIAL_FOLDERS = {name: task.folder for name, task in TASKS.items()}  # params tasks in the official layout


def get_task(name: str) -> TaskSpec:
    """The registry entry of ``name``; a SpanftError listing the valid names otherwise."""
    try:
        return TASKS[name]
    except KeyError:
        raise SpanftError(unknown_task(name)) from None


def unknown_task(name: object) -> str:
    """``unknown task 'cloa' (did you mean cola?); valid tasks: ...``: the message for a name not registered."""
    close = difflib.get_close_matches(str(name).lower(), list(TASKS), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown task {name!r}{hint}; valid tasks: {', '.join(TASKS)}"


def submission_splits() -> dict[str, tuple[TaskSpec, SplitSpec]]:
    """GLUE leaderboard file stem -> (task, split) whose predictions fill that file."""
    return {
        split.submission_stem: (task, split)
        for task in TASKS.values()
        for split in task.splits.values()
        if split.submission_stem
    }
