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

import argparse
import logging
import os
import sys
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any, Callable

import yaml

from spanft.errors import SpanftError, run_command
from spanft.params.dvc_room import check_dvc_room
from spanft.params.load import load_params
from spanft.params.plan import PARAMS_FILE, VARIANTS, Plan, Variant, load_plan
from spanft.params.progress import bars_only_on_a_terminal, stage_progress
from spanft.params.records import check_lock_records, write_record

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


def run_stage(body: Callable[[Plan], None], quiet: bool = False) -> int:
    """Run a stage script's ``body(plan)``: spanft's log format, one-line errors, exit code 0 unless it raised."""
    def call() -> None:
        logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="spanft: %(message)s",
                            stream=sys.stderr)  # here: run_command has put /dev/null where a stream was closed
        bars_only_on_a_terminal()
        stage = os.environ.get(STAGE_ENV)
        with stage_progress(stage):  # under dvc: this stage's place in the graph, and the time left
            if stage:  # under DVC, whose index and cache must have room first (params.dvc_room)
                check_dvc_room(Path(os.environ.get(ROOT_ENV) or "."))
            before = _params_now()
            plan = load_plan()
            # nothing built on outputs that dvc.lock records with other params than they were made with
            check_lock_records(exclude=stage, inputs=declared_deps(stage, plan))
            body(plan)  # a stage's result is its output files; the exit code is 0 unless it raised
            keys = declared_params(stage, plan)
            check_params_unchanged(before, _params_now(), keys=keys)
            if stage and keys:  # what DVC will record beside the outputs, as this stage used it (params.records)
                write_record(stage, {key: _at(before, key) for key in keys})

    return run_command(call)


def _params_now() -> Any:
    """The params tree on disk now (None when it does not load: load_plan says why, in its own words)."""
    try:
        return load_params(PARAMS_FILE)
    except (SpanftError, OSError):
        return None


_MISSING = object()


def first_difference(old: Any, new: Any, prefix: str = "") -> tuple[str, Any, Any] | None:
    """``(dotted key, old value, new value)`` of the first place two params trees differ; None if equal."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            found = first_difference(old.get(key, _MISSING), new.get(key, _MISSING), f"{prefix}{key}.")
            if found:
                return found
        return None
    if old == new and type(old) is type(new):
        return None
    return prefix.rstrip(".") or "(the whole file)", old, new


DVC_YAML = "dvc.yaml"


def declared_params(stage: str | None, plan: Plan, dvc_yaml: str = DVC_YAML) -> list[str] | None:
    """The params keys the running stage's ``params:`` declares (what DVC writes into dvc.lock for it), its
    templates filled in for the member; None where that cannot be told (run by hand, the whole file, a
    template it cannot fill): then the whole file counts."""
    entries = _declared(stage, plan, "params", dvc_yaml)
    if entries is None or any(not isinstance(e, str) or "${" in e for e in entries):
        return None  # {file: [keys]} or {params.yaml: }: the whole file, or another file; or a template
    return entries


def declared_deps(stage: str | None, plan: Plan, dvc_yaml: str = DVC_YAML) -> list[str] | None:
    """The paths the running stage's ``deps:`` declares, for its member; a path made of params other than
    the member's (``${data.dir}/...``: raw data, no stage's output) is left out. None: not a DVC stage."""
    entries = _declared(stage, plan, "deps", dvc_yaml)
    return None if entries is None else [e for e in entries if isinstance(e, str) and "${" not in e]


def _declared(stage: str | None, plan: Plan, field: str, dvc_yaml: str) -> list | None:
    """A stage's ``field`` list in ``dvc.yaml``, the member's ``${key}``, ``${item...}`` and ``vars`` filled in."""
    if not stage:
        return None
    try:
        with open(dvc_yaml, encoding="utf-8") as handle:
            stages = yaml.load(handle, Loader=_LOADER)["stages"]
        group, _, key = stage.partition(_JOIN)
        spec = stages[group]
        spec = spec.get("do", spec)
        declared = spec.get(field) or []
        member = members(plan, group).get(key, {}) if key and group in GROUPS else {}
        fills = [("key", key), ("item", key), *((f"item.{k}", v) for k, v in member.items()),
                 *((k, v) for table in spec.get("vars") or [] if isinstance(table, dict) for k, v in table.items())]
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError, SpanftError):
        return None
    filled = []
    for entry in declared:
        if isinstance(entry, str):
            for name, value in fills:
                entry = entry.replace(f"${{{name}}}", _to_str(value))
        filled.append(entry)
    return filled


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where built: dvc.yaml is read by every stage


def _at(tree: Any, dotted: str) -> Any:
    node = tree
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def check_params_unchanged(before: Any, after: Any, path: str = PARAMS_FILE, keys: list[str] | None = None) -> None:
    """A stage whose params changed on disk while it ran fails, so that DVC records nothing: it would write the
    new values into dvc.lock beside outputs made from the old ones, and `dvc status` would then say clean.

    ``keys``: the params the stage declares (None: the whole file)."""
    if keys is None or before is None or after is None:
        found = first_difference(before, after)
    else:
        found = next((f for f in (first_difference(_at(before, k), _at(after, k), f"{k}.") for k in keys) if f), None)
    if found is None:
        return
    key, old, new = found
    shown = lambda value: "(absent)" if value is _MISSING else repr(value)  # noqa: E731
    raise SpanftError(f"{path}: {key} changed while this stage ran ({shown(old)} -> {shown(new)}): its outputs "
                      f"were made from the old value, so DVC must not record them; re-run (dvc repro)")


def run_stage_script(script: str, parser: argparse.ArgumentParser,
                     body: Callable[[argparse.Namespace, Plan], None], quiet: bool = False) -> int:
    """:func:`run_stage` for a script whose arguments come from its command line or, given none, from the DVC
    stage running it (``dvc.yaml`` passes no params text through a shell).

    ``script``: the file's name under ``pipeline/`` without ``.py``, which names its stage groups.
    """
    given = parser.parse_args() if sys.argv[1:] else None  # --help and usage errors need no params

    def call(plan: Plan) -> None:
        body(given or parser.parse_args(script_argv(plan, script)), plan)

    return run_stage(call, quiet)
