"""What every table builder shares, each computed once per report: the plan, the runs and segmented
directories, the paper's numbers, which runs are which rows, the runs themselves and the comparisons of
run groups.

Which runs are which rows: :data:`TABLE_GROUPS` names, per table, the ``dvc.yaml`` fine-tuning groups whose
runs are its rows, in order (the first is the arm the others are compared with); a row's label, its paper
method and where its runs live come from the group's row of the variant table (:data:`spanft.params.plan.VARIANTS`).
Tables 2 and 3 test and time Table 1's two arms. Table 7 shows one row per span encoder: CNN-CNN, the
default encoder, is the snli study's sf runs, and every other one its ``sf-<encoder>`` runs.

The comparisons: variant against variant on the runs' own predictions, and McNemar per seed. Both read the
runs' ``predictions/<split>.tsv`` files, paired by ``idx``. :meth:`Comparisons.compare` scores every run on
the split; with two or more runs in each arm it is Welch's t-test over those per-seed scores
(:mod:`spanft.report.seedtest`, the verdict's test), else the example-level bootstrap of those runs. A bootstrap
column draws its examples from ``default_rng([reports.bootstrap.seed, crc32("<task>/<split>")])`` and its run
choices from ``default_rng([reports.bootstrap.seed, crc32("<task>")])``: columns scored by the same runs
(MNLI-m and MNLI-mm) share their run draws, and different tasks, different trainings, draw independently. An
average over columns (:func:`combine`) tests each seed's average over the columns (Welch), or averages the
columns' resampled gains (bootstrap).

:meth:`ReportContext.runs` loads a study's runs of one backbone, task and variant once and keeps them, so
:meth:`ReportContext.all_runs` lists every run the report read. The context also holds the row words the
tables share: a backbone's label, whether the data is synthetic (no verdict on the paper), the paper's row
for a backbone and method.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from spanft.errors import SpanftError
from spanft.params.plan import GROUPS, Plan, Variant
from spanft.report.bootstrap import (
    MIN_RESAMPLES,
    BootstrapResult,
    example_statistics,
    mean_of,
    metric_from_sums,
    paired_bootstrap,
)
from spanft.report.paper import Paper, PaperTable
from spanft.report.runs import Run, decode, load_runs, read_step_costs
from spanft.report.seedtest import SeedTest, seed_average, seed_test
from spanft.report.stats import McNemarResult, aligned_predictions, mcnemar_test
from spanft.report.trivial import TOLERANCE, trivial_score

Comparison = BootstrapResult | SeedTest  # what a gain's cell and verdict read: gain, low, high, p_value, ...

# -------------------------------------------------------------------------------------------- rows


DEFAULT_ENCODER = "cnn-cnn"  # Table 7's row every other encoder is compared with
ENCODER_LABELS = {"cnn-max": "CNN-Max", "cnn-cnn": "CNN-CNN", "attention-max": "Attention-Max",
                  "attention-attention": "Attention-Attention"}  # Table 7's rows, in the paper's order

# table -> its groups, in row order; a (group, label) pair words the row for that table only
TABLE_GROUPS: dict[int, tuple[str | tuple[str, str], ...]] = {
    1: ("glue_baseline", "glue_sf"),
    4: ("backbones_baseline", "backbones_sf"),
    5: ("snli_baseline", "snli_sf"),
    6: ("glue_baseline", "ablation_cnn_noseg", "ablation_random_seg", "ablation_chunker_seg",
        ("glue_sf", "+SF (n-gram)")),
    8: ("ner_baseline", "ner_sf"),
}


@dataclass(frozen=True)
class Method:
    """A table row group: a label and where its runs live (study, variant)."""

    label: str
    key: str  # the paper rows' method
    study: str
    variant: str


def _method(variant: Variant, label: str | None = None) -> Method:
    return Method(label or variant.label, variant.name, variant.study, variant.name)


def _encoder(encoder: str) -> Method:
    variant = GROUPS["snli_sf"] if encoder == DEFAULT_ENCODER else GROUPS["snli_sf_encoder"]
    name = variant.run_name({"encoder": encoder})
    return Method(ENCODER_LABELS[encoder], encoder, variant.study, name)


def methods(table: int) -> list[Method]:
    """Table ``table``'s row groups, in order."""
    if table == 7:
        return [_encoder(encoder) for encoder in ENCODER_LABELS]
    return [_method(GROUPS[entry]) if isinstance(entry, str) else _method(GROUPS[entry[0]], entry[1])
            for entry in TABLE_GROUPS[table]]

# ------------------------------------------------------------------------------------- comparisons


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
        self._cache: dict[tuple, Comparison] = {}
        self._decoded: dict[tuple, tuple[list, list[list]]] = {}

    def column_seed(self, task: str, split: str) -> list[int]:
        """The stream of a bootstrap column's example draws."""
        return [self.seed, zlib.crc32(f"{task}/{split}".encode())]

    def run_seed(self, task: str) -> list[int]:
        """The stream of a bootstrap column's run draws: one per task, so the task's splits share it."""
        return [self.seed, zlib.crc32(task.encode())]

    def compare(self, runs_a: Sequence[Run], runs_b: Sequence[Run], split: str, metric: str) -> Comparison:
        """Gain of the B runs over the A runs in ``metric`` on ``split`` (metric units), mean over seeds: Welch's
        test over per-seed scores when both arms hold two or more runs, else the example-level bootstrap."""
        if min(len(runs_a), len(runs_b)) >= 2:
            return self.seed_test(runs_a, runs_b, split, metric)
        return self.bootstrap(runs_a, runs_b, split, metric)

    def seed_test(self, runs_a: Sequence[Run], runs_b: Sequence[Run], split: str, metric: str) -> SeedTest:
        key = ("welch", tuple(r.path for r in runs_a), tuple(r.path for r in runs_b), split, metric)
        if key not in self._cache:
            task = runs_a[0].spec
            gold, predictions = self._predictions([*runs_a, *runs_b], split)
            scores = [float(metric_from_sums(task, metric, example_statistics(task, metric, gold, pred).sum(axis=0)))
                      for pred in predictions]
            trivial = trivial_score(task, metric, gold)[0]  # a run no better failed (report/degenerate.py)
            a, b = scores[:len(runs_a)], scores[len(runs_a):]

            def failed(runs: Sequence[Run], arm: list[float]) -> list[int]:
                return [run.seed for run, score in zip(runs, arm) if math.isnan(score) or score <= trivial + TOLERANCE]

            self._cache[key] = seed_test(a, b, [r.seed for r in runs_a], [r.seed for r in runs_b], len(gold),
                                         failed(runs_a, a), failed(runs_b, b))
        return self._cache[key]

    def bootstrap(self, runs_a: Sequence[Run], runs_b: Sequence[Run], split: str, metric: str) -> BootstrapResult:
        """Gain of the B runs over the A runs in ``metric`` on ``split`` (metric units): mean over seeds, with the
        bootstrap of :func:`paired_bootstrap` (an arm's runs resampled when it holds two or more)."""
        key = ("bootstrap", tuple(r.path for r in runs_a), tuple(r.path for r in runs_b), split, metric)
        if key not in self._cache:
            task = runs_a[0].spec
            gold, predictions = self._predictions([*runs_a, *runs_b], split)
            self._cache[key] = paired_bootstrap(task, metric, gold, predictions[:len(runs_a)],
                                                predictions[len(runs_a):], self.resamples,
                                                self.column_seed(task.name, split), run_seed=self.run_seed(task.name))
        return self._cache[key]

    def _predictions(self, runs: Sequence[Run], split: str) -> tuple[list, list[list]]:
        """Gold labels and each run's predictions on ``split``, decoded, in one idx order."""
        key = (tuple(r.path for r in runs), split)
        if key not in self._decoded:
            task = runs[0].spec
            gold, predictions = aligned_predictions([run.predictions(split) for run in runs])
            decoded_gold = decode(task, gold, runs[0].predictions(split))
            decoded = [decode(task, pred, run.predictions(split)) for pred, run in zip(predictions, runs)]
            self._decoded[key] = (decoded_gold, decoded)
        return self._decoded[key]

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

def combine(results: Sequence[Comparison]) -> Comparison:
    """The gain of an average over columns: Welch's test of the per-seed averages (seeds shared across the
    columns: MNLI-m and MNLI-mm keep their runs' seed), or the mean of the columns' resampled gains."""
    if results and all(isinstance(r, SeedTest) for r in results):
        return seed_average(results)
    if results and all(isinstance(r, BootstrapResult) for r in results):
        return mean_of(results)
    raise SpanftError("an average over columns mixes seed tests and bootstraps (columns with 1 and with 2+ seeds)")

# ------------------------------------------------------------------------------------- the context


class ReportContext:
    """The plan, directories, paper and comparisons of one report, and its runs, each loaded once."""

    def __init__(self, plan: Plan, runs_dir: Path, segmented_dir: Path, paper: Paper,
                 comparisons: Comparisons | None = None, step_cost_file: Path | None = None):
        self.plan = plan
        self.runs_dir = Path(runs_dir)
        self.segmented_dir = Path(segmented_dir)
        self._step_costs = read_step_costs(Path(step_cost_file)) if step_cost_file is not None else None
        self.paper = paper
        self.comparisons = comparisons or Comparisons(plan.reports.bootstrap_resamples, plan.reports.bootstrap_seed)
        self._cache: dict[tuple, list[Run]] = {}

    def runs(self, study: str, backbone: str, task: str, variant: str, seeds: list[int]) -> list[Run]:
        key = (study, backbone, task, variant, tuple(seeds))
        if key not in self._cache:
            self._cache[key] = load_runs(self.runs_dir, study, backbone, task, variant, seeds)
        return self._cache[key]

    def step_costs(self, backbone: str) -> tuple[dict[str, dict], str | None]:
        """Table 3's side-by-side step costs of a glue backbone by task, and the device that timed them (the
        step_cost stage's file; ({}, None) where it has none)."""
        if not self._step_costs:
            return {}, None
        return self._step_costs["backbones"].get(backbone, {}), self._step_costs["device"]

    def all_runs(self) -> list[Run]:
        """Every run the tables read, once each."""
        return [run for runs in self._cache.values() for run in runs]

    @property
    def synthetic(self) -> bool:
        """Synthetic task data (params ``data.source``): no verdict on the paper."""
        return self.plan.synthetic

    def backbone_label(self, backbone: str) -> str:
        paper = self.plan.paper_name(backbone)
        return backbone if paper == backbone else f"{backbone} (for {paper})"

    def paper_row(self, paper_table: PaperTable | None, backbone: str, method: str, stand_in: bool = False):
        """The paper's row for our backbone (or, with ``stand_in``, the table's first backbone when it has none)."""
        if paper_table is None:
            return None
        name = self.plan.paper_name(backbone)
        if stand_in:
            name = paper_table.stand_in(name)
        return paper_table.find(name, method)

    def stand_in_words(self, paper_table: PaperTable, backbone: str, row) -> str:
        """Whose rows a paper number comes from: ours, another backbone's (ours has none), or unnamed."""
        ours = self.plan.paper_name(backbone)
        if row.backbone is None:
            return "backbone not named"
        if paper_table.find(ours, row.method) is row:
            return row.label.replace(" + SF", "") + " rows"
        return f"{row.label.replace(' + SF', '')} rows; the paper has none for {ours}"
