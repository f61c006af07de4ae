"""A fine-tuning run's checks that need neither torch nor transformers (seconds of imports): its options, its
task, its output and checkpoint directories, its data directory and splits, and what a local backbone directory
holds (the files' contents are checked once, when it is loaded).

:func:`preflight` runs before those imports (``spanft finetune``, the finetune stage), so a mistake in any of
them is told in a moment, and again at the start of :func:`spanft.train.finetune.run_finetune`.
"""

from __future__ import annotations

from pathlib import Path

from spanft.data.columns import split_schema
from spanft.data.registry import TaskSpec, get_task
from spanft.errors import SpanftError
from spanft.fileio import check_output, check_output_location
from spanft.model.files import check_backbone_directory
from spanft.train.options import SPAN_VARIANTS, FinetuneOptions

RUN_MARKER = "spanft_run.json"  # in the checkpoint dir: the settings its checkpoints belong to


def preflight(options: FinetuneOptions) -> tuple[TaskSpec, Path]:
    """``(task, run directory)`` once every check that reads no model has passed; else one SpanftError."""
    options.validate()
    task = get_task(options.task)
    out = check_run_outputs(options)
    check_data_directory(options, task)
    check_backbone_directory(options.backbone)
    return task, out


def run_inputs(options: FinetuneOptions) -> list[str]:
    """What a run reads: the task data, and the backbone when it is a local directory (not a hub id)."""
    return [options.data, *([options.backbone] if Path(options.backbone).exists() else [])]


def check_run_outputs(options: FinetuneOptions) -> Path:
    """Refuse, before any work, a run directory or checkpoint directory that would destroy what is not ours."""
    inputs = run_inputs(options)
    out = check_output(options.out, inputs=inputs, made_by="finetune")
    check_checkpoint_dir(options.checkpoint_path(), inputs=[*inputs, out])
    return out


def check_checkpoint_dir(directory: Path, inputs=()) -> None:
    """Refuse, before any work, a checkpoint directory that is not ours to clear (or lies among the inputs)."""
    check_output_location(directory, inputs)
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise SpanftError(f"--checkpoint-dir {directory} exists and is not a directory: choose another path")
    if directory.is_dir() and not (directory / RUN_MARKER).is_file() and any(directory.iterdir()):
        raise SpanftError(
            f"--checkpoint-dir {directory} holds files that spanft finetune did not write (no {RUN_MARKER}): "
            f"give an empty or new directory"
        )


def check_data_directory(options: FinetuneOptions, task: TaskSpec) -> None:
    """The task data directory: every split the task cannot do without, each with the columns of the task
    (and the spans of a span variant), and training examples; read from the files' footers."""
    directory = Path(options.data)
    if not directory.exists():
        raise SpanftError(f"--data {options.data}: task data directory not found")
    if not directory.is_dir():
        raise SpanftError(f"--data {options.data}: a file, not a task data directory")
    needed = ["idx", "words_a"] + (["words_b"] if task.is_pair else []) + (["tags"] if task.is_tagging else ["label"])
    spans = ["spans_a"] + (["spans_b"] if task.is_pair else []) if options.variant in SPAN_VARIANTS else []
    for split in task.all_splits:
        path = directory / f"{split}.parquet"
        if task.splits[split].optional and not path.is_file():
            continue  # told when the run reads its data: no predictions for it
        columns, rows = split_schema(path)
        if split == task.train_split and rows == 0:
            raise SpanftError(f"{path}: no training examples")
        missing = [column for column in needed if column not in columns]
        if missing:
            raise SpanftError(f"{path}: missing column(s) {', '.join(missing)} (is this {task.name} data?)")
        unsegmented = [column for column in spans if column not in columns]
        if unsegmented:
            raise SpanftError(f"variant {options.variant} needs segmented data ({', '.join(unsegmented)}); {path} has "
                              f"none: run `spanft segment-task` on the prepared data and pass its output as --data")
