"""The cost model's arithmetic: training steps, step times and hours of every fine-tuning run of a plan.

``benchmarks/cost_model.py`` (the full model, with measured lengths) and ``spanft plan`` (an answer in seconds)
share it. A run's hours = steps x step time x (1 + the evaluation share):

- steps = ceil(train examples / batch size) x epochs; train examples are the public datasets' sizes (synthetic
  data: ``data.synthetic.train_size``), cut at ``hparams.<task>.max_train_examples``;
- a step at batch 32 x 128 tokens takes ``step_ms_base`` on a base-size backbone (a ``large`` one: x
  ``large_factor``); a step's ``fixed_share`` stays whatever its tokens, the rest scales with its tokens per
  step (``tokens``: measured, else batch x max_seq_len, an upper bound); the span module (every variant but
  ``baseline``) takes ``sf_overhead`` times a baseline step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from spanft.errors import SpanftError
from spanft.params.plan import Plan, PlannedRun

# Training examples of the public datasets (SNLI: gold label -1 dropped; CoNLL-2003: sentences).
TRAIN_EXAMPLES = {
    "cola": 8551, "sst2": 67349, "mrpc": 3668, "stsb": 5749, "qqp": 363846, "mnli": 392702, "qnli": 104743,
    "rte": 2490, "wnli": 635, "snli": 549367, "conll2003": 14041,
}
REFERENCE_BATCH, REFERENCE_LEN = 32, 128
EVAL_FRACTION = 0.10  # evaluation and prediction, as a share of the training time (assumed)

TokensPerStep = Callable[[str, int, int], float]  # (task, batch, max_seq_len) -> tokens of a training step


class CostModelError(SpanftError):
    """An option or input the model cannot use (one line)."""


@dataclass(frozen=True)
class Assumptions:
    step_ms_base: float  # training step of a base backbone, batch 32 x 128, baseline head
    large_factor: float
    sf_overhead: float  # step time with the span module / without
    eval_fraction: float = EVAL_FRACTION
    # share of a step that does not grow with its tokens (kernel launches, optimizer), per size; 0 = linear
    fixed_share: Mapping[str, float] = field(default_factory=dict)

    def check(self) -> None:
        for name in ("step_ms_base", "large_factor", "sf_overhead"):
            if not getattr(self, name) > 0:
                raise CostModelError(f"--{name.replace('_', '-')} must be positive, got {getattr(self, name)}")
        if self.eval_fraction < 0:
            raise CostModelError(f"--eval-fraction must be >= 0, got {self.eval_fraction}")


def backbone_size(name: str, plan: Plan) -> str:
    """``large`` when the backbone's name or hub id (``backbones.hub.<name>.hub_id``) says so, else ``base``."""
    spec = plan.backbones.get(name)
    hub_id = spec.settings.get("hub_id", "") if spec is not None and spec.source == "hub" else ""
    label = f"{name} {hub_id}".lower()
    return "large" if "large" in label else "base"


def train_examples(task: str, plan: Plan) -> int:
    """The training examples a run of ``task`` sees: the dataset's size, cut at ``max_train_examples``."""
    if plan.synthetic:
        size = plan.data.synthetic.train_size
    elif task in TRAIN_EXAMPLES:
        size = TRAIN_EXAMPLES[task]
    else:
        raise CostModelError(f"task {task}: no public train size known ({', '.join(TRAIN_EXAMPLES)})")
    cap = plan.hparams[task].max_train_examples
    return min(size, cap) if cap else size


def train_steps(task: str, plan: Plan) -> int:
    hparams = plan.hparams[task]
    return math.ceil(train_examples(task, plan) / hparams.batch_size) * hparams.epochs


def padded_to_the_cap(task: str, batch: int, max_seq_len: int) -> float:
    """Tokens of a step when every example is padded to ``max_seq_len`` (an upper bound)."""
    return float(batch * max_seq_len)


def step_ms(run: PlannedRun, plan: Plan, assumptions: Assumptions, tokens: TokensPerStep = padded_to_the_cap) -> float:
    """Milliseconds of one training step of this run."""
    hparams = plan.hparams[run.task]
    size = backbone_size(run.backbone, plan)
    fixed = assumptions.fixed_share.get(size, 0.0)
    scale = tokens(run.task, hparams.batch_size, hparams.max_seq_len) / (REFERENCE_BATCH * REFERENCE_LEN)
    ms = assumptions.step_ms_base * (fixed + (1 - fixed) * scale)
    if size == "large":
        ms *= assumptions.large_factor
    return ms if run.variant == "baseline" else ms * assumptions.sf_overhead


COLUMNS = ["study", "backbone", "task", "variant", "seed", "size", "steps", "step_ms", "gpu_hours"]


def cost_table(plan: Plan, assumptions: Assumptions, tokens: TokensPerStep = padded_to_the_cap) -> pd.DataFrame:
    """One row per run: its steps, step time and GPU-hours (evaluation included)."""
    assumptions.check()
    rows = []
    for run in plan.runs():
        steps = train_steps(run.task, plan)
        ms = step_ms(run, plan, assumptions, tokens)
        hours = steps * ms * (1 + assumptions.eval_fraction) / 3_600_000
        rows.append({"study": run.study, "backbone": run.backbone, "task": run.task, "variant": run.variant,
                     "seed": run.seed, "size": backbone_size(run.backbone, plan), "steps": steps, "step_ms": ms,
                     "gpu_hours": hours})
    return pd.DataFrame(rows, columns=COLUMNS)


@dataclass(frozen=True)
class StepFit:
    """A measured step-time line of one backbone size: ms = fixed + per_token x tokens (baseline head)."""

    fixed_ms: float
    per_token_ms: float
    sf_overhead: float
    points: int
    device: str

    def at(self, tokens: float) -> float:
        return self.fixed_ms + self.per_token_ms * tokens


def fit_step_times(timings: dict, size: str) -> StepFit:
    """Least-squares line through the baseline steps of ``bench_step.py``'s GPU rows of one size."""
    prefix = {"base": "bert-base-gpu", "large": "bert-large-gpu"}[size]  # the 32 x T rows and the grouped one
    fit = fit_rows(timings, prefix)
    if fit is None or fit.points < 2:
        raise CostModelError(f"--timings: fewer than two '{prefix}' rows: run bench_step.py on a GPU")
    return fit


def fit_rows(timings: dict, prefix: str) -> StepFit | None:
    """The step-time line through ``bench_step.py``'s rows whose name starts with ``prefix``: least squares
    through two or more (slope kept >= 0: a flat line at the mean), through 0 with one; None without rows."""
    rows = [row for name, row in timings.items() if name.startswith(prefix) and isinstance(row, dict)
            and "baseline_mean_s" in row]
    if not rows:
        return None
    tokens = np.array([row["tokens_per_step"] for row in rows], dtype=float)
    ms = np.array([row["baseline_mean_s"] * 1000 for row in rows])
    if len(rows) == 1:
        slope, intercept = ms[0] / tokens[0], 0.0
    else:
        slope, intercept = np.polyfit(tokens, ms, 1)
    if slope < 0:  # steps that do not grow with tokens: a flat line at the mean
        slope, intercept = 0.0, float(ms.mean())
    overhead = float(np.mean([row["sf_mean_s"] / row["baseline_mean_s"] for row in rows]))
    return StepFit(float(intercept), float(slope), overhead, len(rows), rows[0].get("device", "?"))


def wall_clock_hours(hours: list[float], gpus: int) -> float:
    """Hours until the last run ends when ``gpus`` run at once, each run going, in order, to the first GPU free.

    That is how a SLURM job array with ``%gpus`` (``spanft fanout``, one GPU a job) fills up: in submission
    order, never reordered. Model loading and queue waits are not counted.
    """
    free_at = [0.0] * gpus
    for run in hours:
        first = min(range(gpus), key=free_at.__getitem__)
        free_at[first] += run
    return max(free_at, default=0.0)
