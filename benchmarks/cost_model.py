"""GPU-hours of each study of a params profile (the paper profile by default), from one measured step time.

    python benchmarks/cost_model.py --gpu "A100 80GB" --step-ms-base 110 --large-factor 3.2 \\
        [--params profiles/paper.yaml] [--sf-overhead R] [--eval-fraction F]
    python benchmarks/cost_model.py --timings step.json [--data-root data/tasks | --stand-in] [--tokenizer DIR]

Model (every assumption printed with the tables, each input marked measured or assumed):
- a training step of a base-size backbone at batch 32 x 128 tokens takes ``--step-ms-base`` ms on the GPU; a
  large backbone (``large`` in its name or hub id) takes ``--large-factor`` times that. With ``--timings`` (the
  JSON of ``bench_step.py`` on a GPU) these come from measured steps instead: per size, a least-squares line
  ms = fixed + per-token x tokens through the measured baseline steps (32 x 32, 64, 128 and the length-grouped
  real-length case; slope kept >= 0), and the sf overhead is the mean measured sf / baseline ratio;
- tokens per step: with ``--data-root`` (prepared ``<task>/<train split>.parquet``) or ``--stand-in`` (synthetic
  stand-in splits), the tokens of length-grouped, dynamically padded batches of the task's real example lengths
  (tokenized as ``encode_split`` does, cut at the task's ``max_seq_len``), as the Trainer builds them; for a task
  without lengths, batch x max_seq_len (an upper bound: every example padded to the cap);
- a run with the span module (every variant but ``baseline``) takes ``--sf-overhead`` times a baseline step;
  the default is the sf / baseline step ratio measured in benchmarks/RESULTS.md (bench_step.py), preferring
  a GPU bert-base row, then all-MiniLM-L6-v2 on CPU, then the tiny backbone;
- steps per run = ceil(train examples / batch size) x epochs, the train sizes being the public datasets';
- evaluation (dev each epoch, dev and test prediction at the end) adds ``--eval-fraction`` of the training
  time (default 0.10: forward-only passes cost about a third of a training step per example, and the dev and
  test sets are a few percent of the training passes for MNLI, SST-2, QNLI and SNLI, 15-20% for QQP and RTE);
- the runs are the graph's fine-tuning runs, from the plan (spanft.params.plan, Plan.runs): glue, backbones and ner
  run baseline and sf; snli runs baseline, sf and one sf run per extra encoder; ablation runs cnn-noseg,
  random-seg and chunker-seg (its baseline and sf rows come from the glue study); dictsize runs every method
  x every ``dict_sizes`` entry. Each study is counted as it runs: no run is shared between studies.
Model loading, data preparation, n-gram counting and segmentation are not counted (CPU work, minutes).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from spanft.errors import SpanftError
from spanft.cost import model as cost
from spanft.cost.model import (
    REFERENCE_BATCH,
    REFERENCE_LEN,
    TRAIN_EXAMPLES,
    CostModelError,
    backbone_size,
    fit_step_times,
    wall_clock_hours,
)
from spanft.params.plan import Plan, load_plan

sys.path.insert(0, str(Path(__file__).resolve().parent))

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"


@dataclass(frozen=True)
class Assumptions(cost.Assumptions):
    # measured training-example lengths (sub-tokens, specials included) per task; absent: padded to the cap
    lengths: Mapping[str, np.ndarray] = field(default_factory=dict, compare=False)


def tokens_per_step(task: str, batch: int, max_seq_len: int, assumptions: Assumptions) -> float:
    """Tokens of a training batch after dynamic padding: from the task's measured lengths, else the cap."""
    if task not in getattr(assumptions, "lengths", {}):
        return float(batch * max_seq_len)
    return _grouped_tokens(assumptions.lengths[task].tobytes(), batch, max_seq_len)


@lru_cache(maxsize=None)
def _grouped_tokens(lengths: bytes, batch: int, max_seq_len: int) -> float:
    from bench_padding import padded_tokens_per_step  # loads transformers: only when lengths were measured

    capped = np.minimum(np.frombuffer(lengths, dtype=np.int64), max_seq_len)
    return padded_tokens_per_step(capped, batch)


def cost_table(plan: Plan, assumptions: Assumptions) -> pd.DataFrame:
    """One row per run: its steps, step time and GPU-hours (evaluation included), with measured lengths."""
    return cost.cost_table(plan, assumptions, lambda task, batch, cap: tokens_per_step(task, batch, cap, assumptions))


# ------------------------------------------------------------------------------------------------ measured inputs


def measured_assumptions(timings: dict, eval_fraction: float, lengths: Mapping[str, np.ndarray]) -> Assumptions:
    """Step time, large factor, sf overhead and fixed shares from measured GPU steps."""
    base, large = fit_step_times(timings, "base"), fit_step_times(timings, "large")
    reference = REFERENCE_BATCH * REFERENCE_LEN
    return Assumptions(
        step_ms_base=base.at(reference), large_factor=large.at(reference) / base.at(reference),
        sf_overhead=(base.sf_overhead + large.sf_overhead) / 2, eval_fraction=eval_fraction,
        fixed_share={"base": base.fixed_ms / base.at(reference), "large": large.fixed_ms / large.at(reference)},
        lengths=lengths,
    )


def task_lengths(plan: Plan, data_root: Path | None, tokenizer_dir: str | None, stand_in: int) -> dict:
    """Measured training-example lengths of every task in the profile that has data (``bench_padding``)."""
    from bench_padding import example_lengths_of, task_frame
    from transformers import AutoTokenizer

    from bench_step import minilm_dir

    tokenizer_dir = tokenizer_dir or minilm_dir()
    if tokenizer_dir is None:
        raise CostModelError("--data-root / --stand-in need a tokenizer: --tokenizer DIR")
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    lengths = {}
    for task in plan.hparams:
        if task not in TRAIN_EXAMPLES:
            continue
        spec, frame, _ = task_frame(task, data_root, stand_in)
        if frame is not None:
            lengths[task] = example_lengths_of(frame, spec.is_pair, tokenizer, 512)
    return lengths


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


# ------------------------------------------------------------------------------------------------ report


def report(plan: Plan, table: pd.DataFrame, assumptions: Assumptions, gpu: str, source: str,
           overhead_source: str, inputs: list[str] | None = None, gpus: int = 0) -> str:
    lines = [f"Cost model: {source} (profile {plan.profile}), GPU-hours on {gpu}", ""]
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
    lines += wall_clock_lines(table, gpus) if gpus else []
    sizes = ", ".join(f"{name}: {backbone_size(name, plan)}" for name in table["backbone"].unique())
    lines += [
        "Assumptions:",
        f"- base backbone training step at batch {REFERENCE_BATCH} x {REFERENCE_LEN}: {assumptions.step_ms_base:.4g} ms on "
        f"{gpu}; large backbones x {assumptions.large_factor:.3g} ({sizes}); a step's fixed share stays, the rest "
        f"scales with its tokens",
        f"- span module (every variant but baseline): x {assumptions.sf_overhead:.3f} per step ({overhead_source})",
        f"- steps per run = ceil(train examples / batch) x epochs (hparams of {source}); evaluation and "
        f"prediction add {assumptions.eval_fraction:.0%} of the training time",
        "- train examples: " + ", ".join(f"{task} {n:,}" for task, n in TRAIN_EXAMPLES.items()),
        "- not counted: model download and loading, data preparation, n-gram counting, segmentation (CPU)",
    ]
    lines += inputs or _token_lines(assumptions)
    return "\n".join(lines)


def wall_clock_lines(table: pd.DataFrame, gpus: int) -> list[str]:
    hours = table["gpu_hours"].tolist()
    bound = max(sum(hours) / gpus, max(hours, default=0.0))
    return [f"On {gpus} GPUs (spanft fanout, one GPU a job, {gpus} at once, runs in plan order): "
            f"{wall_clock_hours(hours, gpus):,.1f} h wall clock (no schedule beats {bound:,.1f} h: "
            f"total / {gpus} or the longest run, {max(hours, default=0.0):,.1f} h)", ""]


def _token_lines(assumptions: Assumptions) -> list[str]:
    measured = ", ".join(sorted(assumptions.lengths)) or "none"
    shares = ", ".join(f"{size} {share:.0%}" for size, share in assumptions.fixed_share.items()) or "none (linear)"
    return [f"- tokens per step: length-grouped dynamic padding of measured lengths for {measured}; other tasks "
            f"batch x max_seq_len (assumed); share of a step fixed whatever its tokens: {shares}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default=None, help='the GPU the step time was measured on, e.g. "A100 80GB"')
    parser.add_argument("--step-ms-base", type=float, default=None,
                        help="ms per training step of bert-base at batch 32 x 128 (baseline head)")
    parser.add_argument("--large-factor", type=float, default=None, help="large-backbone step / base step")
    parser.add_argument("--timings", type=Path, default=None,
                        help="bench_step.py --json output from a GPU: measured step times instead of the three above")
    parser.add_argument("--data-root", type=Path, default=None, help="prepared task data: DIR/<task>/<split>.parquet")
    parser.add_argument("--stand-in", type=int, default=0,
                        help="measure lengths on N-example synthetic stand-in splits (no --data-root)")
    parser.add_argument("--tokenizer", default=None, help="tokenizer directory for the lengths (default: MiniLM's)")
    parser.add_argument("--sf-overhead", type=float, default=None,
                        help="span-module step / baseline step (default: measured, benchmarks/RESULTS.md)")
    parser.add_argument("--eval-fraction", type=float, default=0.10,
                        help="evaluation and prediction time as a fraction of training time (default 0.10)")
    parser.add_argument("--params", default=str(HERE.parent / "profiles" / "paper.yaml"), help="params YAML")
    parser.add_argument("--gpus", type=int, default=8, help="also give the wall clock on this many GPUs (0: no)")
    args = parser.parse_args(argv)
    source = os.path.relpath(args.params) if Path(args.params).is_absolute() else args.params
    try:
        plan = load_plan(args.params)
        assumptions, gpu, overhead_source, inputs = _assumptions_from_args(args, plan)
        table = cost_table(plan, assumptions)
    except (CostModelError, SpanftError) as exc:
        print(f"cost_model: error: {exc}", file=sys.stderr)
        return 2
    print(report(plan, table, assumptions, gpu, source, overhead_source, inputs, gpus=max(0, args.gpus)))
    return 0


def _assumptions_from_args(args, plan: Plan) -> tuple[Assumptions, str, str, list[str]]:
    lengths = {}
    if args.data_root is not None or args.stand_in:
        lengths = task_lengths(plan, args.data_root, args.tokenizer, args.stand_in)
    where = (f"prepared data under {args.data_root}" if args.data_root is not None
             else f"synthetic stand-in splits of {args.stand_in} examples (not the real datasets' lengths)")
    if args.timings is not None:
        if not args.timings.is_file():
            raise CostModelError(f"--timings {args.timings}: not found")
        timings = json.loads(args.timings.read_text(encoding="utf-8"))
        assumptions = measured_assumptions(timings, args.eval_fraction, lengths)
        if args.sf_overhead is not None:
            assumptions = dataclasses.replace(assumptions, sf_overhead=args.sf_overhead)
        base, large = fit_step_times(timings, "base"), fit_step_times(timings, "large")
        inputs = [
            f"- measured ({args.timings}, {base.device}): base step {base.fixed_ms:.1f} ms + {base.per_token_ms * 1000:.3f} "
            f"us/token ({base.points} points), large {large.fixed_ms:.1f} ms + {large.per_token_ms * 1000:.3f} us/token "
            f"({large.points} points); sf overhead = mean measured sf / baseline (base {base.sf_overhead:.3f}, "
            f"large {large.sf_overhead:.3f})",
            f"- measured lengths: {', '.join(sorted(lengths)) or 'none'}"
            + (f" ({where}); length-grouped dynamic padding as the Trainer batches" if lengths else "")
            + "; tasks without lengths: batch x max_seq_len (assumed upper bound)",
            "- assumed: train sizes (public datasets), evaluation share, one GPU per run",
        ]
        overhead_source = "--sf-overhead" if args.sf_overhead is not None else f"{args.timings}"
        return assumptions, args.gpu or base.device, overhead_source, inputs
    missing = [name for name in ("gpu", "step_ms_base", "large_factor") if getattr(args, name) is None]
    if missing:
        raise CostModelError(f"--{missing[0].replace('_', '-')} is required without --timings")
    overhead, overhead_source = ((args.sf_overhead, "--sf-overhead") if args.sf_overhead is not None
                                 else measured_sf_overhead())
    assumptions = Assumptions(args.step_ms_base, args.large_factor, overhead, args.eval_fraction, lengths=lengths)
    inputs = [f"- assumed: the step time and large factor given on the command line; lengths measured for "
              f"{', '.join(sorted(lengths)) or 'no task'}" + (f" ({where})" if lengths else "")]
    return assumptions, args.gpu, overhead_source, inputs


if __name__ == "__main__":
    sys.exit(main())
