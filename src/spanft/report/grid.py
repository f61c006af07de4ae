"""The paper's hyper-parameter search through DVC experiments, and the best grid point per task by dev score.

The paper tunes lr in {1e-5, 2e-5, 3e-5}, batch size in {16, 32, 48}, epochs in {2, 3, 4, 5} and the maximum
length in {128, 256} (warm-up 0.1 and weight decay 0.01 fixed). One command queues a task's whole grid as DVC
experiments, one experiment per point (``dvc exp run --queue`` with one ``-S`` per key makes the product)::

    dvc exp run --queue -S 'hparams.cola.lr=1e-05,2e-05,3e-05' -S 'hparams.cola.batch_size=16,32,48' \
        -S 'hparams.cola.epochs=2,3,4,5' -S 'hparams.cola.max_seq_len=128,256'
    dvc queue start -j 1          # then wait: `dvc queue status`
    dvc exp show --json > grid.json
    spanft grid-report grid.json --out reports/grid.md

(:func:`grid_command` writes the first line for any task and grid.) Each experiment changes one task's block,
so only that task's runs re-run; ``reports/metrics.json`` (the DVC metrics) holds every run's mean dev main
metric per study, backbone, task and variant, which is what the best point is chosen by. Dev, never test: the
test sets stay out of model selection.
"""

from __future__ import annotations

import json
import logging
import math
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from spanft.errors import SpanftError
from spanft.fileio import atomic_open, read_text

log = logging.getLogger("spanft")

PAPER_GRID: dict[str, list] = {
    "lr": [1e-5, 2e-5, 3e-5],
    "batch_size": [16, 32, 48],
    "epochs": [2, 3, 4, 5],
    "max_seq_len": [128, 256],
}
VARIANTS = ("baseline", "sf")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def grid_command(task: str, grid: dict[str, Sequence] = PAPER_GRID) -> list[str]:
    """The ``dvc exp run --queue`` arguments that queue every point of ``grid`` for ``task``."""
    arguments = ["dvc", "exp", "run", "--queue"]
    for key, values in grid.items():
        if not values:
            raise SpanftError(f"grid: no values for {key}")
        arguments += ["-S", f"hparams.{task}.{key}={','.join(_format(v) for v in values)}"]
    return arguments


def _format(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Point:
    """One evaluated workspace state: an experiment, a commit, or the workspace itself."""

    name: str
    params: dict
    metrics: dict
    unfinished: str = ""  # why its metrics describe no run of its params (an experiment still running), or ""


# ``dvc exp show --json`` lists an experiment that has not ended with its executor's state: a running one with
# its workspace as it is now (its params, and the metrics that were there before it ran: the baseline's), a
# queued one with its params alone. Neither is a grid point yet.
UNFINISHED = {"running": "still running: the metrics shown are those its workspace held before it ran",
              "queued": "queued: not run yet"}
_WORKSPACE = "workspace"


def experiment_points(exp_show: list) -> list[Point]:
    """Every state ``dvc exp show --json`` lists (workspace, commits, their experiments) that has results; an
    experiment that has not ended (:data:`UNFINISHED`) is marked, and so is the workspace while a ``dvc exp run``
    runs in it."""
    if not isinstance(exp_show, list):
        raise SpanftError("dvc exp show --json: expected a list of revisions")
    entries = list(_entries(exp_show))
    busy = any(state == "running" and where == _WORKSPACE for _, state, where in entries)
    points = []
    for entry, state, _ in entries:
        data = _object(entry.get("data") or {}, f"the 'data' of revision {entry.get('rev')!r}")
        if entry.get("error") or (not data and state not in UNFINISHED):
            continue
        rev = str(entry.get("rev", "?"))
        name = str(entry.get("name") or (rev[:7] if _COMMIT.match(rev) else rev))
        why = UNFINISHED.get(state or "", "")
        if busy and rev == _WORKSPACE and not why:
            why = "a dvc exp run is running in the workspace: its metrics are those from before that run"
        points.append(Point(name, _blocks(_merged(data.get("params"))), _scores(_merged(data.get("metrics"))), why))
    return points


def _entries(exp_show: list) -> Iterator[tuple[dict, str | None, str | None]]:
    """``(revision, its executor's state, the executor's name)``: the state is None for the workspace and the
    commits, "success", "running", "queued" or "failed" for an experiment. Another shape is one error line."""
    for number, entry in enumerate(exp_show, 1):
        entry = _object(entry, f"revision {number}")
        yield entry, None, None
        for experiment in _list(entry.get("experiments"), f"the experiments of revision {entry.get('rev')!r}"):
            experiment = _object(experiment, f"an experiment of revision {entry.get('rev')!r}")
            executor = experiment.get("executor") if isinstance(experiment.get("executor"), dict) else {}
            for rev in _list(experiment.get("revs"), f"the revs of experiment {experiment.get('name')!r}"):
                yield (_object(rev, f"a rev of experiment {experiment.get('name')!r}"), executor.get("state"),
                       executor.get("name"))


def _object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise SpanftError(f"dvc exp show --json: {where} is {type(value).__name__}, not an object (expected the "
                          f"output of `dvc exp show --json`, DVC 3)")
    return value


def _list(value: Any, where: str) -> list:
    if value is not None and not isinstance(value, list):
        raise SpanftError(f"dvc exp show --json: {where} is {type(value).__name__}, not a list (expected the "
                          f"output of `dvc exp show --json`, DVC 3)")
    return value or []


def _merged(files: Any) -> dict:
    """The ``data`` trees of every params / metrics file, merged (the project has one of each); a file DVC
    could not read (its ``error`` instead of ``data``) adds nothing."""
    merged: dict = {}
    for content in (files.values() if isinstance(files, dict) else []):
        data = content.get("data") if isinstance(content, dict) else None
        merged.update(data if isinstance(data, dict) else {})
    return merged


def _blocks(params: dict) -> dict:
    """``params`` with only the ``hparams.<task>`` blocks that are mappings (another value is no grid point)."""
    hparams = params.get("hparams")
    blocks = {task: block for task, block in hparams.items() if isinstance(block, dict)} \
        if isinstance(hparams, dict) else {}
    return {**params, "hparams": blocks}


def _scores(metrics: dict) -> dict:
    """``{study: {backbone: {task: {variant: score}}}}``: the metrics' mappings at those depths, nothing else."""
    return {study: {backbone: {task: scores for task, scores in tasks.items() if isinstance(scores, dict)}
                    for backbone, tasks in backbones.items() if isinstance(tasks, dict)}
            for study, backbones in metrics.items() if isinstance(backbones, dict)}


def best_points(points: list[Point], study: str = "glue") -> list[dict]:
    """Per backbone, task and variant of ``study``: the grid point (``hparams.<task>``) with the best dev score.

    Only the points of the task's grid count (:func:`task_grids`: params equal but for ``hparams.<task>``).
    States with the same block and the same score are one grid point: their names are listed together. The
    same block with another score (a commit whose committed reports another machine or other code made) is
    not merged into it: the row names those states and their scores under ``others``. Ties keep the point
    listed first.
    """
    results: dict[tuple[str, str, str], dict[str, dict]] = {}
    for task, (kept, _) in task_grids(points, study).items():
        for point in kept:
            block = _numbers(point.params["hparams"][task])
            for backbone, tasks in (point.metrics.get(study) or {}).items():
                scores = (tasks or {}).get(task)
                if scores is None:
                    continue
                for variant in VARIANTS:
                    score = (scores or {}).get(variant)
                    key = json.dumps([block, score], sort_keys=True, default=str)
                    seen = results.setdefault((backbone, task, variant), {})
                    entry = seen.setdefault(key, {"hparams": block, "score": score, "names": []})
                    entry["names"].append(point.name)
    rows = []
    for (backbone, task, variant), by_point in sorted(results.items()):
        scored = [e for e in by_point.values() if isinstance(e["score"], (int, float)) and not math.isnan(e["score"])]
        if not scored:
            continue
        best = max(scored, key=lambda e: e["score"])  # max keeps the first of equal scores
        blocks = {json.dumps(e["hparams"], sort_keys=True, default=str) for e in scored}
        others = [(name, e["score"]) for e in by_point.values() if e is not best and e["hparams"] == best["hparams"]
                  for name in e["names"]]
        rows.append({"study": study, "backbone": backbone, "task": task, "variant": variant,
                     "dev_score": best["score"], "hparams": best["hparams"], "experiments": best["names"],
                     "points": len(blocks), "tied": sum(e["score"] == best["score"] and e["hparams"] != best["hparams"]
                                                        for e in scored),
                     "others": others})
    return rows


def task_grids(points: list[Point], study: str = "glue") -> dict[str, tuple[list[Point], list[tuple[str, str]]]]:
    """Per task that ``study``'s metrics score: the points of its grid, and ``(name, why)`` of those left out.

    A task's grid is the largest set of points whose params are equal but for ``hparams.<task>`` (the grid's
    own keys; other tasks' blocks never reach this task's runs); at a tie, the set of the point listed first
    (the workspace). A point whose other params differ (``dvc exp run -S dict_size=...``) describes another
    run: merged, its score would be shared by a grid point it was never trained at.
    """
    grids = {}
    points = [p for p in points if not p.unfinished]  # no grid point yet: named by left_out
    for task in dict.fromkeys(t for p in points for b in (p.metrics.get(study) or {}).values() for t in (b or {})):
        scored = [p for p in points if (p.params.get("hparams") or {}).get(task) is not None
                  and any(task in (b or {}) for b in (p.metrics.get(study) or {}).values())]
        if not scored:
            continue  # "average", and tasks without a block, are no grid points
        groups: dict[str, list[Point]] = {}
        for point in scored:
            groups.setdefault(json.dumps(_rest(point.params), sort_keys=True, default=str), []).append(point)
        kept = max(groups.values(), key=len)  # max keeps the first group of equal size: the first point's
        reference = _rest(kept[0].params)
        left = [(p.name, _difference(_rest(p.params), reference, kept[0].name))
                for p in scored if p not in kept]
        grids[task] = (kept, left)
    return grids


def left_out(points: list[Point], study: str = "glue") -> list[tuple[str, str]]:
    """``(experiment, why)`` of every point some task's grid left out (:func:`task_grids`), each once."""
    found: dict[str, str] = {p.name: p.unfinished for p in points if p.unfinished}
    for _, left in task_grids(points, study).values():
        for name, why in left:
            found.setdefault(name, why)
    return list(found.items())


def _rest(params: dict) -> dict:
    """The params that are no task's grid key: everything but the ``hparams`` blocks."""
    return {key: value for key, value in params.items() if key != "hparams"}


def _difference(params: dict, reference: dict, reference_name: str) -> str:
    """Every key where ``params`` differ from the grid's, as ``key=value (the grid's, as in <name>: value)``,
    joined by "; " (an experiment that changed several params names them all)."""
    return "; ".join(_differences(params, reference, reference_name))


def _differences(params: dict, reference: dict, reference_name: str, prefix: str = "") -> list[str]:
    found = []
    for key in [*reference, *(k for k in params if k not in reference)]:
        mine, theirs = params.get(key, "absent"), reference.get(key, "absent")
        if isinstance(mine, dict) and isinstance(theirs, dict):
            found += _differences(mine, theirs, reference_name, f"{prefix}{key}.")
        elif mine != theirs:
            found.append(f"{prefix}{key}={mine} (the grid's, as in {reference_name}: {theirs})")
    return found


def _numbers(block: dict) -> dict:
    """``dvc exp run -S lr=3e-5`` may leave ``'3e-05'`` (a string under YAML 1.1): read numbers as numbers."""
    result = {}
    for key, value in block.items():
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                pass
        result[key] = value
    return result


def grid_markdown(rows: list[dict], study: str, left: Sequence[tuple[str, str]] = ()) -> str:
    """The best points as a markdown table (dev main metric x 100, mean over the study's seeds)."""
    lines = [f"# Search grid: best point per task ({study} study, dev main metric)", "",
             "| Backbone | Task | Variant | Dev x 100 | Points | Best hyper-parameters | Experiments |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        params = ", ".join(f"{k} {_format(v)}" for k, v in sorted(row["hparams"].items()))
        tie = f" (tied with {row['tied']})" if row["tied"] else ""
        names = ", ".join(row["experiments"])
        if row.get("others"):
            names += "; the same hyper-parameters scored otherwise in " + ", ".join(
                f"{name} ({100 * score:.1f})" if isinstance(score, (int, float)) else f"{name} (no score)"
                for name, score in row["others"])
        lines.append(f"| {row['backbone']} | {row['task']} | {row['variant']} | {100 * row['dev_score']:.1f}{tie} | "
                     f"{row['points']} | {params} | {names} |")
    if not rows:
        lines.append("| — | — | — | — | 0 | no experiment has dev scores for this study | — |")
    lines += ["", "Dev scores: reports/metrics.json of each experiment (mean over seeds); the test sets are never "
              "used to choose. Points: distinct hparams.<task> blocks scored; a tie keeps the point listed first "
              "by `dvc exp show`. A grid holds only experiments whose params equal the workspace's (or the largest "
              "such set) but for hparams.<task>.", ""]
    if left:
        lines += ["Left out (other params than the grid's: another run, not a grid point; or not ended yet):", ""]
        lines += [f"- {name}: {why}" for name, why in left] + [""]
    return "\n".join(lines)


def read_exp_show(path: str | Path | None) -> list:
    """``dvc exp show --json`` from a file, or from running it here (``path`` None)."""
    if path is not None:
        text = read_text(path, what="dvc exp show --json output")
        origin = str(path)
    else:
        try:
            done = subprocess.run(["dvc", "exp", "show", "--json"], capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise SpanftError("dvc is not installed: pass the saved output of `dvc exp show --json`") from None
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise SpanftError(f"dvc exp show --json failed ({done.returncode}): {first}")
        text, origin = done.stdout, "dvc exp show --json"
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpanftError(f"{origin}:{exc.lineno}: not valid JSON ({exc.msg})") from None


def grid_report(exp_json: str | Path | None, study: str = "glue", out: str | Path | None = None) -> str:
    """The grid report's markdown (best point per task and variant by dev score), written to ``out`` if given."""
    points = experiment_points(read_exp_show(exp_json))
    left = left_out(points, study)
    for name, why in left:
        log.info("grid-report: left out %s: %s", name, why)
    text = grid_markdown(best_points(points, study), study, left)
    if out:
        with atomic_open(out, inputs=[exp_json] if exp_json else []) as handle:
            handle.write(text)
    return text
