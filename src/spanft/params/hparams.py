"""Per-task fine-tuning hyper-parameters: params ``hparams.<task>`` (``spanft finetune --hparams FILE:KEY``).

A fine-tuning stage lists its task's block under ``params:``, so changing one task's block re-runs only that
task's runs.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from spanft.errors import SpanftError
from spanft.params.load import lookup

log = logging.getLogger("spanft")

# field -> type of the FinetuneOptions fields a hyper-parameter block may set
HPARAM_TYPES: dict[str, type] = {
    "epochs": int,
    "lr": float,
    "batch_size": int,
    "eval_batch_size": int,
    "max_seq_len": int,
    "max_spans": int,
    "max_span_len": int,
    "dropout": float,
    "cls_vector": str,
    "max_train_examples": int,
    "max_eval_examples": int,
}
OPTIONAL = ("max_spans", "max_train_examples", "max_eval_examples")  # null: the FinetuneOptions default
_AT_LEAST_ONE = ("epochs", "batch_size", "eval_batch_size", "max_seq_len", "max_spans", "max_span_len",
                 "max_train_examples", "max_eval_examples")


def hparam_problem(name: str, value: Any) -> str | None:
    """What is wrong with one hyper-parameter's value (unknown, type, range), or None when it is fine."""
    if name not in HPARAM_TYPES:
        return f"unknown hyper-parameter; valid: {', '.join(HPARAM_TYPES)}"
    wanted = HPARAM_TYPES[name]
    if value is None:
        return None if name in OPTIONAL else f"must be set ({_kind(wanted)})"
    numeric = wanted is float and isinstance(value, int)
    if isinstance(value, bool) or not (isinstance(value, wanted) or numeric):
        return f"expected {_kind(wanted)}, found {value!r}"
    if name in _AT_LEAST_ONE and value < 1:
        return f"must be at least 1, found {value!r}"
    if name == "lr" and not (math.isfinite(value) and value > 0):
        return f"must be a positive number, found {value!r}"
    if name == "dropout" and not 0 <= value < 1:
        return f"must satisfy 0 <= dropout < 1, found {value!r}"
    return None


def _kind(wanted: type) -> str:
    return {int: "an integer", float: "a number", str: "a string"}[wanted]


def load_hparams(spec: str) -> dict[str, Any]:
    """The checked hyper-parameter block named by ``FILE:KEY`` (``params.yaml:hparams.cola``)."""
    from spanft.params.load import load_params

    path, sep, key = spec.rpartition(":")
    if not sep or not path or not key:
        raise SpanftError(f"--hparams {spec!r}: expected FILE:KEY, e.g. params.yaml:hparams.cola")
    file = Path(path)
    if not file.is_file():
        raise SpanftError(f"--hparams: {file} not found")
    return hparams_block(load_params(file), key, file)


def hparams_block(tree: dict, key: str, file: str | Path = "params.yaml") -> dict[str, Any]:
    """The checked hyper-parameter block at dotted ``key`` of a params tree."""
    block = lookup(tree, key, file)
    if not isinstance(block, dict):
        raise SpanftError(f"{file}: {key} must be a mapping of hyper-parameters, found {type(block).__name__}")
    for name, value in block.items():
        problem = hparam_problem(str(name), value)
        if problem:
            raise SpanftError(f"{file}: {key}.{name}: {problem}")
    return {name: float(value) if HPARAM_TYPES[name] is float and value is not None else value
            for name, value in block.items()}
