"""One fine-tuning run with the HF ``Trainer``: a backbone, a variant, a seed, a task.

Variants: ``baseline`` (plain fine-tuning, [CLS] head), ``sf`` (span fine-tuning on n-gram spans),
``cnn-noseg`` (the same CNNs over all tokens, no segmentation: the paper's "+CNN"), ``random-seg`` and
``chunker-seg`` (sf on random / chunker spans; the data directory decides which spans those are).

Outputs (contract 8): ``<out>/predictions/<split>.tsv`` for every eval and test split and ``<out>/metrics.json``,
written last. The run directory is built beside ``<out>`` and renamed into place at the end, so an interrupted
or failed run never leaves a ``metrics.json`` that looks complete. Checkpoints (one per epoch) go to
``--checkpoint-dir``; a rerun with the same settings resumes from the last complete one, and they are removed
after success.

Several processes (``torchrun --nproc-per-node N -m spanft.cli finetune ...`` or ``accelerate launch
--multi_gpu --num_processes N -m spanft.cli finetune ...``, which on a machine without a GPU also starts N CPU
processes; ``accelerate launch --cpu --num_processes N`` starts ONE process unless given an MPI host file): the
HF Trainer does the data-parallel training (gloo on CPU, NCCL on GPU), ``--batch-size`` is per process, and
every process evaluates its shard, the Trainer gathering the predictions (the copies that pad the last batch
dropped). Only the main process writes: it prepares the checkpoint directory while the others wait, writes the
run directory and clears the checkpoints; the others wait for it at a barrier and return. Checkpoints record
the number of processes: they resume only under the same number.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from spanft.errors import SpanftError
from spanft.fileio import atomic_open, atomic_path
from spanft.tasks import TaskSpec, get_task

log = logging.getLogger("spanft")

VARIANTS = ("baseline", "sf", "cnn-noseg", "random-seg", "chunker-seg")
SPAN_VARIANTS = ("sf", "random-seg", "chunker-seg")
RUN_MARKER = "spanft_run.json"  # in the checkpoint dir: the settings its checkpoints belong to
# In each checkpoint: training seconds spent up to it. Written last, once every process has saved its part,
# so it also marks the checkpoint as complete (a kill while saving leaves a checkpoint without it).
ELAPSED_FILE = "spanft_elapsed.json"


@dataclass
class FinetuneOptions:
    """Everything one run depends on (the CLI's arguments)."""

    task: str
    backbone: str
    variant: str
    data: str
    out: str
    seed: int = 1
    checkpoint_dir: str | None = None
    epochs: int = 3
    lr: float = 2e-5
    batch_size: int = 32
    eval_batch_size: int = 64
    max_seq_len: int = 128
    max_spans: int | None = None  # default: max_seq_len // 2
    max_span_len: int = 16
    encoder: str | None = None
    head: str | None = None
    cls_vector: str = "hidden"
    dropout: float = 0.1
    max_train_examples: int | None = None
    max_eval_examples: int | None = None
    # Test hook: Trainer callbacks added to the run (e.g. one that stops it after the first checkpoint).
    extra_callbacks: list = field(default_factory=list, repr=False, compare=False)

    def resolved_max_spans(self) -> int:
        return self.max_spans if self.max_spans is not None else max(1, self.max_seq_len // 2)

    def checkpoint_path(self) -> Path:
        return Path(self.checkpoint_dir) if self.checkpoint_dir else Path(f"{str(self.out).rstrip('/')}.checkpoints")

    def validate(self) -> None:
        if self.variant not in VARIANTS:
            raise SpanftError(f"unknown variant {self.variant!r}; valid variants: {', '.join(VARIANTS)}")
        for key in ("epochs", "batch_size", "eval_batch_size", "max_seq_len", "max_span_len"):
            if getattr(self, key) <= 0:
                raise SpanftError(f"--{key.replace('_', '-')} must be positive, got {getattr(self, key)}")
        if self.max_spans is not None and self.max_spans <= 0:
            raise SpanftError(f"--max-spans must be positive, got {self.max_spans}")
        if not self.lr > 0:
            raise SpanftError(f"--lr must be positive, got {self.lr}")
        for key in ("max_train_examples", "max_eval_examples"):
            value = getattr(self, key)
            if value is not None and value <= 0:
                raise SpanftError(f"--{key.replace('_', '-')} must be positive, got {value}")
        if self.variant == "baseline" and self.head not in (None, "cls-only"):
            raise SpanftError(f"variant baseline is the cls-only head; --head {self.head} needs a span variant")
        if self.variant != "baseline" and self.head == "cls-only":
            raise SpanftError(f"--head cls-only is the baseline; use --variant baseline instead of {self.variant}")
        if self.variant in ("baseline", "cnn-noseg") and self.encoder not in (None, "cnn-cnn"):
            raise SpanftError(f"--encoder {self.encoder} applies to the span variants ({', '.join(SPAN_VARIANTS)})")

    def fingerprint(self) -> dict[str, Any]:
        """The settings that decide what a checkpoint holds (paths of outputs excluded)."""
        skip = {"out", "checkpoint_dir", "extra_callbacks"}
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skip}


def span_config_for(options: FinetuneOptions, task: TaskSpec):
    """The :class:`spanft.model.SpanConfig` of a variant."""
    from spanft.model import SpanConfig

    common = dict(num_labels=task.num_labels, task_type=task.task_type, dropout=options.dropout,
                  cls_vector=options.cls_vector)
    if options.variant == "baseline":
        return SpanConfig(head="cls-only", **common)
    if options.variant == "cnn-noseg":
        return SpanConfig(encoder="cnn-cnn", head=options.head or "concat", segmentation="none", **common)
    return SpanConfig(encoder=options.encoder or "cnn-cnn", head=options.head or "concat", segmentation="spans",
                      **common)


# ------------------------------------------------------------------------------------------------ data


def load_splits(options: FinetuneOptions, task: TaskSpec) -> dict[str, Any]:
    """DataFrames of the train, eval and test splits, checked and cut to the example limits."""
    from spanft.task_data import read_prepared

    data = Path(options.data)
    if not data.is_dir():
        raise SpanftError(f"--data {data}: task data directory not found")
    frames = {}
    for split in task.all_splits:
        frame = read_prepared(data / f"{split}.parquet")
        limit = options.max_train_examples if split == task.train_split else options.max_eval_examples
        if limit is not None and len(frame) > limit:
            log.info("%s: keeping the first %d of %d examples", split, limit, len(frame))
            frame = frame.iloc[:limit].reset_index(drop=True)
        frames[split] = frame
    _check_columns(options, task, frames)
    return frames


def _check_columns(options: FinetuneOptions, task: TaskSpec, frames: dict[str, Any]) -> None:
    train = frames[task.train_split]
    if len(train) == 0:
        raise SpanftError(f"{Path(options.data) / task.train_split}.parquet: no training examples")
    needed = ["idx", "words_a"] + (["words_b"] if task.is_pair else []) + (["tags"] if task.is_tagging else ["label"])
    for split, frame in frames.items():
        missing = [column for column in needed if column not in frame.columns]
        if missing:
            raise SpanftError(
                f"{Path(options.data) / split}.parquet: missing column(s) {', '.join(missing)} "
                f"(is this {task.name} data?)"
            )
    if options.variant in SPAN_VARIANTS:
        for split, frame in frames.items():
            if "spans_a" not in frame.columns or (task.is_pair and "spans_b" not in frame.columns):
                raise SpanftError(
                    f"variant {options.variant} needs segmented data (spans_a); {Path(options.data) / split}.parquet "
                    f"has none: run `spanft segment-task` on the prepared data and pass its output as --data"
                )


def _drop_spans(frame):
    """Prepared columns only: the baseline and cnn-noseg never look at spans."""
    return frame.drop(columns=[c for c in ("spans_a", "spans_b") if c in frame.columns])


def warn_if_case_lost(frames: dict[str, Any], tokenizer, backbone: str) -> None:
    """Cased task data on an uncased backbone loses its case: a warning, not an error."""
    from spanft.backbone import backbone_is_uncased

    if not backbone_is_uncased(tokenizer):
        return
    sample = frames[next(iter(frames))]["words_a"].head(200)
    if any(any(ch.isupper() for word in words for ch in word) for words in sample):
        log.warning("warning: the task data is cased but backbone %s is uncased: case is folded", backbone)


# ------------------------------------------------------------------------------------------------ scoring


def _nan_to_none(value: float) -> float | None:
    return None if isinstance(value, float) and math.isnan(value) else value


def word_tag_predictions(logits: np.ndarray, token_labels: np.ndarray, word_counts: list[int], outside: int):
    """Per-word tag ids from per-token logits [N, T, C]: the prediction at each word's first sub-token.

    The first sub-tokens are the positions whose label is not -100, in word order; words cut off by
    truncation (no position left) are predicted ``outside`` ("O"), so scores count them as missed.
    """
    predicted = logits.argmax(axis=-1)
    words = []
    for row, count in enumerate(word_counts):
        positions = np.flatnonzero(token_labels[row] != -100)[:count]
        tags = predicted[row, positions].tolist()
        words.append(tags + [outside] * (count - len(tags)))
    return words


def score_split(task: TaskSpec, frame, logits: np.ndarray, token_labels: np.ndarray | None):
    """``(metrics, gold strings, predicted strings)`` for one split; metrics empty when it is unlabeled."""
    from spanft.metrics import compute_metrics
    from spanft.model import predictions_from_logits

    if task.is_tagging:
        counts = [len(words) for words in frame["words_a"]]
        # spanft.features marks each word's first sub-token with a label >= 0 (0 in unlabeled examples)
        pred = word_tag_predictions(logits, token_labels, counts, task.label_names.index("O"))
        gold = [list(tags) for tags in frame["tags"]]
        labeled = [i for i, tags in enumerate(gold) if len(tags)]
        metrics = compute_metrics(task, [pred[i] for i in labeled], [gold[i] for i in labeled]) if labeled else {}
        names = task.label_names
        return metrics, [" ".join(names[t] for t in tags) for tags in gold], [" ".join(names[t] for t in p) for p in pred]
    pred = predictions_from_logits(logits, task.task_type)
    gold = frame["label"].to_numpy()
    labeled = ~np.isnan(gold) if task.is_regression else gold >= 0
    metrics = compute_metrics(task, pred[labeled], gold[labeled]) if labeled.any() else {}
    if task.is_regression:
        fmt = lambda value: "" if math.isnan(value) else f"{value:.6g}"  # noqa: E731
        return metrics, [fmt(float(g)) for g in gold], [f"{float(p):.6g}" for p in pred]
    names = task.label_names
    return metrics, [names[int(g)] if g >= 0 else "" for g in gold], [names[int(p)] for p in pred]


def write_predictions(path: Path, idx, gold: list[str], pred: list[str]) -> None:
    with atomic_open(path) as handle:
        handle.write("idx\tgold\tpred\n")
        for i, g, p in zip(idx, gold, pred):
            handle.write(f"{int(i)}\t{g}\t{p}\n")


# ------------------------------------------------------------------------------------------------ Trainer


def _make_trainer_class():
    """A Trainer whose checkpoints of a plain ``nn.Module`` survive shared tensors.

    For a model that is not a ``PreTrainedModel`` the stock ``Trainer._save`` calls
    ``safetensors.torch.save_file(model.state_dict())``, which refuses tensors that share memory (tied
    embeddings of some backbones). ``safetensors.torch.save_model`` keeps one name per storage, and the
    Trainer's non-strict ``load_state_dict`` on resume / best-model loading fills the tied twin.
    """
    import safetensors.torch
    import torch
    from transformers import PreTrainedModel, Trainer
    from transformers.trainer import TRAINING_ARGS_NAME
    from transformers.utils import SAFE_WEIGHTS_NAME

    class SpanTrainer(Trainer):
        def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
            if isinstance(self.model, PreTrainedModel) or not self.args.should_save:
                return super()._save(output_dir, state_dict)
            output_dir = output_dir if output_dir is not None else self.args.output_dir
            os.makedirs(output_dir, exist_ok=True)
            safetensors.torch.save_model(self.model, os.path.join(output_dir, SAFE_WEIGHTS_NAME), metadata={"format": "pt"})
            torch.save(self.args, os.path.join(output_dir, TRAINING_ARGS_NAME))

        def evaluation_loop(self, dataloader, description, prediction_loss_only=None, ignore_keys=None,
                            metric_key_prefix="eval"):
            output = super().evaluation_loop(dataloader, description, prediction_loss_only, ignore_keys,
                                             metric_key_prefix)
            key = f"{metric_key_prefix}_loss"
            if key in output.metrics and output.predictions is not None and output.label_ids is not None:
                output.metrics[key] = _exact_loss(self.model.span_config, output.predictions, output.label_ids)
            return output

    return SpanTrainer


def _exact_loss(span_config, logits, labels) -> float:
    """The mean loss over every labelled example (token, for tagging) of a split, from the gathered outputs.

    The Trainer's own eval loss averages per-batch means, weighting a short last batch like a full one, and
    under several processes it also counts the copies that pad the last batch: it would depend on the batch
    size and the number of processes. This one does not.
    """
    import torch

    from spanft.model import classification_loss, regression_loss

    logits = logits[0] if isinstance(logits, tuple) else logits
    loss_fn = regression_loss if span_config.task_type == "regression" else classification_loss
    loss = loss_fn(torch.as_tensor(logits), torch.as_tensor(labels))
    return float(loss)


def _elapsed_callback(start: float, offset: float):
    """Writes the training seconds spent so far into each checkpoint (a resumed run adds them up).

    The file is the checkpoint's completion mark: every process first finishes its part of the checkpoint
    (each writes its own RNG state), then the main process writes the file atomically.
    """
    from transformers import TrainerCallback

    class ElapsedCallback(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            _barrier()
            checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if state.is_world_process_zero and checkpoint.is_dir():
                seconds = offset + time.perf_counter() - start
                with atomic_open(checkpoint / ELAPSED_FILE) as handle:
                    handle.write(json.dumps({"seconds": seconds}))

    return ElapsedCallback()


def _barrier() -> None:
    """Wait for every process of a distributed run (nothing to wait for in a single process)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


def _elapsed_seconds(checkpoint: str | None) -> float:
    if not checkpoint:
        return 0.0
    return float(json.loads((Path(checkpoint) / ELAPSED_FILE).read_text(encoding="utf-8"))["seconds"])


def _data_digest(data: Path, splits: list[str]) -> str:
    digest = hashlib.sha256()
    for split in splits:
        digest.update((data / f"{split}.parquet").read_bytes())
    return digest.hexdigest()


def prepare_checkpoint_dir(options: FinetuneOptions, task: TaskSpec, *, main: bool = True,
                           processes: int = 1) -> str | None:
    """The checkpoint to resume from, or None; checkpoints of other settings, data or process count are cleared.

    Only the main process (``main``) changes the directory: it clears foreign and incomplete checkpoints and
    writes the marker; the other processes of a distributed run call this after it, read only, and find the
    same checkpoint. A checkpoint of a different number of processes is not resumed: the effective batch
    size and the data order would differ.
    """
    directory = options.checkpoint_path()
    marker = {"settings": options.fingerprint(), "data": _data_digest(Path(options.data), task.all_splits),
              "processes": processes}
    matches = _read_marker(directory / RUN_MARKER) == marker
    if not main:
        return last_complete_checkpoint(directory) if matches else None
    if directory.is_dir():
        if matches:
            last = last_complete_checkpoint(directory)
            _remove_incomplete_checkpoints(directory, keep=last)
            if last:
                log.info("resuming from %s", last)
                return last
        else:
            log.warning("%s holds checkpoints of other settings or data: removed", directory)
        clear_checkpoints(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_open(directory / RUN_MARKER) as handle:
        handle.write(json.dumps(marker, sort_keys=True))
    return None


def _read_marker(path: Path) -> dict | None:
    """The marker's content; None when absent or unreadable (then its checkpoints are not trusted)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _checkpoints(directory: Path) -> list[Path]:
    """``checkpoint-<step>`` directories, latest step first."""
    found = [p for p in directory.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]), reverse=True)


def last_complete_checkpoint(directory: Path) -> str | None:
    """The latest checkpoint that holds its completion mark (a kill while saving leaves one without)."""
    if not directory.is_dir():
        return None
    for checkpoint in _checkpoints(directory):
        if (checkpoint / ELAPSED_FILE).is_file():
            return str(checkpoint)
    return None


def _remove_incomplete_checkpoints(directory: Path, keep: str | None) -> None:
    for checkpoint in _checkpoints(directory):
        if not (checkpoint / ELAPSED_FILE).is_file() and str(checkpoint) != keep:
            log.warning("%s: incomplete checkpoint (interrupted while saving): removed", checkpoint)
            shutil.rmtree(checkpoint, ignore_errors=True)


def clear_checkpoints(directory: Path) -> None:
    """Remove what a run put in its checkpoint directory (and the directory when nothing else is left)."""
    for child in directory.glob("checkpoint-*"):
        shutil.rmtree(child, ignore_errors=True)
    for name in (RUN_MARKER,):
        (directory / name).unlink(missing_ok=True)
    for stray in directory.glob("runs"):  # tensorboard leftovers of older transformers
        shutil.rmtree(stray, ignore_errors=True)
    if directory.is_dir() and not any(directory.iterdir()):
        directory.rmdir()


def training_arguments(options: FinetuneOptions, task: TaskSpec, output_dir: str):
    import torch
    from transformers import TrainingArguments

    cuda = torch.cuda.is_available()
    bf16 = cuda and torch.cuda.is_bf16_supported()
    return TrainingArguments(
        output_dir=output_dir,
        num_train_epochs=options.epochs,
        learning_rate=options.lr,
        per_device_train_batch_size=options.batch_size,
        per_device_eval_batch_size=options.eval_batch_size,
        weight_decay=0.01,
        warmup_steps=0.1,  # a float below 1 is a ratio of the total steps (transformers 5)
        lr_scheduler_type="linear",
        optim="adamw_torch",
        eval_strategy="epoch",
        save_strategy="epoch",
        save_total_limit=1,  # the best checkpoint is kept besides the last one
        load_best_model_at_end=True,
        metric_for_best_model=task.main_metric,
        greater_is_better=True,
        logging_strategy="epoch",
        seed=options.seed,
        data_seed=options.seed,
        full_determinism=not cuda,
        bf16=bf16,
        fp16=cuda and not bf16,
        use_cpu=not cuda,
        dataloader_num_workers=0,
        label_names=["labels"],
        report_to="none",
    )


# ------------------------------------------------------------------------------------------------ the run


def run_finetune(options: FinetuneOptions) -> dict[str, Any]:
    """Fine-tune, predict every eval/test split, write the run directory. Returns metrics.json's content."""
    from transformers import set_seed
    from transformers.trainer_utils import enable_full_determinism

    from spanft.backbone import load_backbone
    from spanft.features import FeatureConfig, SpanCollator, encode_split
    from spanft.model import SpanModel

    options.validate()
    task = get_task(options.task)
    # Built first: under torchrun / accelerate launch this joins the process group.
    args = training_arguments(options, task, str(options.checkpoint_path()))
    main, processes = args.process_index == 0, args.world_size
    if not main:
        log.setLevel(logging.ERROR)  # the replicas would repeat the main process's messages
    frames = load_splits(options, task)
    span_config = span_config_for(options, task)
    if not span_config.needs_spans:
        frames = {split: _drop_spans(frame) for split, frame in frames.items()}
    out = Path(options.out)
    stale = out / "metrics.json"
    if main and stale.is_file():
        stale.unlink()
        log.info("%s: removed the previous run's metrics.json", stale)

    backbone, tokenizer = load_backbone(options.backbone)
    warn_if_case_lost(frames, tokenizer, options.backbone)
    feature_config = FeatureConfig(options.max_seq_len, options.resolved_max_spans(), options.max_span_len)
    datasets, truncation = {}, {}
    for split, frame in frames.items():
        datasets[split], stats = encode_split(frame, tokenizer, task, feature_config, name=split)
        truncation[split] = _as_dict(stats)

    import torch

    (enable_full_determinism if not torch.cuda.is_available() else set_seed)(options.seed)
    model = SpanModel(backbone, span_config)  # the new layers' initial weights depend on the seed
    with args.main_process_first(local=False, desc="checkpoint directory"):  # the others wait for the main one
        resume = prepare_checkpoint_dir(options, task, main=main, processes=processes)
    offset = _elapsed_seconds(resume)
    start = time.perf_counter()
    selection = task.selection_split
    trainer = _make_trainer_class()(
        model=model,
        args=args,
        train_dataset=_model_columns(datasets[task.train_split]),
        eval_dataset=_model_columns(datasets[selection]),
        data_collator=SpanCollator(tokenizer),
        compute_metrics=_selection_metrics(task, frames[selection]),
        callbacks=[_elapsed_callback(start, offset), *options.extra_callbacks],
    )
    trainer.train(resume_from_checkpoint=resume)
    train_seconds = offset + time.perf_counter() - start
    best_epoch = _best_epoch(trainer)
    history = _history(trainer)

    trainer.compute_metrics = None  # predict() below is scored by score_split, split by split
    results: dict[str, dict] = {}
    losses: dict[str, float | None] = {}  # of the loaded best model: equals its epoch's eval_loss in history
    written: dict[str, tuple[list[str], list[str]]] = {}
    for split in [*task.eval_splits, *task.test_splits]:  # every process takes part in predict()
        output = trainer.predict(_model_columns(datasets[split]), metric_key_prefix=split)
        _check_prediction_count(split, output.predictions, frames[split])
        token_labels = output.label_ids if task.is_tagging else None
        metrics, gold, pred = score_split(task, frames[split], output.predictions, token_labels)
        written[split] = (gold, pred)
        if split in task.eval_splits:
            results[split] = {key: _nan_to_none(value) for key, value in metrics.items()}
            losses[split] = output.metrics.get(f"{split}_loss")
    summary = _summary(options, task, model, results, losses, best_epoch, history, train_seconds, truncation,
                       frames, resume, processes)
    if main:
        write_run_directory(out, frames, written, summary)
        clear_checkpoints(options.checkpoint_path())
    _barrier()  # the replicas return once the run directory is in place
    return summary


def write_run_directory(out: Path, frames: dict[str, Any], written: dict[str, tuple[list[str], list[str]]],
                        summary: dict) -> None:
    """Predictions of every split, then metrics.json, built beside ``out`` and renamed into place."""
    with atomic_path(out) as tmp:
        (tmp / "predictions").mkdir(parents=True)
        for split, (gold, pred) in written.items():
            write_predictions(tmp / "predictions" / f"{split}.tsv", frames[split]["idx"], gold, pred)
        with atomic_open(tmp / "metrics.json") as handle:  # last: its presence means the run is complete
            json.dump(summary, handle, indent=2, sort_keys=False)
            handle.write("\n")


def _check_prediction_count(split: str, predictions, frame) -> None:
    """One prediction per example: a distributed gather that kept its padding copies would fail here."""
    rows = len(predictions[0] if isinstance(predictions, tuple) else predictions)
    if rows != len(frame):
        raise RuntimeError(f"{split}: {rows} predictions for {len(frame)} examples")


def _model_columns(dataset):
    """The encoded split without ``idx`` (the Trainer would drop it anyway; dropping it here is explicit)."""
    return dataset.remove_columns([c for c in ("idx",) if c in dataset.column_names])


def _as_dict(stats) -> dict:
    if dataclasses.is_dataclass(stats):
        return dataclasses.asdict(stats)
    if hasattr(stats, "_asdict"):
        return dict(stats._asdict())
    return dict(vars(stats)) if hasattr(stats, "__dict__") else {"value": stats}


def _selection_metrics(task: TaskSpec, frame):
    """``compute_metrics`` for the Trainer: the selection split scored exactly as the final report scores it."""

    def compute(eval_prediction) -> dict[str, float]:
        logits = eval_prediction.predictions
        logits = logits[0] if isinstance(logits, tuple) else logits
        labels = eval_prediction.label_ids if task.is_tagging else None
        metrics, _, _ = score_split(task, frame, logits, labels)
        # NaN (e.g. a constant regression output) must not win the best-epoch comparison.
        return {key: (-1.0 if math.isnan(value) else value) for key, value in metrics.items()}

    return compute


def _best_epoch(trainer) -> int | None:
    best = trainer.state.best_model_checkpoint
    if not best:
        return None
    step = int(Path(best).name.split("-")[-1])
    for entry in trainer.state.log_history:
        if entry.get("step") == step and "epoch" in entry:
            return int(round(entry["epoch"]))
    return None


def _history(trainer) -> list[dict[str, float]]:
    """Per epoch: the training loss and the selection split's eval loss and metrics (Trainer log history)."""
    by_epoch: dict[int, dict[str, float]] = {}
    for entry in trainer.state.log_history:
        if "epoch" not in entry or "train_runtime" in entry:
            continue
        row = by_epoch.setdefault(int(round(entry["epoch"])), {})
        if "loss" in entry:
            row["train_loss"] = entry["loss"]
        row.update({k: v for k, v in entry.items() if k.startswith("eval_") and not k.endswith(("runtime", "per_second"))})
    return [{"epoch": epoch, **row} for epoch, row in sorted(by_epoch.items())]


def _device_name(processes: int = 1) -> str:
    import torch

    each = " each" if processes > 1 else ""
    if torch.cuda.is_available():
        name = f"cuda ({torch.cuda.get_device_name(0)})"
    else:
        name = f"cpu ({os.cpu_count()} cores, {torch.get_num_threads()} threads{each})"
    return name if processes == 1 else f"{name} x {processes} processes"


def _summary(options, task, model, results, losses, best_epoch, history, train_seconds, truncation, frames,
             resume, processes: int = 1) -> dict:
    backbone_params = model.backbone_parameter_count()
    extra_params = model.extra_parameter_count()
    return {
        "task": task.name,
        "variant": options.variant,
        "backbone": options.backbone,
        "seed": options.seed,
        "main_metric": task.main_metric,
        "metrics": results,
        "eval_loss": losses,
        "best_epoch": best_epoch,
        "epochs": options.epochs,
        "history": history,
        "train_seconds": round(train_seconds, 3),
        "device": _device_name(processes),
        "backbone_parameters": backbone_params,
        "extra_parameters": extra_params,
        "extra_parameters_percent": round(100.0 * extra_params / backbone_params, 4),
        "examples": {split: len(frame) for split, frame in frames.items()},
        "truncation": truncation,
        "resumed_from": Path(resume).name if resume else None,
        "settings": {k: v for k, v in options.fingerprint().items() if k not in ("task", "variant", "backbone", "seed")},
    }


def summary_line(summary: dict) -> str:
    def fmt(value) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    metric = summary["main_metric"]
    scores = ", ".join(f"{split} {metric} {fmt(values.get(metric))}" for split, values in summary["metrics"].items())
    return (
        f"finetune: {summary['task']} {summary['variant']} seed {summary['seed']}: {scores}; best epoch "
        f"{summary['best_epoch']}, {summary['train_seconds']:.1f} s on {summary['device']}"
    )


def options_from_args(args: argparse.Namespace) -> FinetuneOptions:
    """Flags given on the command line, else the ``--hparams`` block, else the FinetuneOptions defaults."""
    from spanft.hparams import load_hparams

    names = {f.name for f in dataclasses.fields(FinetuneOptions)} - {"extra_callbacks"}
    values = load_hparams(args.hparams) if getattr(args, "hparams", None) else {}
    values.update({name: getattr(args, name) for name in names if getattr(args, name, None) is not None})
    return FinetuneOptions(**values)


def cli_finetune(args: argparse.Namespace) -> int:
    summary = run_finetune(options_from_args(args))
    if os.environ.get("RANK", "0") == "0":  # torchrun and accelerate launch number the processes in RANK
        print(summary_line(summary))
    return 0
