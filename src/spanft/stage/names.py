"""How a ``pipeline/`` stage script runs: on the plan of ``params.yaml`` (checked once), with one-line errors,
and with its arguments from the name DVC gives the running stage, so no params text reaches a shell.

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
from spanft.params.plan import VARIANTS, Plan, Variant

STAGE_ENV = "DVC_STAGE"  # dvc/env.py: set by DVC for every stage command
ROOT_ENV = "DVC_ROOT"  # dvc/env.py: the project's root, set by DVC beside it
_JOIN = "@"  # dvc/parsing: JOIN between a group's name and its member's key

Axes = dict[str, Callable[[Plan], list]]  # axis -> its values in the plan, in dvc.yaml's order


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


def _finetune_group(variant: Variant) -> Group:
    """A fine-tuning group of the variant table: the study's backbones x tasks x the variant's axes x seeds."""
    study = variant.study
    axes: Axes = {"backbone": lambda p: list(p.studies[study].backbones),
                  "task": lambda p: list(p.studies[study].tasks),
                  **{axis: (lambda p, axis=axis: p.axis_values(axis, study)) for axis in variant.axes},
                  "seed": lambda p: list(p.studies[study].seeds)}
    return Group("finetune", axes, lambda m: [study, m["backbone"], m["task"], variant.run_name(m), str(m["seed"])])


def _sources(kind: str) -> Callable[[Plan], list]:
    return lambda p: [name for name, spec in p.backbones.items() if spec.source == kind]


_FOREACH = "key"  # a foreach group's one axis: the mapping's key, or the list's value

GROUPS: dict[str, Group] = {
    "dictionary_sweep": Group("dictionary", {"size": lambda p: list(p.dict_sizes)}, _dictionary),
    "prepare_task": Group("prepare_task", {_FOREACH: lambda p: list(p.tasks)}, _prepare),
    "segment_ngram": Group("segment", {"task": lambda p: list(p.tasks)}, _segment("ngram")),
    "segment_random": Group("segment", {"task": lambda p: list(p.studies["ablation"].tasks)}, _segment("random")),
    "segment_chunker": Group("segment", {"task": lambda p: list(p.studies["ablation"].tasks)}, _segment("chunker")),
    "segment_sweep": Group("segment", {"task": lambda p: list(p.studies["dictsize"].tasks),
                                       "size": lambda p: list(p.dict_sizes),
                                       "method": lambda p: list(p.studies["dictsize"].methods)},
                           _segment(None, sweep=True)),
    "build_backbone": Group("backbone", {_FOREACH: _sources("build")}, _backbone(corpus=True)),
    "fetch_backbone": Group("backbone", {_FOREACH: _sources("hub")}, _backbone(corpus=False)),
    "copy_backbone": Group("backbone", {_FOREACH: _sources("local")}, _backbone(corpus=False)),
    **{variant.group: _finetune_group(variant) for variant in VARIANTS},
    "submission": Group("submission", {_FOREACH: lambda p: list(p.studies["glue"].backbones)},
                        lambda m: [m["key"], f"data/runs/glue/{m['key']}", "data/submissions"]),
}


def _to_str(value: Any) -> str:
    """How DVC writes a value into a generated name (dvc/parsing/interpolate.py: to_str)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def members(plan: Plan, group: str) -> dict[str, dict]:
    """``{generated key: member}`` of a group, in DVC's order (a matrix: product of the axes in their order)."""
    axes = GROUPS[group].axes
    combos = product(*(values(plan) for values in axes.values()))
    members_ = ({name: value for name, value in zip(axes, combo)} for combo in combos)
    return {"-".join(_to_str(value) for value in member.values()): member for member in members_}


def stage_argv(plan: Plan, stage: str, script: str) -> list[str]:
    """The arguments ``script`` is given as the stage named ``stage`` (``group@key``); one-line errors."""
    group, _, key = stage.partition(_JOIN)
    spec = GROUPS.get(group)
    if spec is None or spec.script != script or not key:
        mine = ", ".join(g for g, s in GROUPS.items() if s.script == script) or "none"
        raise SpanftError(f"{STAGE_ENV}={stage!r} is not a stage of pipeline/{script}.py (its groups: {mine}); "
                          f"by hand, give the arguments (see --help)")
    found = members(plan, group).get(key)
    if found is None:
        raise SpanftError(f"{STAGE_ENV}={stage!r}: params defines no member {key!r} of stage group {group}")
    return spec.argv(found)


def script_argv(plan: Plan, script: str) -> list[str]:
    """The arguments of the DVC stage running (``DVC_STAGE``), for a script run without any."""
    stage = os.environ.get(STAGE_ENV)
    if not stage:
        raise SpanftError(f"pipeline/{script}.py needs its arguments (see --help), or to run as a DVC stage "
                          f"({STAGE_ENV} names it)")
    return stage_argv(plan, stage, script)


