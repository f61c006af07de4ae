"""A stage script's arguments from the name DVC gives the running stage, so no params text reaches a shell.

DVC pastes ``${key}`` and ``${item...}`` into a stage's ``cmd`` as they are, and a shell runs the result: a
task, backbone or study entry in ``params.yaml`` named ``cola$(touch x)`` would run ``touch x`` before any
spanft check. So every ``cmd`` in ``dvc.yaml`` is a fixed ``python pipeline/<script>.py`` and the script
finds its item here, from ``DVC_STAGE`` (``prepare_task@cola``, ``glue_sf@tiny-cola-1``: the group, ``@``,
the foreach key or the matrix values joined by ``-``, which DVC sets for every command it runs) and the
checked params. A name is matched against the names DVC generates from params, never split, so a value
holding ``-`` (``tiny-bpe``) is found too. Run by hand, a script takes explicit arguments instead.

:data:`GROUPS` is the one table of what each stage group's script is given; ``tests/test_stage_deps.py``
checks it against the stages DVC resolves from ``dvc.yaml`` (outputs, inputs and planned runs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import product
from typing import Any, Callable

from spanft.errors import SpanftError
from spanft.params.load import lookup

STAGE_ENV = "DVC_STAGE"  # dvc/env.py: set by DVC for every stage command
_JOIN = "@"  # dvc/parsing: JOIN between a group's name and its member's key

Axes = dict[str, Any]  # axis -> a params dotted path (a list or a mapping's keys) or a literal list


@dataclass(frozen=True)
class Group:
    """A foreach/matrix group of ``dvc.yaml``: its script, its axes and the arguments one member is given."""

    script: str
    axes: Axes
    argv: Callable[[dict], list[str]]


def _prepare(m: dict) -> list[str]:
    return [m["key"], f"data/tasks/{m['key']}"]


def _dictionary(m: dict) -> list[str]:
    return ["data/ngrams/counts.tsv", f"data/dicts/size-{m['size']}.tsv", "--size", str(m["size"])]


def _segment(method: str | None, sweep: bool = False) -> Callable[[dict], list[str]]:
    def argv(m: dict) -> list[str]:
        chosen, task = method or m["method"], m["task"]
        if sweep:
            return [chosen, f"data/tasks/{task}", f"data/segmented/sweep/{task}/{chosen}-{m['size']}",
                    "--dict", f"data/dicts/size-{m['size']}.tsv"]
        tail = [] if chosen == "chunker" else ["--dict", "data/dicts/main.tsv"]
        return [chosen, f"data/tasks/{task}", f"data/segmented/{chosen}/{task}", *tail]

    return argv


def _backbone(corpus: bool) -> Callable[[dict], list[str]]:
    return lambda m: [m["key"], f"data/backbones/{m['key']}",
                      *(["--corpus", "data/corpus/train.txt"] if corpus else [])]


def _finetune(study: str, variant: str | None) -> Callable[[dict], list[str]]:
    def argv(m: dict) -> list[str]:
        name = variant or (f"sf-{m['encoder']}" if "encoder" in m else f"{m['method']}-{m['size']}")
        return [study, m["backbone"], m["task"], name, str(m["seed"])]

    return argv


def _study(study: str, tasks: Any = None, **extra: Any) -> Axes:
    """A fine-tuning matrix: the study's backbones x tasks (its list, or a fixed one) x ``extra`` x seeds."""
    return {"backbone": f"studies.{study}.backbones", "task": tasks or f"studies.{study}.tasks", **extra,
            "seed": f"studies.{study}.seeds"}


_FOREACH = "key"  # a foreach group's one axis: the mapping's key, or the list's value
_SNLI, _NER = ["snli"], ["conll2003"]

GROUPS: dict[str, Group] = {
    "dictionary_sweep": Group("dictionary", {"size": "dict_sizes"}, _dictionary),
    "prepare_task": Group("prepare_task", {_FOREACH: "tasks"}, _prepare),
    "segment_ngram": Group("segment", {"task": "tasks"}, _segment("ngram")),
    "segment_random": Group("segment", {"task": "studies.ablation.tasks"}, _segment("random")),
    "segment_chunker": Group("segment", {"task": "studies.ablation.tasks"}, _segment("chunker")),
    "segment_sweep": Group("segment", {"task": "studies.dictsize.tasks", "size": "dict_sizes",
                                       "method": "studies.dictsize.methods"}, _segment(None, sweep=True)),
    "build_backbone": Group("backbone", {_FOREACH: "backbones.build"}, _backbone(corpus=True)),
    "fetch_backbone": Group("backbone", {_FOREACH: "backbones.hub"}, _backbone(corpus=False)),
    "copy_backbone": Group("backbone", {_FOREACH: "backbones.local"}, _backbone(corpus=False)),
    "glue_baseline": Group("finetune", _study("glue"), _finetune("glue", "baseline")),
    "glue_sf": Group("finetune", _study("glue"), _finetune("glue", "sf")),
    "backbones_baseline": Group("finetune", _study("backbones"), _finetune("backbones", "baseline")),
    "backbones_sf": Group("finetune", _study("backbones"), _finetune("backbones", "sf")),
    "snli_baseline": Group("finetune", _study("snli", _SNLI), _finetune("snli", "baseline")),
    "snli_sf": Group("finetune", _study("snli", _SNLI), _finetune("snli", "sf")),
    "snli_sf_encoder": Group("finetune", _study("snli", _SNLI, encoder="studies.snli.encoders"),
                             _finetune("snli", None)),
    "ablation_cnn_noseg": Group("finetune", _study("ablation"), _finetune("ablation", "cnn-noseg")),
    "ablation_random_seg": Group("finetune", _study("ablation"), _finetune("ablation", "random-seg")),
    "ablation_chunker_seg": Group("finetune", _study("ablation"), _finetune("ablation", "chunker-seg")),
    "ner_baseline": Group("finetune", _study("ner", _NER), _finetune("ner", "baseline")),
    "ner_sf": Group("finetune", _study("ner", _NER), _finetune("ner", "sf")),
    "dictsize_spanonly": Group("finetune", _study("dictsize", size="dict_sizes", method="studies.dictsize.methods"),
                               _finetune("dictsize", None)),
    "submission": Group("submission", {_FOREACH: "studies.glue.backbones"},
                        lambda m: [m["key"], f"data/runs/glue/{m['key']}", "data/submissions"]),
}


def _to_str(value: Any) -> str:
    """How DVC writes a value into a generated name (dvc/parsing/interpolate.py: to_str)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _values(params: dict, axis: Any, source: str) -> list:
    """An axis's values: a literal list, or the list (or the mapping's keys) at a params path."""
    if isinstance(axis, list):
        return axis
    value = lookup(params, axis, source) or []
    return list(value) if isinstance(value, (dict, list)) else []


def members(params: dict, group: str, source: str = "params") -> dict[str, dict]:
    """``{generated key: member}`` of a group, in DVC's order (a matrix: product of the axes in their order)."""
    axes = GROUPS[group].axes
    combos = product(*(_values(params, axis, source) for axis in axes.values()))
    members_ = ({name: value for name, value in zip(axes, combo)} for combo in combos)
    return {"-".join(_to_str(value) for value in member.values()): member for member in members_}


def stage_argv(params: dict, stage: str, script: str, source: str = "params") -> list[str]:
    """The arguments ``script`` is given as the stage named ``stage`` (``group@key``); one-line errors."""
    group, _, key = stage.partition(_JOIN)
    spec = GROUPS.get(group)
    if spec is None or spec.script != script or not key:
        mine = ", ".join(g for g, s in GROUPS.items() if s.script == script) or "none"
        raise SpanftError(f"{STAGE_ENV}={stage!r} is not a stage of pipeline/{script}.py (its groups: {mine}); "
                          f"by hand, give the arguments (see --help)")
    found = members(params, group, source).get(key)
    if found is None:
        raise SpanftError(f"{STAGE_ENV}={stage!r}: {source} defines no member {key!r} of stage group {group}")
    return spec.argv(found)


def script_argv(params: dict, script: str, given: list[str], source: str = "params") -> list[str]:
    """The command line's arguments when given, else those of the DVC stage running (``DVC_STAGE``)."""
    if given:
        return given
    stage = os.environ.get(STAGE_ENV)
    if not stage:
        raise SpanftError(f"pipeline/{script}.py needs its arguments (see --help), or to run as a DVC stage "
                          f"({STAGE_ENV} names it)")
    return stage_argv(params, stage, script, source)
