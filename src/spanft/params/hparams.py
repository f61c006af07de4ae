"""Fine-tuning hyper-parameters: one frozen dataclass whose fields carry their type, default, bounds and help.

:class:`HParams` is the one definition. Params ``hparams.<task>`` blocks are checked against it (a stage lists
its task's block under ``params:``, so changing one block re-runs only that task's runs), ``spanft finetune``
makes a flag of each field with the field's help text, and :class:`spanft.train.options.FinetuneOptions`
extends it with what identifies a run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from spanft.errors import SpanftError
from spanft.params.load import load_params, lookup


def _hparam(default: Any, help: str, kind: type, minimum: int | None = None, optional: bool = False,
            choices: tuple[str, ...] = (), maximum: int | None = None) -> Any:
    return field(default=default, metadata={"help": help, "kind": kind, "minimum": minimum, "optional": optional,
                                            "choices": choices, "maximum": maximum})


# Upper bounds where a value would train for years or exhaust memory (a typo, never a choice): the paper trains
# 2-3 epochs at batch 32 and 128 tokens; the longest backbones take 4,096 tokens.
MAX_EPOCHS = 1000
MAX_BATCH = 65536
MAX_TOKENS_PER_EXAMPLE = 65536


@dataclass(frozen=True, kw_only=True)
class HParams:
    """The hyper-parameters of one fine-tuning run (params ``hparams.<task>``; ``spanft finetune`` flags)."""

    epochs: int = _hparam(3, "training epochs (the best epoch on dev is kept)", int, minimum=1,
                          maximum=MAX_EPOCHS)
    lr: float = _hparam(2e-5, "peak learning rate of AdamW (linear decay)", float)
    batch_size: int = _hparam(32, "training batch size", int, minimum=1, maximum=MAX_BATCH)
    eval_batch_size: int = _hparam(64, "evaluation batch size", int, minimum=1, maximum=MAX_BATCH)
    max_seq_len: int = _hparam(128, "sub-word tokens per example, [CLS] and [SEP] included", int, minimum=1,
                               maximum=MAX_TOKENS_PER_EXAMPLE)
    max_spans: int | None = _hparam(None, "spans per example (default: max-seq-len / 2)", int, minimum=1,
                                    optional=True, maximum=MAX_TOKENS_PER_EXAMPLE)
    max_span_len: int = _hparam(16, "words per span", int, minimum=1, maximum=MAX_TOKENS_PER_EXAMPLE)
    dropout: float = _hparam(0.1, "dropout before the classifier, 0 <= dropout < 1", float)
    cls_vector: str = _hparam("hidden", "the [CLS] vector: hidden (last layer) | pooler", str,
                              choices=("hidden", "pooler"))
    max_train_examples: int | None = _hparam(None, "keep the first N training examples", int, minimum=1,
                                             optional=True)
    max_eval_examples: int | None = _hparam(None, "keep the first N of each eval/test split", int, minimum=1,
                                            optional=True)
    log_every_steps: int = _hparam(10, "optimizer steps between two points of the training-loss curve (and one at "
                                   "each epoch's end; the dev score is evaluated once per epoch)", int, minimum=1)


HPARAM_FIELDS = {f.name: f for f in fields(HParams)}


def hparam_problem(name: str, value: Any) -> str | None:
    """What is wrong with one hyper-parameter's value (unknown, type, range), or None when it is fine."""
    spec = HPARAM_FIELDS.get(name)
    if spec is None:
        return f"unknown hyper-parameter; valid: {', '.join(HPARAM_FIELDS)}"
    wanted, minimum, maximum = spec.metadata["kind"], spec.metadata["minimum"], spec.metadata["maximum"]
    if value is None:
        return None if spec.metadata["optional"] else f"must be set ({_kind(wanted)})"
    numeric = wanted is float and isinstance(value, int)
    if isinstance(value, bool) or not (isinstance(value, wanted) or numeric):
        return f"expected {_kind(wanted)}, found {value!r}"
    if spec.metadata["choices"] and value not in spec.metadata["choices"]:
        return f"{value!r} is not one of {', '.join(spec.metadata['choices'])}"
    if minimum is not None and value < minimum:
        return f"must be at least {minimum}, found {value!r}"
    if maximum is not None and value > maximum:
        return f"must be at most {maximum:,}, found {value!r}"
    if name == "lr":
        return lr_problem(value)
    if name == "dropout" and not 0 <= value < 1:
        return f"must satisfy 0 <= dropout < 1, found {value!r}"
    return None


MAX_LR = 1.0  # AdamW fine-tuning rates are ~1e-5 .. 1e-3; above 1 is a typo (2e5 for 2e-5), never a choice


def lr_problem(value: Any) -> str | None:
    """Why ``value`` is no plausible learning rate (0 < lr <= 1), or None."""
    if not (math.isfinite(value) and 0 < value <= MAX_LR):
        hint = " (a typo for a negative exponent, like 2e5 for 2e-5?)" if math.isfinite(value) and value > MAX_LR else ""
        return f"must satisfy 0 < lr <= {MAX_LR:g}, found {value!r}{hint}"
    return None


def _kind(wanted: type) -> str:
    return {int: "an integer", float: "a number", str: "a string"}[wanted]


def checked_hparams(block: Any, where: str) -> dict[str, Any]:
    """The hyper-parameters a params block sets, checked and typed (``where``: ``params.yaml: hparams.cola``)."""
    if not isinstance(block, dict):
        raise SpanftError(f"{where} must be a mapping of hyper-parameters, found {type(block).__name__}")
    for name, value in block.items():
        problem = hparam_problem(str(name), value)
        if problem:
            shown = str(name).encode("ascii", "backslashreplace").decode("ascii")  # a look-alike letter shows
            raise SpanftError(f"{where}.{shown}: {problem}")
    return {name: float(value) if HPARAM_FIELDS[name].metadata["kind"] is float and value is not None else value
            for name, value in block.items()}


def load_hparams(spec: str) -> dict[str, Any]:
    """The checked hyper-parameter block named by ``FILE:KEY`` (``params.yaml:hparams.cola``)."""
    path, sep, key = spec.rpartition(":")
    if not sep or not path or not key:
        raise SpanftError(f"--hparams {spec!r}: expected FILE:KEY, e.g. params.yaml:hparams.cola")
    file = Path(path)
    if not file.is_file():
        raise SpanftError(f"--hparams: {file} not found")
    return checked_hparams(lookup(load_params(file), key, file), f"{file}: {key}")
