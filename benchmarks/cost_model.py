"""GPU-hours of each study of a params profile (the paper profile by default), from one measured step time.

    python benchmarks/cost_model.py --gpu "A100 80GB" --step-ms-base 110 --large-factor 3.2 \\
        [--params profiles/paper.yaml] [--sf-overhead R] [--eval-fraction F]

Model (every assumption printed with the tables):
- a training step of a base-size backbone at batch 32 x 128 tokens takes ``--step-ms-base`` ms on the GPU; a
  large backbone (``large`` in its name or hub id) takes ``--large-factor`` times that; a task whose
  ``hparams`` use another batch size or sequence length scales linearly in tokens per step (batch x length);
- a run with the span module (every variant but ``baseline``) takes ``--sf-overhead`` times a baseline step;
  the default is the sf / baseline step ratio measured in benchmarks/RESULTS.md (bench_step.py), preferring
  a GPU bert-base row, then all-MiniLM-L6-v2 on CPU, then the tiny backbone;
- steps per run = ceil(train examples / batch size) x epochs, the train sizes being the public datasets';
- evaluation (dev each epoch, dev and test prediction at the end) adds ``--eval-fraction`` of the training
  time (default 0.10: forward-only passes cost about a third of a training step per example, and the dev and
  test sets are a few percent of the training passes for MNLI, SST-2, QNLI and SNLI, 15-20% for QQP and RTE);
- the runs are the graph's fine-tuning runs, from spanft.params.studies.planned_runs: glue, backbones and ner
  run baseline and sf; snli runs baseline, sf and one sf run per extra encoder; ablation runs cnn-noseg,
  random-seg and chunker-seg (its baseline and sf rows come from the glue study); dictsize runs every method
  x every ``dict_sizes`` entry. Each study is counted as it runs: no run is shared between studies.
Model loading, data preparation, n-gram counting and segmentation are not counted (CPU work, minutes).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from spanft.errors import SpanftError
from spanft.params.studies import planned_runs

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"

# Training examples of the public datasets (SNLI: gold label -1 dropped; CoNLL-2003: sentences).
TRAIN_EXAMPLES = {
    "cola": 8551, "sst2": 67349, "mrpc": 3668, "stsb": 5749, "qqp": 363846, "mnli": 392702, "qnli": 104743,
    "rte": 2490, "wnli": 635, "snli": 549367, "conll2003": 14041,
}
REFERENCE_BATCH, REFERENCE_LEN = 32, 128


class CostModelError(Exception):
    """A params file or an option the model cannot use (printed as one line)."""


@dataclass(frozen=True)
class Assumptions:
    step_ms_base: float  # training step of a base backbone, batch 32 x 128, baseline head
    large_factor: float
    sf_overhead: float  # step time with the span module / without
    eval_fraction: float = 0.10

    def check(self) -> None:
        for name in ("step_ms_base", "large_factor", "sf_overhead"):
            if not getattr(self, name) > 0:
                raise CostModelError(f"--{name.replace('_', '-')} must be positive, got {getattr(self, name)}")
        if self.eval_fraction < 0:
            raise CostModelError(f"--eval-fraction must be >= 0, got {self.eval_fraction}")


@dataclass(frozen=True)
class Run:
    study: str
    backbone: str
    task: str
    variant: str
    seed: int


# ------------------------------------------------------------------------------------------------ runs


def _key(params: dict, dotted: str, source: str) -> Any:
    node: Any = params
    for depth, part in enumerate(dotted.split(".")):
        if not isinstance(node, dict) or part not in node:
            raise CostModelError(f"{source}: key {'.'.join(dotted.split('.')[:depth + 1])} not found")
        node = node[part]
    return node


def study_runs(params: dict, source: str = "params") -> list[Run]:
    """Every fine-tuning run of every study: backbones x tasks x seeds x variants."""
    try:
        return [Run(r.study, r.backbone, r.task, r.variant, r.seed) for r in planned_runs(params, source)]
    except SpanftError as exc:
        raise CostModelError(str(exc)) from None


# ------------------------------------------------------------------------------------------------ cost


def backbone_size(name: str, params: dict) -> str:
    """``large`` when the backbone's name or hub id (``backbones.hub.<name>.hub_id``) says so, else ``base``."""
    spec = (params.get("backbones", {}).get("hub") or {}).get(name) or {}
    label = f"{name} {spec.get('hub_id', '')}".lower()
    return "large" if "large" in label else "base"


def train_steps(task: str, hparams: dict, source: str = "params") -> int:
    if task not in TRAIN_EXAMPLES:
        raise CostModelError(f"{source}: task {task}: no public train size known ({', '.join(TRAIN_EXAMPLES)})")
    batch = int(hparams.get("batch_size", REFERENCE_BATCH))
    return math.ceil(TRAIN_EXAMPLES[task] / batch) * int(_required(hparams, "epochs", task, source))


def _required(hparams: dict, key: str, task: str, source: str) -> Any:
    if key not in hparams:
        raise CostModelError(f"{source}: hparams.{task}.{key} not found")
    return hparams[key]


def step_ms(run: Run, params: dict, assumptions: Assumptions, source: str = "params") -> float:
    """Milliseconds of one training step of this run."""
    hparams = _key(params, f"hparams.{run.task}", source)
    tokens = int(hparams.get("batch_size", REFERENCE_BATCH)) * int(hparams.get("max_seq_len", REFERENCE_LEN))
    ms = assumptions.step_ms_base * tokens / (REFERENCE_BATCH * REFERENCE_LEN)
    if backbone_size(run.backbone, params) == "large":
        ms *= assumptions.large_factor
    return ms if run.variant == "baseline" else ms * assumptions.sf_overhead


def cost_table(params: dict, assumptions: Assumptions, source: str = "params") -> pd.DataFrame:
    """One row per run: its steps, step time and GPU-hours (evaluation included)."""
    assumptions.check()
    rows = []
    for run in study_runs(params, source):
        steps = train_steps(run.task, _key(params, f"hparams.{run.task}", source), source)
        ms = step_ms(run, params, assumptions, source)
        hours = steps * ms * (1 + assumptions.eval_fraction) / 3_600_000
        rows.append({**run.__dict__, "size": backbone_size(run.backbone, params), "steps": steps, "step_ms": ms,
                     "gpu_hours": hours})
    return pd.DataFrame(rows, columns=["study", "backbone", "task", "variant", "seed", "size", "steps", "step_ms",
                                       "gpu_hours"])


def study_summary(table: pd.DataFrame, study: str) -> pd.DataFrame:
    """Runs, steps per run and GPU-hours of one study, by backbone and task."""
    rows = table[table["study"] == study]
    return (rows.groupby(["backbone", "task"], sort=False)
            .agg(runs=("variant", "size"), steps_per_run=("steps", "first"), gpu_hours=("gpu_hours", "sum"))
            .reset_index())


# ------------------------------------------------------------------------------------------------ inputs


def measured_sf_overhead(results: Path = RESULTS) -> tuple[float, str]:
    """The sf / baseline training-step ratio measured in RESULTS.md's summary, and the row it came from."""
    if not results.is_file():
        raise CostModelError(f"{results} not found: pass --sf-overhead")
    pattern = re.compile(r"^\|\s*training step, (?P<what>[^|]*?)\s*\|\s*(?P<sf>[\d.]+) / (?P<base>[\d.]+) ms")
    found = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        match = pattern.match(line)
        if match:
            found.setdefault(match["what"], float(match["sf"]) / float(match["base"]))
    for wanted in ("bert-base config, GPU", "all-MiniLM-L6-v2, CPU", "tiny backbone, CPU"):
        for what, ratio in found.items():
            if what.startswith(wanted):
                return ratio, f"{results.name}: training step, {what}"
    raise CostModelError(f"{results}: no measured 'training step ... sf / baseline' row: pass --sf-overhead")


def load_params(path: Path) -> dict:
    if not path.is_file():
        raise CostModelError(f"--params {path}: not found")
    try:
        params = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CostModelError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(params, dict):
        raise CostModelError(f"{path}: expected a mapping of parameters")
    return params


# ------------------------------------------------------------------------------------------------ report


def report(params: dict, table: pd.DataFrame, assumptions: Assumptions, gpu: str, source: str,
           overhead_source: str) -> str:
    lines = [f"Cost model: {source} (profile {params.get('profile', '?')}), GPU-hours on {gpu}", ""]
    for study in table["study"].unique():
        summary = study_summary(table, study)
        runs = table[table["study"] == study]
        names = list(runs["variant"].unique())
        variants = ", ".join(names) if len(names) <= 5 else f"{len(names)} variants: {names[0]} ... {names[-1]}"
        lines += [f"## {study}: {len(runs)} runs ({variants}), {runs['gpu_hours'].sum():,.1f} GPU-h",
                  summary.to_string(index=False, float_format=lambda v: f"{v:,.2f}"), ""]
    totals = table.groupby("study", sort=False).agg(runs=("variant", "size"), gpu_hours=("gpu_hours", "sum"))
    totals.loc["total"] = [len(table), table["gpu_hours"].sum()]
    lines += ["## total", totals.reset_index().to_string(index=False, float_format=lambda v: f"{v:,.1f}"), ""]
    sizes = ", ".join(f"{name}: {backbone_size(name, params)}" for name in table["backbone"].unique())
    lines += [
        "Assumptions:",
        f"- base backbone training step at batch {REFERENCE_BATCH} x {REFERENCE_LEN}: {assumptions.step_ms_base:g} ms on "
        f"{gpu}; large backbones x {assumptions.large_factor:g} ({sizes}); other batch x length scale linearly",
        f"- span module (every variant but baseline): x {assumptions.sf_overhead:.3f} per step ({overhead_source})",
        f"- steps per run = ceil(train examples / batch) x epochs (hparams of {source}); evaluation and "
        f"prediction add {assumptions.eval_fraction:.0%} of the training time",
        "- train examples: " + ", ".join(f"{task} {n:,}" for task, n in TRAIN_EXAMPLES.items()),
        "- not counted: model download and loading, data preparation, n-gram counting, segmentation (CPU)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", required=True, help='the GPU the step time was measured on, e.g. "A100 80GB"')
    parser.add_argument("--step-ms-base", type=float, required=True,
                        help="ms per training step of bert-base at batch 32 x 128 (baseline head)")
    parser.add_argument("--large-factor", type=float, required=True, help="large-backbone step / base step")
    parser.add_argument("--sf-overhead", type=float, default=None,
                        help="span-module step / baseline step (default: measured, benchmarks/RESULTS.md)")
    parser.add_argument("--eval-fraction", type=float, default=0.10,
                        help="evaluation and prediction time as a fraction of training time (default 0.10)")
    parser.add_argument("--params", default=str(HERE.parent / "profiles" / "paper.yaml"), help="params YAML")
    args = parser.parse_args(argv)
    try:
        overhead, overhead_source = ((args.sf_overhead, "--sf-overhead") if args.sf_overhead is not None
                                     else measured_sf_overhead())
        assumptions = Assumptions(args.step_ms_base, args.large_factor, overhead, args.eval_fraction)
        params = load_params(Path(args.params))
        source = os.path.relpath(args.params) if Path(args.params).is_absolute() else args.params
        table = cost_table(params, assumptions, source=source)
    except CostModelError as exc:
        print(f"cost_model: error: {exc}", file=sys.stderr)
        return 2
    print(report(params, table, assumptions, args.gpu, source, overhead_source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
