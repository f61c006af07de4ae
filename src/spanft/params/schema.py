"""``params.yaml``: its schema, and the check every pipeline stage makes before it reads its block.

DVC silently ignores a key no stage reads, so a typo (``dict_sise: 100000``) would leave the default in force
without a word. :func:`check_params` rejects unknown keys (suggesting the closest known one), wrong types and
dangling references (a study naming a backbone or task that is not defined). Every ``pipeline/`` stage script
runs it once (:func:`spanft.params.plan.load_plan`), and ``spanft check-params`` runs it by hand.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spanft.errors import Context, SpanftError, parts
from spanft.params import ids
from spanft.params.cluster import settings_from_params
from spanft.params.hparams import HPARAM_FIELDS, hparam_problem, lr_problem
from spanft.params.load import load_params
from spanft.params.references import (  # noqa: F401 (re-exported)
    ENCODERS,
    FIXED_TASKS,
    SEGMENTATION_METHODS,
    _backbone_specs,
    _check_folders,
    _check_real_data,
    _check_references,
    _get,
)

log = logging.getLogger("spanft")

_INT, _FLOAT, _STR, _BOOL = int, float, str, bool


_HPARAMS = {name: spec.metadata["kind"] for name, spec in HPARAM_FIELDS.items()}  # one definition: HParams
_OPTIONAL_HPARAMS = {name for name, spec in HPARAM_FIELDS.items() if spec.metadata["optional"]}


_BUILD = {"tokenizer": _STR, "lowercase": _BOOL, "vocab_size": _INT, "hidden": _INT, "layers": _INT, "heads": _INT,
          "intermediate": _INT, "max_len": _INT, "mlm_steps": _INT, "mlm_batch_size": _INT, "mlm_block_len": _INT,
          "mlm_lr": _FLOAT, "vocab_lines": _INT, "seed": _INT}
_TOKENIZER = {"tokenizer_id": _STR, "tokenizer_revision": _STR, "lowercase": _BOOL}  # the authors' tokenizer
_HUB = {"hub_id": _STR, "revision": _STR, "seed": _INT, **_TOKENIZER}
_LOCAL = {"path": _STR, **_TOKENIZER}


@dataclass(frozen=True)
class ListOf:
    """A list of ``kind`` values, each given once."""

    kind: type


_STRS, _INTS = ListOf(str), ListOf(int)


# key -> type, or a nested schema (dict); "*" matches any key (a user-named entry)
SCHEMA: dict[str, Any] = {
    "profile": _STR,
    "words": {"lowercase": _BOOL},
    "corpus": {"source": _STR, "tokens": _INT, "seed": _INT, "local_path": _STR, "hf_id": _STR,
               "hf_config": _STR, "hf_split": _STR, "hf_revision": _STR, "tagged_sentences": _INT},
    "ngrams": {"min_n": _INT, "max_n": _INT, "min_count": _INT},
    "dict_sizes": _INTS,
    "dict_size": _INT,
    "threads": _INT,  # torch threads per training process; 0: spanft.threads' rule (cores / processes sharing them)
    "data": {"source": _STR, "dir": _STR, "revisions": {"*": _STR},
             "synthetic": {"train_size": _INT, "eval_size": _INT, "test_size": _INT, "seed": _INT}},
    "tasks": {"*": _STR},  # task -> its folder of official files under data.dir
    "segmentation": {"random_seed": _INT},
    "chunker": {"tagger": _STR, "source": _STR, "conll_dir": _STR},
    "backbones": {"build": {"*": _BUILD}, "hub": {"*": _HUB}, "local": {"*": _LOCAL}},
    "hparams": {"*": _HPARAMS},
    "studies": {
        "glue": {"backbones": _STRS, "tasks": _STRS, "seeds": _INTS},
        "backbones": {"backbones": _STRS, "tasks": _STRS, "seeds": _INTS},
        "snli": {"backbones": _STRS, "seeds": _INTS, "encoders": _STRS},
        "ablation": {"backbones": _STRS, "tasks": _STRS, "seeds": _INTS},
        "ner": {"backbones": _STRS, "seeds": _INTS},
        "dictsize": {"backbones": _STRS, "tasks": _STRS, "seeds": _INTS, "methods": _STRS},
    },
    "reports": {"paper_names": {"*": _STR}, "mcnemar_tasks": _STRS,
                "bootstrap": {"resamples": _INT, "seed": _INT},
                "figure2": {"tasks": _STRS, "examples": _INT}},
    "cluster": {"executor": _STR, "partition": _STR, "account": _STR, "gpus_per_job": _INT, "cpus_per_job": _INT,
                "mem_gb": _INT, "time_min": _INT, "max_parallel": _INT, "folder": _STR, "remote": _STR,
                "setup": _STRS, "signal_delay_s": _INT, "checkpoint_every_s": _INT, "startup_s": _INT,
                "max_timeouts": _INT, "scheduler_patience_s": _INT},
}


_CHOICES = {
    "profile": ("embedded", "paper", "small"),
    "corpus.source": ("synthetic", "hf", "local"),
    "data.source": ("synthetic", "hf", "local"),
    "chunker.source": ("synthetic", "conll", "nltk"),
}


def check_params(tree: dict, path: str | Path = "params.yaml") -> None:
    """Raise :class:`SpanftError` naming the first bad key of a params tree (schema, choices, references)."""
    _check_node(tree, SCHEMA, "", path)
    _check_missing(tree, SCHEMA, "", path)
    _check_values(tree, path)
    _check_real_data(tree, path)
    _check_folders(tree, path)
    _check_references(tree, path)


def _check_node(node: Any, schema: Any, dotted: str, path) -> None:
    if isinstance(schema, dict):
        if not isinstance(node, dict):
            hint = " (task: its folder under data.dir, e.g. cola: glue_data/CoLA)" if dotted == "tasks" else ""
            raise SpanftError(f"{path}: {dotted} must be a mapping{hint}, found {node!r}")
        for key, value in node.items():
            key = str(key)
            child = schema.get(key, schema.get("*"))
            where = f"{dotted}.{key}" if dotted else key
            if child is None:
                close = difflib.get_close_matches(key, [k for k in schema if k != "*"], n=1)
                blank = any(c.isspace() for c in key)  # 'min_count ' would read exactly as its suggestion
                notes = ["a blank inside the quotes"] * blank
                notes += [f"did you mean {_join(dotted, match)}?" for match in close]
                hint = f" ({'; '.join(notes)})" if notes else ""
                valid = ", ".join(k for k in schema if k != "*")
                shown = where.encode("ascii", "backslashreplace").decode("ascii")  # a look-alike (Cyrillic е) shows
                shown = f"'{shown}'" if blank else shown
                raise SpanftError(parts(f"{path}: unknown key {shown}{hint}", Context(f"; valid keys here: {valid}")))
            _check_node(value, child, where, path)
        return
    if isinstance(schema, ListOf):
        _check_list(node, schema.kind, dotted, path)
        return
    if schema is _FLOAT and isinstance(node, int) and not isinstance(node, bool):
        return
    if node is None and dotted.startswith("hparams.") and dotted.split(".")[-1] in _OPTIONAL_HPARAMS:
        return
    if not isinstance(node, schema) or (schema is _INT and isinstance(node, bool)):
        raise SpanftError(f"{path}: {dotted} must be {_type_name(schema)}, found {node!r}")


def _check_list(node: Any, kind: type, dotted: str, path) -> None:
    if not isinstance(node, list):
        raise SpanftError(f"{path}: {dotted} must be a list, found {node!r}")
    for item in node:
        if not isinstance(item, kind) or isinstance(item, bool):
            raise SpanftError(f"{path}: {dotted}: {item!r} is not {_type_name(kind)}")
        if node.count(item) > 1:
            raise SpanftError(f"{path}: {dotted}: {item!r} is listed twice")


def _join(dotted: str, key: str) -> str:
    return f"{dotted}.{key}" if dotted else key


def _type_name(kind: type) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list"}[kind]


# keys a params file of an earlier version lacks, with what to write
_ADDED_KEYS = {"threads": " (added in this version: torch threads per training process; write `threads: 1` as the "
                          "embedded profile does, or `threads: 0` for the cores divided by the processes sharing them)"}


def _check_missing(node: dict, schema: dict, dotted: str, path) -> None:
    """Every key of a fixed-key section must be present (wildcard sections hold user-named entries)."""
    if "*" in schema:
        return
    for key, child in schema.items():
        where = _join(dotted, key)
        if key not in node:
            raise SpanftError(f"{path}: missing key {where}{_ADDED_KEYS.get(where, '')}")
        if isinstance(child, dict):
            _check_missing(node[key], child, where, path)


def _check_values(tree: dict, path) -> None:
    for dotted, choices in _CHOICES.items():
        value = _get(tree, dotted)
        if value not in choices:
            raise SpanftError(f"{path}: {dotted}: {value!r} is not one of {', '.join(choices)}")
    if tree["dict_size"] <= 0:
        raise SpanftError(f"{path}: dict_size must be a positive number of entries, found {tree['dict_size']}")
    _check_counts(tree, path)
    _check_threads(tree["threads"], path)
    _check_ngrams(tree["ngrams"], path)
    _check_seeds(tree, path)
    _check_sources(tree, path)
    settings_from_params(tree["cluster"], str(path))
    for name, block in tree["hparams"].items():
        for key, value in block.items():
            problem = hparam_problem(str(key), value)
            if problem:
                raise SpanftError(f"{path}: hparams.{name}.{key}: {problem}")
    for name, (source, spec) in _backbone_specs(tree, path).items():
        _check_backbone(str(name), source, spec, path)


# counts and sizes that must be at least 1 (dict_size has its own message above)
_AT_LEAST_ONE = ("corpus.tokens", "corpus.tagged_sentences", "ngrams.min_count", "data.synthetic.train_size",
                 "data.synthetic.eval_size", "data.synthetic.test_size", "reports.figure2.examples",
                 "reports.bootstrap.resamples")
# upper bounds where a value would run for years or exhaust memory (a typo, never a choice): WikiText-103 is
# 103 million words, the largest GLUE training set (MNLI) 393 thousand examples
_AT_MOST = {"corpus.tokens": 10**10, "corpus.tagged_sentences": 10**7, "data.synthetic.train_size": 10**7,
            "data.synthetic.eval_size": 10**7, "data.synthetic.test_size": 10**7, "reports.figure2.examples": 1000,
            "reports.bootstrap.resamples": 10**6}
_SEEDS = ("corpus.seed", "data.synthetic.seed", "segmentation.random_seed",
          "reports.bootstrap.seed")
BOOTSTRAP_MIN_RESAMPLES = 39  # spanft.report.bootstrap.MIN_RESAMPLES (params import no report code)
MIN_N, MAX_N = 2, 5  # n-grams of 2 to 5 words (the paper's); spanft.text.ngrams holds the same bounds
SEED_LIMIT = 2**32  # numpy and torch seeds: 0 .. 2**32 - 1


MAX_THREADS = 1024  # the most torch threads a params file or a flag may ask for


def _check_threads(threads: int, path) -> None:
    if not 0 <= threads <= MAX_THREADS:
        raise SpanftError(f"{path}: threads must be 0 (the cores this process may use, divided by the training "
                          f"processes sharing them) or a count from 1 to {MAX_THREADS}, found {threads!r}")


def _check_counts(tree: dict, path) -> None:
    for dotted in _AT_LEAST_ONE:
        if _get(tree, dotted) < 1:
            raise SpanftError(f"{path}: {dotted} must be at least 1, found {_get(tree, dotted)!r}")
    for dotted, most in _AT_MOST.items():
        if _get(tree, dotted) > most:
            raise SpanftError(f"{path}: {dotted} must be at most {most:,}, found {_get(tree, dotted)!r}")
    if _get(tree, "reports.bootstrap.resamples") < BOOTSTRAP_MIN_RESAMPLES:
        raise SpanftError(f"{path}: reports.bootstrap.resamples must be at least {BOOTSTRAP_MIN_RESAMPLES} (a 95% "
                          f"interval needs 2/(R+1) <= 0.05), found {_get(tree, 'reports.bootstrap.resamples')!r}")
    sizes = tree["dict_sizes"]
    if not sizes or any(not isinstance(s, int) or isinstance(s, bool) or s <= 0 for s in sizes):
        raise SpanftError(f"{path}: dict_sizes must be a non-empty list of positive integers, found {sizes!r}")


def _check_ngrams(ngrams: dict, path) -> None:
    """Dictionary n-grams run from min_n to max_n words, within the paper's 2 .. 5 (the flags' bounds too)."""
    if not MIN_N <= ngrams["min_n"] <= ngrams["max_n"] <= MAX_N:  # text.ngrams.n_range_problem: the flags' bounds
        raise SpanftError(f"{path}: ngrams must satisfy {MIN_N} <= min_n <= max_n <= {MAX_N} (the longest span "
                          f"segmentation matches), found min_n {ngrams['min_n']}, max_n {ngrams['max_n']}")


def _check_seeds(tree: dict, path) -> None:
    seeds = [(dotted, _get(tree, dotted)) for dotted in _SEEDS]
    seeds += [(f"backbones.{source}.{name}.seed", spec["seed"]) for source, group in tree["backbones"].items()
              for name, spec in (group or {}).items() if "seed" in (spec or {})]
    seeds += [(f"studies.{study}.seeds", seed) for study, spec in tree["studies"].items() for seed in spec["seeds"]]
    for dotted, seed in seeds:
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < SEED_LIMIT:
            raise SpanftError(f"{path}: {dotted}: seed {seed!r} is not an integer from 0 to 2**32 - 1")


def _check_sources(tree: dict, path) -> None:
    """Hub ids, dataset config and split, and local paths; the path a local source needs must be given."""
    corpus, data = tree["corpus"], tree["data"]
    checks = [("corpus.hf_id", corpus["hf_id"], ids.hub_id_problem),
              ("corpus.hf_config", corpus["hf_config"], ids.config_problem),
              ("corpus.hf_split", corpus["hf_split"], ids.split_problem),
              ("corpus.local_path", corpus["local_path"], ids.path_problem),
              ("data.dir", data["dir"], ids.path_problem),
              ("chunker.tagger", tree["chunker"]["tagger"], ids.path_problem)]
    checks += [(f"data.revisions.{task}", revision, ids.revision_problem)
               for task, revision in data["revisions"].items() if revision != ""]
    if corpus["hf_revision"]:
        checks.append(("corpus.hf_revision", corpus["hf_revision"], ids.revision_problem))
    for dotted, value, problem_of in checks:
        _refuse(path, dotted, value, problem_of)
    for dotted, source, needed in (("corpus", corpus["source"], "local_path"), ("data", data["source"], "dir")):
        if source == "local" and not _get(tree, f"{dotted}.{needed}"):
            raise SpanftError(f"{path}: {dotted}.source is local but {dotted}.{needed} is empty")
    for dotted in ("corpus.local_path", "data.dir"):  # DVC dependencies, read as written
        _refuse(path, dotted, _get(tree, dotted), ids.dependency_path_problem)
    _refuse(path, "chunker.tagger", tree["chunker"]["tagger"], lambda value: ids.dependency_path_problem(
        value, "the tagger stage writes data/tagger.json; NLTK's pretrained tagger: chunker.source: nltk"))


def _refuse(path, dotted: str, value: str, problem_of) -> None:
    problem = problem_of(value)
    if problem:
        raise SpanftError(f"{path}: {dotted}: {value!r} {problem}")


_BUILD_AT_LEAST_ONE = ("vocab_size", "hidden", "layers", "heads", "intermediate", "max_len", "mlm_batch_size")


def _check_backbone(name: str, source: str, spec: dict, path) -> None:
    _refuse(path, "backbones", name, ids.name_problem)
    where = f"backbones.{source}.{name}"
    needed = {"hub": "hub_id", "local": "path"}.get(source)
    if needed and not spec.get(needed):
        raise SpanftError(f"{path}: {where} needs {needed}")
    if source == "hub":
        _refuse(path, f"{where}.hub_id", spec["hub_id"], ids.hub_id_problem)
        if spec.get("revision"):
            _refuse(path, f"{where}.revision", spec["revision"], ids.revision_problem)
    if source == "local":
        _refuse(path, f"{where}.path", spec["path"], ids.path_problem)
    _check_tokenizer(spec, where, path)
    for key in _BUILD_AT_LEAST_ONE:
        if key in spec and spec[key] < 1:
            raise SpanftError(f"{path}: {where}.{key} must be at least 1, found {spec[key]!r}")
    if "mlm_lr" in spec:
        problem = lr_problem(spec["mlm_lr"])
        if problem:
            raise SpanftError(f"{path}: {where}.mlm_lr: {problem}")
    for key in ("mlm_steps", "vocab_lines"):  # 0: no MLM pre-training / every corpus line
        if key in spec and spec[key] < 0:
            raise SpanftError(f"{path}: {where}.{key} must be at least 0, found {spec[key]!r}")


def _check_tokenizer(spec: dict, where: str, path) -> None:
    """A backbone's own tokenizer: a hub id (at tokenizer_revision) or a local directory."""
    tokenizer = spec.get("tokenizer_id")
    if tokenizer:
        local = ids.is_local_name(tokenizer)
        _refuse(path, f"{where}.tokenizer_id", tokenizer, ids.path_problem if local else ids.hub_id_problem)
        if local and spec.get("tokenizer_revision"):
            raise SpanftError(f"{path}: {where}.tokenizer_revision: {tokenizer!r} is a local directory, which has "
                              f"no revisions")
    if spec.get("tokenizer_revision"):
        if not tokenizer:
            raise SpanftError(f"{path}: {where}.tokenizer_revision needs tokenizer_id (the hub tokenizer it names)")
        _refuse(path, f"{where}.tokenizer_revision", spec["tokenizer_revision"], ids.revision_problem)


def check_params_file(path: str | Path) -> dict:
    tree = load_params(path)
    check_params(tree, path)
    return tree
