"""Per-task fine-tuning hyper-parameters: params ``hparams.<task>`` (``spanft finetune --hparams FILE:KEY``).

A fine-tuning stage lists its task's block under ``params:``, so changing one task's block re-runs only that
task's runs.
"""

from __future__ import annotations

import logging
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
    return {name: _checked(file, key, name, value) for name, value in block.items()}


def _checked(file: Path, key: str, name: str, value: Any) -> Any:
    if name not in HPARAM_TYPES:
        raise SpanftError(f"{file}: {key}.{name}: unknown hyper-parameter; valid: {', '.join(HPARAM_TYPES)}")
    wanted = HPARAM_TYPES[name]
    if value is None and name in ("max_spans", "max_train_examples", "max_eval_examples"):
        return None
    if wanted is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if wanted is float and isinstance(value, str):  # YAML 1.1 reads 5e-4 (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            pass
    if not isinstance(value, wanted) or isinstance(value, bool):
        raise SpanftError(f"{file}: {key}.{name}: expected {wanted.__name__}, found {value!r}")
    return value
