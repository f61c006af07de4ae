"""How a ``pipeline/`` stage script runs under DVC: spanft's log format and one-line errors, DVC's room checked,
the plan of ``params.yaml`` loaded once, the lock records checked before the work, params that changed while
it ran refused, and the values it used recorded (:mod:`spanft.stage.records`)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable

import yaml

from spanft.errors import SpanftError, run_command
from spanft.params.load import load_params
from spanft.params.plan import PARAMS_FILE, Plan, load_plan
from spanft.stage import budget
from spanft.stage.dvc_room import check_dvc_room
from spanft.stage.lock_backup import keep_lock
from spanft.stage.names import (
    _JOIN,
    GROUPS,
    ROOT_ENV,
    STAGE_ENV,
    _to_str,
    members,
    script_argv,
)
from spanft.stage.progress import bars_only_on_a_terminal, stage_progress
from spanft.stage.records import check_lock_records, write_record


def run_stage(body: Callable[[Plan], None], quiet: bool = False) -> int:
    """Run a stage script's ``body(plan)``: spanft's log format, one-line errors, exit code 0 unless it raised."""
    def call() -> None:
        logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="spanft: %(message)s",
                            stream=sys.stderr)  # here: run_command has put /dev/null where a stream was closed
        stage = os.environ.get(STAGE_ENV)
        budget.start(stage)  # where the time goes, for benchmarks/bench_stage_budget.py (off unless asked)
        bars_only_on_a_terminal()
        with stage_progress(stage):  # under dvc: this stage's place in the graph, and the time left
            budget.mark("progress")
            if stage:  # under DVC, whose index and cache must have room first (stage.dvc_room)
                check_dvc_room(Path(os.environ.get(ROOT_ENV) or "."))
                # DVC has written the previous stage's record: keep it, should this run's lock write be cut
                keep_lock(Path(os.environ.get(ROOT_ENV) or "."))
            budget.mark("room")
            before = _params_now()
            plan = load_plan(check_sources=bool(stage))  # under DVC: a missing local source named first
            budget.mark("params")
            # nothing built on outputs that dvc.lock records with other params than they were made with
            check_lock_records(exclude=stage, inputs=declared_deps(stage, plan))
            budget.mark("lock")
            body(plan)  # a stage's result is its output files; the exit code is 0 unless it raised
            budget.mark("work")
            keys = declared_params(stage, plan)
            check_params_unchanged(before, _params_now(), keys=keys)
            if stage and keys:  # what DVC will record beside the outputs, as this stage used it (stage.records)
                write_record(stage, {key: _at(before, key) for key in keys})
            budget.mark("record")
        budget.mark("progress end")

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
        stages = _dvc_yaml_stages(dvc_yaml)
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
_READ: dict[str, tuple[str, Any]] = {}  # dvc.yaml's path -> (text, its stages): read once per stage process


def _dvc_yaml_stages(dvc_yaml: str) -> Any:
    """``dvc.yaml``'s ``stages`` (read only; its text read each time, parsed again only when it changed)."""
    with open(dvc_yaml, encoding="utf-8") as handle:
        text = handle.read()
    kept = _READ.get(dvc_yaml)
    if kept is None or kept[0] != text:
        kept = _READ[dvc_yaml] = (text, yaml.load(text, Loader=_LOADER)["stages"])
    return kept[1]


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
