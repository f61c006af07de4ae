"""Variant against variant on the runs' own predictions: the two-level paired bootstrap and McNemar per seed.

Both read the runs' ``predictions/<split>.tsv`` files, paired by ``idx``. Each (task, split) column draws its
resamples from its own stream, ``default_rng([reports.bootstrap.seed, crc32("<task>/<split>")])``: the same
draws wherever that column is compared with as many runs a side, and independent draws (of runs and of
examples) for different columns, whose runs are different trainings, so the gain of an
average over columns is bootstrapped by averaging the columns' resampled gains.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from spanft.data.registry import TaskSpec
from spanft.errors import SpanftError
from spanft.report.bootstrap import MIN_RESAMPLES, BootstrapResult, paired_bootstrap
from spanft.report.runs import Run
from spanft.report.stats import McNemarResult, aligned_predictions, mcnemar_test


@dataclass(frozen=True)
class SeedPair:
    """McNemar's test of the baseline and SF runs that share a seed."""

    seed: int
    result: McNemarResult

    @property
    def favours(self) -> str:
        """Which side is right more often on the discordant examples: sf, baseline or neither."""
        a, b = self.result.only_a_correct, self.result.only_b_correct
        return "sf" if b > a else "baseline" if a > b else "neither"


class Comparisons:
    """Bootstraps and per-seed McNemar tests of run groups, each computed once per report."""

    def __init__(self, resamples: int, seed: int):
        if resamples < MIN_RESAMPLES:
            raise SpanftError(f"reports.bootstrap.resamples must be at least {MIN_RESAMPLES} (a 95% interval needs "
                              f"2/(R+1) <= 0.05), found {resamples}")
        self.resamples = resamples
        self.seed = seed
        self._cache: dict[tuple, BootstrapResult] = {}

    def column_seed(self, task: str, split: str) -> list[int]:
        return [self.seed, zlib.crc32(f"{task}/{split}".encode())]

    def bootstrap(self, runs_a: Sequence[Run], runs_b: Sequence[Run], split: str, metric: str) -> BootstrapResult:
        """Gain of the B runs over the A runs in ``metric`` on ``split`` (metric units): mean over seeds, with the
        two-level bootstrap (seeds within each arm, then examples) of :func:`paired_bootstrap`."""
        key = (tuple(r.path for r in runs_a), tuple(r.path for r in runs_b), split, metric)
        if key not in self._cache:
            task = runs_a[0].spec
            gold, predictions = aligned_predictions([run.predictions(split) for run in [*runs_a, *runs_b]])
            where = runs_a[0].predictions(split)
            decoded_gold = decode(task, gold, where)
            decoded = [decode(task, pred, run.predictions(split)) for pred, run in zip(predictions, [*runs_a, *runs_b])]
            seed = self.column_seed(task.name, split)
            self._cache[key] = paired_bootstrap(task, metric, decoded_gold, decoded[:len(runs_a)],
                                                decoded[len(runs_a):], self.resamples, seed)
        return self._cache[key]

    def seed_pairs(self, runs_a: Sequence[Run], runs_b: Sequence[Run], split: str) -> list[SeedPair]:
        """McNemar's test of each seed's baseline run against the same seed's SF run."""
        by_seed = {run.seed: run for run in runs_b}
        pairs = []
        for run in runs_a:
            if run.seed in by_seed:
                paths = [run.predictions(split), by_seed[run.seed].predictions(split)]
                gold, (pred_a, pred_b) = aligned_predictions(paths)
                pairs.append(SeedPair(run.seed, mcnemar_test(gold, pred_a, pred_b)))
        return pairs


def decode(task: TaskSpec, column: np.ndarray, where: Path) -> list:
    """Label ids (classification), floats (regression) or tag-id lists (tagging) from TSV strings."""
    try:
        if task.is_tagging:
            return [[task.label_id(tag) for tag in row.split()] for row in column]
        if task.is_regression:
            return [float(value) for value in column]
        return [task.label_id(name) for name in column]
    except (SpanftError, ValueError) as exc:
        raise SpanftError(f"{where}: {exc}") from None
