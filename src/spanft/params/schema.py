"""``params.yaml``: its schema, the profile switch, and the check every ``spanft`` command run by DVC makes.

DVC silently ignores a key no stage reads, so a typo (``dict_sise: 100000``) would leave the default in force
without a word. :func:`check_params` rejects unknown keys (suggesting the closest known one), wrong types and
dangling references (a study naming a backbone or task that is not defined). ``spanft`` runs it before any
command that DVC starts (DVC sets ``DVC_STAGE`` and ``DVC_ROOT`` in a stage's environment), and
``spanft check-params`` runs it by hand.
"""

from __future__ import annotations

import argparse
import difflib
import logging
from pathlib import Path
from typing import Any

from spanft.errors import SpanftError

log = logging.getLogger("spanft")
from spanft.params.hparams import HPARAM_TYPES
from spanft.params.load import load_params

_INT, _FLOAT, _STR, _BOOL = int, float, str, bool


ENCODERS = ("cnn-max", "attention-max", "attention-attention")


SEGMENTATION_METHODS = ("ngram", "random")


_HPARAMS = HPARAM_TYPES  # one definition: what `finetune --hparams` accepts


_BUILD = {"source": _STR, "tokenizer": _STR, "lowercase": _BOOL, "vocab_size": _INT, "hidden": _INT,
          "layers": _INT, "heads": _INT, "intermediate": _INT, "max_len": _INT, "mlm_steps": _INT,
          "mlm_batch_size": _INT, "mlm_block_len": _INT, "mlm_lr": _FLOAT, "vocab_lines": _INT, "seed": _INT,
          "hub_id": _STR, "revision": _STR,
          "path": _STR}


_LIST = list


# key -> type, or a nested schema (dict); "*" matches any key (a user-named entry)
SCHEMA: dict[str, Any] = {
    "profile": _STR,
    "words": {"lowercase": _BOOL},
    "corpus": {"source": _STR, "tokens": _INT, "seed": _INT, "local_path": _STR, "hf_id": _STR,
               "hf_config": _STR, "hf_split": _STR, "tagged_sentences": _INT},
    "ngrams": {"min_n": _INT, "max_n": _INT, "min_count": _INT},
    "dict_sizes": _LIST,
    "dict_size": _INT,
    "data": {"source": _STR, "dir": _STR,
             "synthetic": {"train_size": _INT, "eval_size": _INT, "test_size": _INT, "seed": _INT}},
    "tasks": _LIST,
    "segmentation": {"random_seed": _INT},
    "chunker": {"tagger": _STR},
    "backbones": {"*": _BUILD},
    "hparams": {"*": _HPARAMS},
    "studies": {
        "glue": {"backbones": _LIST, "tasks": _LIST, "seeds": _LIST},
        "backbones": {"backbones": _LIST, "tasks": _LIST, "seeds": _LIST},
        "snli": {"backbones": _LIST, "seeds": _LIST, "encoders": _LIST},
        "ablation": {"backbones": _LIST, "tasks": _LIST, "seeds": _LIST},
        "ner": {"backbones": _LIST, "seeds": _LIST},
        "dictsize": {"backbones": _LIST, "tasks": _LIST, "seeds": _LIST, "methods": _LIST},
    },
    "reports": {"paper_names": {"*": _STR}, "mcnemar_tasks": _LIST,
                "figure2": {"tasks": _LIST, "examples": _INT}},
}


_CHOICES = {
    "profile": ("embedded", "paper"),
    "corpus.source": ("synthetic", "hf", "local"),
    "data.source": ("synthetic", "hf", "local"),
}


def check_params(tree: dict, path: str | Path = "params.yaml") -> None:
    """Raise :class:`SpanftError` naming the first bad key of a params tree (schema, choices, references)."""
    _check_node(tree, SCHEMA, "", path)
    _check_missing(tree, SCHEMA, "", path)
    _check_values(tree, path)
    _check_references(tree, path)


def _check_node(node: Any, schema: Any, dotted: str, path) -> None:
    if isinstance(schema, dict):
        if not isinstance(node, dict):
            raise SpanftError(f"{path}: {dotted} must be a mapping, found {node!r}")
        for key, value in node.items():
            key = str(key)
            child = schema.get(key, schema.get("*"))
            where = f"{dotted}.{key}" if dotted else key
            if child is None:
                close = difflib.get_close_matches(key, [k for k in schema if k != "*"], n=1)
                hint = f" (did you mean {_join(dotted, close[0])}?)" if close else ""
                valid = ", ".join(k for k in schema if k != "*")
                raise SpanftError(f"{path}: unknown key {where}{hint}; valid keys here: {valid}")
            _check_node(value, child, where, path)
        return
    if schema is _FLOAT and isinstance(node, int) and not isinstance(node, bool):
        return
    if node is None and dotted.split(".")[-1] in ("max_spans", "max_train_examples", "max_eval_examples"):
        return
    if not isinstance(node, schema) or (schema is _INT and isinstance(node, bool)):
        raise SpanftError(f"{path}: {dotted} must be {_type_name(schema)}, found {node!r}")


def _join(dotted: str, key: str) -> str:
    return f"{dotted}.{key}" if dotted else key


def _type_name(kind: type) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list"}[kind]


def _check_missing(node: dict, schema: dict, dotted: str, path) -> None:
    """Every key of a fixed-key section must be present (wildcard sections hold user-named entries)."""
    if "*" in schema:
        return
    for key, child in schema.items():
        where = _join(dotted, key)
        if key not in node:
            raise SpanftError(f"{path}: missing key {where}")
        if isinstance(child, dict):
            _check_missing(node[key], child, where, path)


def _get(tree: dict, dotted: str) -> Any:
    node = tree
    for part in dotted.split("."):
        node = node[part]
    return node


def _check_values(tree: dict, path) -> None:
    for dotted, choices in _CHOICES.items():
        value = _get(tree, dotted)
        if value not in choices:
            raise SpanftError(f"{path}: {dotted}: {value!r} is not one of {', '.join(choices)}")
    sizes = tree["dict_sizes"]
    if tree["dict_size"] <= 0:
        raise SpanftError(f"{path}: dict_size must be a positive number of entries, found {tree['dict_size']}")
    if not sizes or any(not isinstance(s, int) or isinstance(s, bool) or s <= 0 for s in sizes):
        raise SpanftError(f"{path}: dict_sizes must be a non-empty list of positive integers, found {sizes!r}")
    ngrams = tree["ngrams"]
    if not 1 <= ngrams["min_n"] <= ngrams["max_n"]:
        raise SpanftError(f"{path}: ngrams.min_n and ngrams.max_n must satisfy 1 <= min_n <= max_n")
    for name, block in tree["hparams"].items():
        for key in ("epochs", "lr", "batch_size", "max_seq_len"):
            if key in block and not block[key] > 0:
                raise SpanftError(f"{path}: hparams.{name}.{key} must be positive, found {block[key]!r}")
    for name, spec in tree["backbones"].items():
        if spec.get("source") not in ("build", "hub", "local"):
            raise SpanftError(f"{path}: backbones.{name}.source must be build, hub or local, found {spec.get('source')!r}")
        needed = {"hub": "hub_id", "local": "path"}.get(spec["source"])
        if needed and not spec.get(needed):
            raise SpanftError(f"{path}: backbones.{name}: source {spec['source']} needs {needed}")


def _check_references(tree: dict, path) -> None:
    from spanft.data.registry import TASKS

    tasks = tree["tasks"]
    for task in tasks:
        if task not in TASKS:
            raise SpanftError(f"{path}: tasks: unknown task {task!r}; valid tasks: {', '.join(TASKS)}")
    for study, spec in tree["studies"].items():
        for name in spec["backbones"]:
            if name not in tree["backbones"]:
                raise SpanftError(f"{path}: studies.{study}.backbones: {name!r} is not defined under backbones "
                                  f"(defined: {', '.join(tree['backbones'])})")
        for seed in spec["seeds"]:
            if not isinstance(seed, int) or isinstance(seed, bool):
                raise SpanftError(f"{path}: studies.{study}.seeds: {seed!r} is not an integer")
        study_tasks = spec.get("tasks", {"snli": ["snli"], "ner": ["conll2003"]}.get(study, []))
        for task in study_tasks:
            if task not in tasks:
                raise SpanftError(f"{path}: studies.{study}.tasks: {task!r} is not in tasks (prepared tasks: "
                                  f"{', '.join(tasks)})")
            if task not in tree["hparams"]:
                raise SpanftError(f"{path}: hparams.{task} is missing (studies.{study} fine-tunes {task})")
    for encoder in tree["studies"]["snli"]["encoders"]:
        if encoder not in ENCODERS:
            raise SpanftError(f"{path}: studies.snli.encoders: unknown encoder {encoder!r}; valid: {', '.join(ENCODERS)}")
    for method in tree["studies"]["dictsize"]["methods"]:
        if method not in SEGMENTATION_METHODS:
            raise SpanftError(f"{path}: studies.dictsize.methods: unknown method {method!r}; valid: "
                              f"{', '.join(SEGMENTATION_METHODS)}")


def check_params_file(path: str | Path) -> dict:
    tree = load_params(path)
    check_params(tree, path)
    return tree


def cli_check_params(args: argparse.Namespace) -> int:
    tree = check_params_file(args.file)
    print(f"{args.file}: ok (profile {tree['profile']})")
    return 0
