"""One fine-tuning run with the HF ``Trainer``: a backbone, a variant, a seed, a task.

Variants: ``baseline`` (plain fine-tuning, [CLS] head), ``sf`` (span fine-tuning on n-gram spans),
``cnn-noseg`` (the same CNNs over all tokens, no segmentation: the paper's "+CNN"), ``random-seg`` and
``chunker-seg`` (sf on random / chunker spans; the data directory decides which spans those are).

Outputs: ``<out>/predictions/<split>.tsv`` for every eval and test split present, ``<out>/dvclive/`` (the
training curves, logged by DVCLive while the run trains: :mod:`spanft.train.curves`) and ``<out>/metrics.json``,
written last. Train and the dev splits must be in the data directory; a test split that
is absent (many users hold GLUE train/dev only) means no test predictions: ``metrics.json`` lists the splits
the run had and those it lacked (``splits``), and the inputs it read (``inputs``: the backbone's and the task
data's provenance, :mod:`spanft.data.provenance`). The run directory is built beside ``<out>`` and renamed into place at the end, so an interrupted
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

import dataclasses
import json
import logging
import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

import torch
from transformers import set_seed
from transformers.trainer_utils import enable_full_determinism

from spanft.data.columns import read_prepared
from spanft.data.curves import CURVES_DIR
from spanft.data.provenance import directory_digest, local_record, read_provenance
from spanft.data.registry import TaskSpec
from spanft.fileio import atomic_open, atomic_path
from spanft.model.features import FeatureConfig, SpanCollator, encode_split
from spanft.model.loading import backbone_is_uncased, check_max_seq_len, load_backbone
from spanft.model.span_model import SpanModel
from spanft.stage.session import first_time_this_session
from spanft.threads import use_threads
from spanft.train.checkpoints import (
    ElapsedCallback,
    barrier,
    clear_checkpoints,
    elapsed_seconds,
    prepare_checkpoint_dir,
)
from spanft.train.curves import TrainingCurves
from spanft.train.finished import keep_finished_checkpoints, mark_finished
from spanft.train.options import FinetuneOptions, span_config_for
from spanft.train.precision import device_name
from spanft.train.preflight import preflight
from spanft.train.saves import checkpoint_triggers
from spanft.train.scoring import nan_to_none, score_split, selection_metrics
from spanft.train.timing import Phases, StepTimer
from spanft.train.trainer import SpanTrainer, training_arguments

log = logging.getLogger("spanft")

MEASURED_KEYS = ("train_seconds", "step_time")  # metrics.json keys measured on the clock: they vary run to run


def load_splits(options: FinetuneOptions, task: TaskSpec) -> dict[str, Any]:
    """DataFrames of the train, eval and test splits (checked by the preflight), cut to the example limits."""
    data = Path(options.data)
    frames = {}
    for split in task.all_splits:
        if task.splits[split].optional and not (data / f"{split}.parquet").is_file():
            log.info("%s: no %s split (absent from the task data): no %s predictions", task.name, split, split)
            continue
        frame = read_prepared(data / f"{split}.parquet")
        limit = options.max_train_examples if split == task.train_split else options.max_eval_examples
        if limit is not None and len(frame) > limit:
            log.info("%s: keeping the first %d of %d examples", split, limit, len(frame))
            frame = frame.iloc[:limit].reset_index(drop=True)
        frames[split] = frame
    return frames


def _drop_spans(frame):
    """Prepared columns only: the baseline and cnn-noseg never look at spans."""
    return frame.drop(columns=[c for c in ("spans_a", "spans_b") if c in frame.columns])


def warn_if_case_lost(frames: dict[str, Any], tokenizer, backbone: str) -> None:
    """Cased task data on an uncased backbone loses its case: a warning, not an error."""
    if not backbone_is_uncased(tokenizer):
        return
    sample = frames[next(iter(frames))]["words_a"].head(200)
    if any(any(ch.isupper() for word in words for ch in word) for words in sample):
        message = f"warning: the task data is cased but backbone {backbone} is uncased: case is folded (by design)"
        if first_time_this_session(message):  # once per dvc run, not once per fine-tuning stage
            log.warning("%s", message)


def write_predictions(path: Path, idx, gold: list[str], pred: list[str]) -> None:
    with atomic_open(path) as handle:
        handle.write("idx\tgold\tpred\n")
        for i, g, p in zip(idx, gold, pred):
            handle.write(f"{int(i)}\t{g}\t{p}\n")


def run_finetune(options: FinetuneOptions) -> dict[str, Any]:
    """Fine-tune, predict every eval/test split, write the run directory. Returns metrics.json's content."""
    phases = Phases()
    task, out = preflight(options)
    # Built first: under torchrun / accelerate launch this joins the process group.
    args = training_arguments(options, task, str(options.checkpoint_path()))
    # After it (accelerate sets its own count when it starts a CPU process group), before any torch work: the
    # count decides the float sums
    threads = use_threads(options.threads)
    main, processes = args.process_index == 0, args.world_size
    if not main:
        log.setLevel(logging.ERROR)  # the replicas would repeat the main process's messages
    phases.mark("checks")
    frames = load_splits(options, task)
    span_config = span_config_for(options, task)
    if not span_config.needs_spans:
        frames = {split: _drop_spans(frame) for split, frame in frames.items()}
    phases.mark("read data")
    backbone, tokenizer = load_backbone(options.backbone)
    check_max_seq_len(backbone, options.backbone, options.max_seq_len)
    phases.mark("load backbone")
    warn_if_case_lost(frames, tokenizer, options.backbone)
    feature_config = FeatureConfig(options.max_seq_len, options.resolved_max_spans(), options.max_span_len)
    datasets, truncation = {}, {}
    for split, frame in frames.items():
        datasets[split], stats = encode_split(frame, tokenizer, task, feature_config, name=split)
        truncation[split] = _as_dict(stats)
    if main:  # everything is read and checked: only now does the previous run stop looking complete
        _retire_previous_metrics(out)
    phases.mark("tokenize")

    (enable_full_determinism if not torch.cuda.is_available() else set_seed)(options.seed)
    model = SpanModel(backbone, span_config)  # the new layers' initial weights depend on the seed
    with args.main_process_first(local=False, desc="checkpoint directory"):  # the others wait for the main one
        resume = prepare_checkpoint_dir(options, task, main=main, processes=processes, threads=threads)
    offset = elapsed_seconds(resume)
    start = time.perf_counter()
    selection = task.selection_split
    timer = StepTimer()
    curves = options.checkpoint_path() / CURVES_DIR  # beside the checkpoints while it trains, then in the run
    trainer = SpanTrainer(
        model=model,
        args=args,
        train_dataset=_model_columns(datasets[task.train_split]),
        eval_dataset=_model_columns(datasets[selection]),
        data_collator=SpanCollator(tokenizer, max_span_len=span_config.max_span_len),
        compute_metrics=selection_metrics(task, frames[selection]),
        callbacks=[ElapsedCallback(start, offset), timer, *checkpoint_triggers(),
                   *([TrainingCurves(curves)] if main else []), *options.extra_callbacks],
    )
    phases.mark("build model")
    trainer.train(resume_from_checkpoint=resume)
    train_seconds = offset + time.perf_counter() - start
    phases.mark("train loop (with per-epoch evaluation and checkpoints)")
    best_epoch = _best_epoch(trainer)
    history = _history(trainer)

    trainer.compute_metrics = None  # predict() below is scored by score_split, split by split
    results: dict[str, dict] = {}
    losses: dict[str, float | None] = {}  # of the loaded best model: equals its epoch's eval_loss in history
    written: dict[str, tuple[list[str], list[str]]] = {}
    for split in [s for s in (*task.eval_splits, *task.test_splits) if s in frames]:  # every process predicts
        output = trainer.predict(_model_columns(datasets[split]), metric_key_prefix=split)
        _check_prediction_count(split, output.predictions, frames[split])
        token_labels = output.label_ids if task.is_tagging else None
        metrics, gold, pred = score_split(task, frames[split], output.predictions, token_labels)
        written[split] = (gold, pred)
        if split in task.eval_splits:
            results[split] = {key: nan_to_none(value) for key, value in metrics.items()}
            losses[split] = output.metrics.get(f"{split}_loss")
    summary = _summary(options, task, model, results, losses, best_epoch, history, train_seconds, truncation,
                       frames, resume, processes, threads, timer.summary())
    summary["inputs"] = run_provenance(options.backbone, options.data, backbone)
    phases.mark("predict")
    if main:
        write_run_directory(out, frames, written, summary, curves)
        if keep_finished_checkpoints():  # a fan-out job clears them once DVC has saved the run
            mark_finished(options.checkpoint_path(), out)
        else:
            clear_checkpoints(options.checkpoint_path())
    phases.mark("write")
    log.info("finetune phases: %s; of the training, %.2f s in %d optimizer steps", phases.line(),
             sum(timer.walls), len(timer.walls))
    barrier()  # the replicas return once the run directory is in place
    return summary


def _retire_previous_metrics(out: Path) -> None:
    """A rerun that stops half-way must not leave the previous run's metrics.json looking like its own."""
    stale = out / "metrics.json"
    if stale.is_file():
        stale.unlink()
        log.info("%s: removed the previous run's metrics.json", stale)


def write_run_directory(out: Path, frames: dict[str, Any], written: dict[str, tuple[list[str], list[str]]],
                        summary: dict, curves: Path | None = None) -> None:
    """Predictions of every split, the training curves (the DVCLive directory ``curves``), then metrics.json,
    built beside ``out`` and renamed into place."""
    with atomic_path(out, made_by="finetune") as tmp:
        if curves is not None:
            shutil.copytree(curves, tmp / CURVES_DIR)
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
    """Per epoch: the training loss (the mean over the epoch's optimizer steps: its logs' means weighted by the
    steps each covers) and the selection split's eval loss and metrics (Trainer log history).

    Keys in one order (epoch, train_loss, then the eval keys sorted), whatever order the log holds them in:
    a resumed run logs its epochs' training and evaluation entries in another order than an uninterrupted one.
    """
    by_epoch: dict[int, dict[str, float]] = {}
    losses: dict[int, list[tuple[float, int]]] = {}
    entries = [e for e in trainer.state.log_history if "epoch" in e and "train_runtime" not in e]
    previous = 0
    for entry in sorted((e for e in entries if "loss" in e), key=lambda e: e["step"]):
        losses.setdefault(_epoch_of(entry), []).append((entry["loss"], entry["step"] - previous))
        previous = entry["step"]
    for entry in entries:
        row = by_epoch.setdefault(_epoch_of(entry), {})
        row.update({k: v for k, v in entry.items() if k.startswith("eval_") and not k.endswith(("runtime", "per_second"))})
    for epoch, pairs in losses.items():
        steps = sum(n for _, n in pairs)
        mean = sum(loss * n for loss, n in pairs) / steps if steps else pairs[-1][0]
        by_epoch.setdefault(epoch, {})["train_loss"] = mean
    return [{"epoch": epoch, **{key: row[key] for key in sorted(row, key=lambda k: (k != "train_loss", k))}}
            for epoch, row in sorted(by_epoch.items())]


def _epoch_of(entry: dict) -> int:
    """The epoch a log belongs to: 1 for a log during the first epoch or at its end (``epoch`` in (0, 1])."""
    return max(1, math.ceil(round(entry["epoch"], 6)))


def _summary(options, task, model, results, losses, best_epoch, history, train_seconds, truncation, frames,
             resume, processes: int = 1, threads: int = 1, step_time: dict | None = None) -> dict:
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
        "step_time": step_time,  # median seconds per optimizer step, wall and CPU (spanft.train.timing)
        "device": device_name(processes),
        "threads": threads,
        "backbone_parameters": backbone_params,
        "extra_parameters": extra_params,
        "extra_parameters_percent": round(100.0 * extra_params / backbone_params, 4),
        "examples": {split: len(frame) for split, frame in frames.items()},
        "splits": {"present": list(frames), "absent": [split for split in task.all_splits if split not in frames]},
        "truncation": truncation,
        "resumed_from": Path(resume).name if resume else None,
        "settings": {k: v for k, v in options.fingerprint().items() if k not in ("task", "variant", "backbone", "seed")},
    }


def run_provenance(backbone: str, data: str | Path, model=None) -> dict:
    """What the run read: the provenance records of its backbone and its task data.

    Directories written by the pipeline carry ``provenance.json``; anything else is identified here: a hub id
    by the commit transformers loaded, a directory by the digest of its content.
    """
    path = Path(backbone)
    if path.is_dir():
        backbone_record = read_provenance(path) or local_record("local", path.resolve(), directory_digest(path))
    else:
        commit = getattr(getattr(model, "config", None), "_commit_hash", None)
        backbone_record = {"source": "hub", "id_or_path": backbone, "revision": commit}
    data_record = read_provenance(data) or local_record("unrecorded", Path(data).resolve(), directory_digest(data))
    return {"backbone": backbone_record, "data": data_record}


def summary_line(summary: dict) -> str:
    def fmt(value) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    metric = summary["main_metric"]
    scores = ", ".join(f"{split} {metric} {fmt(values.get(metric))}" for split, values in summary["metrics"].items())
    return (
        f"finetune: {summary['task']} {summary['variant']} seed {summary['seed']}: {scores}; best epoch "
        f"{summary['best_epoch']}, {summary['train_seconds']:.1f} s on {summary['device']}"
    )


def run_and_print(options: FinetuneOptions) -> dict:
    """Run, and print the summary line once: in the first process of a torchrun or accelerate launch (RANK 0)."""
    summary = run_finetune(options)
    if os.environ.get("RANK", "0") == "0":
        print(summary_line(summary))
    return summary
