"""The HF ``Trainer`` as this project uses it: its arguments, checkpoint saving and an exact eval loss."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import safetensors.torch
import torch
from transformers import PreTrainedModel, Trainer, TrainerCallback, TrainingArguments
from transformers.trainer import TRAINING_ARGS_NAME
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.utils import SAFE_WEIGHTS_NAME

from spanft.data.registry import TaskSpec
from spanft.model.features import LengthGroupedSampler, example_lengths
from spanft.model.span_model import classification_loss, regression_loss
from spanft.train.options import MAX_GRAD_NORM, WEIGHT_DECAY, FinetuneOptions
from spanft.train.precision import run_precision

log = logging.getLogger("spanft")


class SpanTrainer(Trainer):
    """A Trainer that batches examples of similar length, and whose checkpoints of a plain ``nn.Module``
    survive shared tensors.

    Training batches come from :class:`spanft.model.features.LengthGroupedSampler` over the global batch
    (per-device batch x processes): with the collator's dynamic padding a batch is padded to about its own
    length, not to ``max_seq_len``. Evaluation keeps the Trainer's sequential order (predictions are written
    in example order).

    For a model that is not a ``PreTrainedModel`` the stock ``Trainer._save`` calls
    ``safetensors.torch.save_file(model.state_dict())``, which refuses tensors that share memory (tied
    embeddings of some backbones). ``safetensors.torch.save_model`` keeps one name per storage, and the
    Trainer's non-strict ``load_state_dict`` on resume / best-model loading fills the tied twin.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_callback(_LossCarriedOver(self))
        self.add_callback(_LogAtEpochEnd())
        for stock, quieter in ((PrinterCallback, _EpochPrinter), (ProgressCallback, _EpochProgress)):
            if self.pop_callback(stock) is not None:
                self.add_callback(quieter)

    def _save_checkpoint(self, model, trial) -> None:
        """Also keep the training loss summed since the last log: a checkpoint taken mid-epoch (by wall time)
        would otherwise lose the first part of that epoch's mean training loss when the run resumes from it."""
        super()._save_checkpoint(model, trial)
        loss = getattr(self, "_tr_loss", None)
        if loss is not None:
            folder = Path(self.args.output_dir) / f"checkpoint-{self.state.global_step}"
            state = {"loss_sum": float(loss.item()), "last_logged": self._globalstep_last_logged}
            (folder / _loss_file(self.args.process_index)).write_text(json.dumps(state), encoding="utf-8")

    def _get_train_sampler(self, train_dataset=None):
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        args = self.args
        batch = args.train_batch_size * args.gradient_accumulation_steps * max(1, args.world_size)
        seed = args.data_seed if args.data_seed is not None else args.seed
        return LengthGroupedSampler(example_lengths(dataset), batch, seed)

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


class _LogAtEpochEnd(TrainerCallback):
    """A training log at each epoch's end too, besides one every ``logging_steps`` optimizer steps: an epoch's
    mean training loss is then the step-weighted mean of its own logs (``finetune._history``)."""

    def on_epoch_end(self, args, state, control, **kwargs):
        control.should_log = True
        return control


def _epoch_end(logs: dict | None) -> bool:
    """A log at an epoch's end (training, evaluation, the closing summary): the lines a log file or terminal gets."""
    return logs is None or float(logs.get("epoch", 0)).is_integer()


class _EpochPrinter(PrinterCallback):
    """The Trainer's printed logs (off a terminal) at epoch ends only: the curves' points stay in dvclive/."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if _epoch_end(logs):
            super().on_log(args, state, control, logs=logs, **kwargs)


class _EpochProgress(ProgressCallback):
    """The Trainer's bars (on a terminal), with its log lines at epoch ends only."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if _epoch_end(logs):
            super().on_log(args, state, control, logs=logs, **kwargs)


def _loss_file(process: int) -> str:
    return f"spanft_loss-{process}.json"


class _LossCarriedOver(TrainerCallback):
    """On resuming from a checkpoint, the training loss summed since the last log before it (each process its own)."""

    def __init__(self, trainer: SpanTrainer):
        self.trainer = trainer

    def on_train_begin(self, args, state, control, **kwargs):
        saved = Path(args.output_dir) / f"checkpoint-{state.global_step}" / _loss_file(args.process_index)
        if state.global_step > 0 and saved.is_file() and hasattr(self.trainer, "_tr_loss"):
            carried = json.loads(saved.read_text(encoding="utf-8"))
            self.trainer._tr_loss += carried["loss_sum"]
            self.trainer._globalstep_last_logged = carried["last_logged"]


def _exact_loss(span_config, logits, labels) -> float:
    """The mean loss over every labelled example (token, for tagging) of a split, from the gathered outputs.

    The Trainer's own eval loss averages per-batch means, weighting a short last batch like a full one, and
    under several processes it also counts the copies that pad the last batch: it would depend on the batch
    size and the number of processes. This one does not.
    """
    logits = logits[0] if isinstance(logits, tuple) else logits
    loss_fn = regression_loss if span_config.task_type == "regression" else classification_loss
    loss = loss_fn(torch.as_tensor(logits), torch.as_tensor(labels))
    return float(loss)


def training_arguments(options: FinetuneOptions, task: TaskSpec, output_dir: str) -> TrainingArguments:
    cuda = torch.cuda.is_available()
    precision = run_precision()
    return TrainingArguments(
        output_dir=output_dir,
        num_train_epochs=options.epochs,
        learning_rate=options.lr,
        per_device_train_batch_size=options.batch_size,
        per_device_eval_batch_size=options.eval_batch_size,
        weight_decay=WEIGHT_DECAY,
        max_grad_norm=MAX_GRAD_NORM,
        warmup_steps=0.1,  # a float below 1 is a ratio of the total steps (transformers 5)
        lr_scheduler_type="linear",
        optim="adamw_torch_fused",  # one fused kernel per step: fewer launches than the for-each form
        eval_strategy="epoch",
        save_strategy="epoch",
        save_total_limit=1,  # the best checkpoint is kept besides the last one
        load_best_model_at_end=True,
        metric_for_best_model=task.main_metric,
        greater_is_better=True,
        logging_strategy="steps",  # the curves' points (spanft.train.curves), and one at each epoch's end
        logging_steps=options.log_every_steps,
        seed=options.seed,
        data_seed=options.seed,
        full_determinism=not cuda,
        bf16=precision.bf16,
        fp16=precision.fp16,
        tf32=True if precision.tf32 else None,
        use_cpu=not cuda,
        dataloader_num_workers=0,
        label_names=["labels"],
        report_to="none",
        disable_tqdm=None if sys.stderr.isatty() else True,  # bars only on a terminal; a log gets a line an epoch
    )
