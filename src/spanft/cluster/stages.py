"""What DVC says about the head repo's graph: the training stages, their upstream, which ones must run.

Everything is read from DVC's own index (``dvc.repo.Repo``): a training stage is one whose script dependency
is one of :data:`TRAINING_SCRIPTS` (the fine-tuning runs and Table 3's side-by-side step costs, both work for
a job's GPU); its upstream is what DVC's graph says it depends on; it must run when
DVC finds it changed and cannot restore it: neither its lock's outputs nor a run of the same command,
dependencies and params are in the cache.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from dvc.dependency.base import DependencyDoesNotExistError
from dvc.repo import Repo
from dvc.stage.cache import RunCacheNotFoundError, _can_hash, _get_stage_hash
from dvc_data.hashfile.hash_info import HashInfo
from ruamel.yaml import YAML

from spanft.cluster.workspace import LOCK_FILE
from spanft.stage.lock_backup import dvc_logs_quiet

TRAINING_SCRIPTS = ("pipeline/finetune.py", "pipeline/step_cost.py")


@dataclass(frozen=True)
class StaleStage:
    """A training stage ``dvc repro`` would run, and the stages whose outputs it reads."""

    name: str  # DVC's address: glue_sf@tiny-cola-1
    upstream: tuple[str, ...]
    key: str = ""  # DVC's run-cache key of the run (command, dependencies' hashes, params): one run, one key


@contextlib.contextmanager
def open_repo(root: Path) -> Iterator[Repo]:
    """DVC's repo at ``root``, with ``root`` as the working directory (DVC resolves stage paths from there).

    Opened at the real path: DVC relates its root to the working directory, which the system reports resolved,
    so a root reached through a symbolic link would put every stage outside the repo. (The jobs still get the
    path as the user gave it.)"""
    real = root.resolve()
    with contextlib.chdir(real), Repo(str(real)) as repo:
        yield repo


def is_training(stage) -> bool:
    return any(dep.def_path in TRAINING_SCRIPTS for dep in getattr(stage, "deps", []))


def training_stages(repo: Repo) -> list:
    return [stage for stage in repo.index.stages if is_training(stage)]


def upstream_of(repo: Repo, stages: list) -> list[str]:
    """The stages whose outputs the given ones read (DVC runs their own upstream when asked to run them)."""
    graph = repo.index.graph  # edges point from a stage to the stages it depends on
    return sorted({dep.addressing for stage in stages for dep in graph.successors(stage) if not is_training(dep)})


def _lock_applies(stage) -> bool:
    """DVC's first choice when it restores a stage: the lock's record, if the dependencies still match it.

    When it applies, DVC checks out the recorded outputs or runs the stage; it looks in the run-cache only
    when the record does not apply (``StageCache.restore``).
    """
    return not stage.changed_stage() and stage.deps_cached() and all(out.hash_info for out in stage.outs)


def _in_run_cache(repo: Repo, stage) -> bool:
    """Whether the run-cache holds a run of the stage's command on its dependencies' current hashes.

    Changes the stage in memory (its dependencies' hashes taken, its outputs' forgotten): call it last.
    """
    with dvc_logs_quiet():
        try:
            stage.save_deps()  # the dependencies' current hashes: the run-cache key
            for out in stage.outs:  # forget the lock's outputs, or restore() would take them for the cached run
                out.hash_info = HashInfo()
            repo.stage_cache.restore(stage, dry=True)
        except (RunCacheNotFoundError, DependencyDoesNotExistError):
            return False
    return True


def _lock_outputs_cached(stage) -> bool:
    """The lock's record applies and the outputs it names are in the cache."""
    with dvc_logs_quiet():
        try:
            return _lock_applies(stage) and stage.outs_cached()
        except DependencyDoesNotExistError:
            return False


def restorable(repo: Repo, stage) -> bool:
    """Whether the join can check the stage's outputs out instead of running it (what a finished job left).

    The lock's outputs when its record applies and they are cached; else a run in the run-cache. (A lock
    committed from another machine's runs records outputs this cache lacks: :func:`forget_uncached_records`
    drops such records before the join, so that DVC looks in the run-cache for them.)
    """
    return _lock_outputs_cached(stage) or _in_run_cache(repo, stage)


def run_key(stage) -> str:
    """DVC's run-cache key of the stage on its dependencies' hashes as last taken (``save_deps``: called by
    :func:`_in_run_cache`): the name of the run-cache entry its run writes; '' for a stage DVC cannot cache."""
    try:
        return _get_stage_hash(stage) if _can_hash(stage) else ""
    except Exception:  # a private helper of DVC's: a change there costs the claim, never the run
        return ""


def forget_uncached_records(root: Path) -> list[str]:
    """Drop from ``dvc.lock`` the fine-tuning records whose outputs the cache lacks but whose run it holds.

    Such a record (runs made on another machine, committed with the repo) makes ``dvc repro`` run the stage
    again rather than restore the job's run: DVC consults the run-cache only for stages without an applicable
    record. Dropped, the join restores the run and writes the record anew. Returns the stages dropped.
    """
    with open_repo(root) as repo, repo.lock:
        dropped = []
        for stage in training_stages(repo):
            with dvc_logs_quiet():
                applies = stage.changed() and _lock_applies(stage)
            if applies and not _lock_outputs_cached(stage) and _in_run_cache(repo, stage):
                dropped.append(stage.addressing)
        if dropped:
            drop_lock_records(root / LOCK_FILE, dropped)
        return dropped


def drop_lock_records(lock: Path, names: list[str]) -> None:
    """Remove the named stages' records from ``dvc.lock``, through its documented file format (a YAML mapping
    ``stages: {name: record}``; a matrix stage's name is its full address), round-tripped so the rest is kept."""
    yaml = YAML()
    tree = yaml.load(lock.read_text(encoding="utf-8"))
    for name in names:
        tree["stages"].pop(name, None)
    partial = lock.with_name(lock.name + ".partial")
    with partial.open("w", encoding="utf-8") as handle:
        yaml.dump(tree, handle)
    partial.replace(lock)


def run_cached(root: Path, address: str) -> bool:
    """Whether the run-cache holds the run of stage ``address`` on its dependencies as they are now in ``root``."""
    with open_repo(root) as repo:
        return any(_in_run_cache(repo, stage) for stage in repo.index.stages if stage.addressing == address)


def stale_training_stages(root: Path) -> tuple[list[StaleStage], int, int]:
    """The training stages to send, how many are up to date, and how many the cache can restore.

    Call after the upstream stages ran: a stage is stale when DVC finds it changed (``Stage.changed``, what
    ``dvc status`` reports) and cannot restore it from the cache (:func:`restorable`).
    """
    with open_repo(root) as repo, repo.lock:
        stale, fresh, cached = [], 0, 0
        for stage in training_stages(repo):
            with dvc_logs_quiet():
                changed = stage.changed()
            if not changed:
                fresh += 1
            elif restorable(repo, stage):
                cached += 1
            else:
                stale.append(StaleStage(stage.addressing, tuple(upstream_of(repo, [stage])), run_key(stage)))
        return stale, fresh, cached


def finetune_upstream(root: Path) -> list[str]:
    """The stages the training stages read from (task data, segmentations, backbones), not their upstream."""
    with open_repo(root) as repo:
        return upstream_of(repo, training_stages(repo))


def stage_paths(root: Path) -> tuple[list[str], list[str]]:
    """The paths (relative to the root) that stages write, and those inside the repo that they read."""
    with open_repo(root) as repo:
        stages = repo.index.stages
        outs = {out.def_path for stage in stages for out in stage.outs}
        deps = {dep.def_path for stage in stages for dep in stage.deps if dep.is_in_repo}
        return sorted(outs), sorted(deps - outs)
