"""The plan of a dvc session: the stages DVC will evaluate from this one on, whether each runs, and the seconds
each is expected to take (its earlier time, else the cost model's), read with DVC's own read-only calls."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from spanft.stage.forecast import EARLIER, MODEL

log = logging.getLogger("spanft")

# ------------------------------------------------------------------------------------------- the plan


def dvc_plan(args: Any, current: str, times: dict[str, float]) -> list[dict]:
    """The stages dvc will evaluate from ``current`` on, in DVC's order, each with ``runs`` (``yes``: changed now,
    or forced; ``maybe``: downstream of one that runs), ``seconds`` (expected; None: not known), ``basis``
    (where a known ``seconds`` comes from: ``earlier``, its time in an earlier session, or ``model``, the cost
    model's; :mod:`spanft.stage.forecast`), ``kind`` (a group's script: stages of one kind take like times) and
    ``metrics`` (the metrics files it declares).

    ``args``: dvc's command line as :func:`repro_arguments` reads it. Raises whatever DVC raises when it cannot
    say.
    """
    from dvc.repo import Repo
    from dvc.repo.reproduce import get_active_graph

    with Repo() as repo:
        graph = get_active_graph(repo.index.graph)  # edges: from a stage to the stages it reads from
        steps = _steps(repo, graph, args)
        names = [step.addressing for step in steps]
        steps = steps[names.index(current):] if current in names else []
        runs = _will_run(steps, graph, _flag(args, "force"), _flag(args, "force_downstream"))
        metrics = {step.addressing: [str(out.def_path) for out in step.outs if out.metric] for step in steps}
    modelled = _modelled_seconds([name for name in runs if name not in times])
    return [{"stage": name, "runs": kind, "seconds": times.get(name, modelled.get(name)), **_kind(name),
             **({"basis": EARLIER if name in times else MODEL} if name in times or name in modelled else {}),
             **({"metrics": metrics[name]} if metrics.get(name) else {})} for name, kind in runs.items()]


def _kind(stage: str) -> dict[str, str]:
    """``{"kind": script}`` for a stage of a group (the stages of one script take like times), else nothing."""
    from spanft.stage.names import GROUPS

    group = GROUPS.get(stage.partition("@")[0])
    return {"kind": group.script} if group is not None else {}


def _flag(args: Any, name: str) -> bool:
    return bool(getattr(args, name, False))  # an option the command lacks is off (exp run has no --glob)


def _steps(repo: Any, graph: Any, args: Any) -> list:
    """The stages dvc evaluates, in its order: what ``dvc.repo.reproduce.reproduce`` makes of the options."""
    from dvc.dvcfile import PROJECT_FILE
    from dvc.repo.reproduce import collect_stages, plan_repro

    single_item, downstream = _flag(args, "single_item"), _flag(args, "downstream")
    if _flag(args, "all_pipelines") or _flag(args, "pipeline"):
        single_item = downstream = False
    targets = getattr(args, "targets", None)
    if _flag(args, "all_pipelines"):
        stages = []
    elif targets:
        stages = collect_stages(repo, targets, recursive=_flag(args, "recursive"), glob=_flag(args, "glob"))
    else:  # dvc.yaml's stages, as collect_stages would read them: from the index, not parsed a second time
        here = os.path.abspath(PROJECT_FILE)
        stages = [stage for stage in repo.index.stages if os.path.abspath(stage.path) == here]
    return stages if single_item else plan_repro(graph, stages, pipeline=_flag(args, "pipeline"),
                                                 downstream=downstream)


def repro_arguments(arguments: tuple[str, ...]) -> Any:
    """dvc's command line (after the program) parsed by DVC's own parser; a command other than ``repro`` or
    ``exp run`` (``exp exec-run``, which runs a queued experiment) reads as a plain ``dvc repro``."""
    from dvc.cli import parse_args

    try:
        args = parse_args(list(arguments))
    except (Exception, SystemExit):  # DVC's parser raises its own error; argparse may exit
        args = None
    if getattr(getattr(args, "func", None), "__name__", None) not in REPRO_COMMANDS:
        return parse_args(["repro"])
    return args


REPRO_COMMANDS = ("CmdRepro", "CmdExperimentsRun")  # dvc repro, dvc exp run: the same options


def _will_run(steps: list, graph: Any, force: bool, force_downstream: bool) -> dict[str, str]:
    """``{stage: "yes" | "maybe"}`` for ``steps`` in order (the first one runs now; a stage left out does not run).

    Read through the outputs' and dependencies' own ``status()``: ``Stage.changed`` asserts that this process
    holds the repo lock, which the running dvc does. A dependency that a stage planned to run will rewrite
    tells nothing yet (the running stage's outputs are gone): a stage whose other inputs, definition and
    outputs are as recorded is ``maybe``."""
    kinds: dict[str, str] = {}
    dvc_log = logging.getLogger("dvc")
    level = dvc_log.level
    dvc_log.setLevel(logging.WARNING)  # DVC logs each changed dependency at info level
    try:
        for i, stage in enumerate(steps):
            upstream = [dep for dep in graph.successors(stage) if dep.addressing in kinds]
            forced = force or (force_downstream and any(kinds[dep.addressing] == "yes" for dep in upstream))
            rewritten = [out.fs_path for dep in upstream for out in dep.outs]
            if i == 0 or forced or _changed(stage, rewritten):
                kinds[stage.addressing] = "yes"
            elif upstream:
                kinds[stage.addressing] = "maybe"
    finally:
        dvc_log.setLevel(level)
    return kinds


def _changed(stage: Any, rewritten: list[str]) -> bool:
    """What ``Stage.changed`` says, from the stage's definition, its outputs and its dependencies other than
    those under (or holding) a path in ``rewritten``; a status DVC cannot take counts as changed."""
    def overlaps(path: str) -> bool:
        return any(path == other or path.startswith(other + os.sep) or other.startswith(path + os.sep)
                   for other in rewritten)

    try:
        if stage.always_changed or stage.changed_stage() or any(out.status() for out in stage.outs):
            return True
        return not stage.frozen and any(dep.status() for dep in stage.deps if not overlaps(dep.fs_path))
    except Exception:  # noqa: BLE001 - DVC's own errors: it will run the stage, or fail on it
        return True


def _modelled_seconds(names: list[str]) -> dict[str, float]:
    """The cost model's seconds for the fine-tuning stages among ``names`` (on an NVIDIA GPU when the machine
    has a driver for one, else on the CPU): a first guess, until the stage has run once. Empty when the model
    cannot say (params that do not load: the stage says why)."""
    from spanft.cost.estimate import device_steps, run_hours
    from spanft.errors import SpanftError
    from spanft.params.plan import load_plan
    from spanft.stage.names import GROUPS, members

    groups = {name.partition("@")[0] for name in names}
    if not any(group in GROUPS and GROUPS[group].script == "finetune" for group in groups):
        return {}
    try:
        plan = load_plan()
        kind = "H100" if Path("/proc/driver/nvidia/version").exists() else "CPU"
        device = next(d for d in device_steps(Path.cwd()) if d.name == kind)
    except (SpanftError, OSError):
        return {}
    found = {group: members(plan, group) for group in groups if group in GROUPS and GROUPS[group].script == "finetune"}
    seconds = {}
    for name in names:
        group, _, key = name.partition("@")
        if key not in found.get(group, {}):
            continue
        study, backbone, task, variant, seed = GROUPS[group].argv(found[group][key])
        hours = run_hours(plan.find_run(study, backbone, task, variant, int(seed)), plan, device)
        if hours is not None:
            seconds[name] = hours * 3600
    return seconds


