"""SF's cost per optimizer step against the baseline's, both timed side by side in one process (Table 3).

A run's own step time (:mod:`spanft.train.timing`) is taken minutes apart from the other arm's, and a shared
machine's speed drifts over minutes (other tenants, frequency): a ratio of two runs' times carries that drift.
Here both arms train on the same batches in alternating rounds, baseline first in even rounds and SF first in
odd ones, so whatever slows the machine slows both alike. The figure is the median over rounds of SF's step
time divided by the baseline's in the same round.

A step is the Trainer's: forward, loss, backward, gradient clipping at norm 1.0, AdamW (fused, as
``adamw_torch_fused``; weight decay on matrices only), gradients cleared; in the run's precision
(:func:`spanft.train.precision.run_precision`: bf16 autocast, or fp16 with a grad scaler, on a GPU; TF32 where
the runs use it; full determinism on the CPU). The learning-rate schedule and the Trainer's callbacks are left
out: a few microseconds per step, alike in both arms.

The batches are the task's training examples as the run sees them (cut to ``max_train_examples`` first):
``batches x batch_size`` examples drawn at random (``seed``), put in length-grouped order within the sample
(:func:`spanft.model.features.length_grouped_order`) and padded per batch by the run's collator. The run groups
lengths over 50 batches at a time, so its batches pad a little less (about 10% fewer tokens on the embedded
tasks); both arms get the same batches. The baseline reads the same examples without their spans (its run
reads the prepared data, whose words these are). The first round of every batch is warm-up (a new shape's
first step pays for allocations and kernel selection) and is not timed; after it, each batch comes round with
either arm first in turn.
"""

from __future__ import annotations

import copy
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from tqdm import tqdm
from transformers import set_seed
from transformers.trainer_utils import enable_full_determinism

from spanft.data.columns import read_prepared
from spanft.data.registry import TaskSpec, get_task
from spanft.errors import SpanftError
from spanft.model.features import (
    FeatureConfig,
    SpanCollator,
    encode_split,
    example_lengths,
    length_grouped_order,
)
from spanft.model.loading import check_max_seq_len, load_backbone
from spanft.model.span_model import SpanModel
from spanft.params.plan import BACKBONES_DIR, Plan, PlannedRun
from spanft.threads import use_threads
from spanft.train.options import (
    MAX_GRAD_NORM,
    WEIGHT_DECAY,
    FinetuneOptions,
    span_config_for,
)
from spanft.train.precision import device_name, run_precision
from spanft.train.timing import contended, run_queue_wait


@dataclass(frozen=True)
class StepCostConfig:
    batches: int = 6  # distinct batches, each warmed up once
    rounds: int = 24  # timed rounds (one step of each arm per round), cycling through the batches
    seed: int = 0  # which training examples are drawn


@dataclass
class _Arm:
    name: str
    step: Callable[[dict], None]
    wants_spans: bool
    walls: list[float]
    cpus: list[float]
    waits: list[float | None]


def training_step(model: torch.nn.Module, device: str, lr: float = 1e-5) -> Callable[[dict], None]:
    """One optimizer step of ``model`` on a collated batch, as the Trainer takes it (see the module's notes)."""
    decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
    groups = [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=lr, fused=True)
    precision = run_precision() if device == "cuda" else None
    half = torch.bfloat16 if precision and precision.bf16 else torch.float16
    autocast = bool(precision and (precision.bf16 or precision.fp16))
    scaler = torch.amp.GradScaler("cuda", enabled=bool(precision and precision.fp16))
    if precision and precision.tf32:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True

    def step(inputs: dict) -> None:
        with torch.autocast(device_type=device, dtype=half, enabled=autocast):
            loss = model(**inputs).loss
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)

    return step


def sample_batches(frame, tokenizer, task: TaskSpec, options: FinetuneOptions, config: StepCostConfig) -> list[dict]:
    """``config.batches`` collated training batches (with spans) of the run ``options`` describes."""
    if options.max_train_examples is not None:
        frame = frame.iloc[: options.max_train_examples]  # the run's cut (spanft.train.finetune.load_splits)
    wanted = min(len(frame), config.batches * options.batch_size)
    rows = np.sort(np.random.default_rng(config.seed).choice(len(frame), size=wanted, replace=False))
    features = FeatureConfig(options.max_seq_len, options.resolved_max_spans(), options.max_span_len)
    encoded, _ = encode_split(frame.iloc[rows].reset_index(drop=True), tokenizer, task, features, name="sample")
    encoded = encoded.remove_columns([c for c in ("idx",) if c in encoded.column_names])
    order = length_grouped_order(example_lengths(encoded), options.batch_size, config.seed, epoch=0)
    collate = SpanCollator(tokenizer, max_span_len=options.max_span_len)
    cuts = range(0, len(order) - options.batch_size + 1, options.batch_size)  # full batches only
    batches = [collate(encoded.select(order[start : start + options.batch_size].tolist())) for start in cuts]
    return batches or [collate(encoded.select(order.tolist()))]  # fewer examples than one batch: all of them


def paired_step_cost(backbone: torch.nn.Module, batches: list[dict], arms: dict[str, tuple[Any, bool]],
                     config: StepCostConfig, device: str = "cpu") -> dict[str, Any]:
    """Median step times of the two arms (``{"baseline": (span_config, False), "sf": (span_config, True)}``:
    the model's configuration and whether its batches keep the spans) and the median per-round ratio."""
    steppers = []
    for name, (span_config, wants_spans) in arms.items():
        torch.manual_seed(config.seed)  # the new layers' initial weights: the same in every process
        model = SpanModel(copy.deepcopy(backbone), span_config).to(device).train()
        steppers.append(_Arm(name, training_step(model, device), wants_spans, [], [], []))
    on_device = [{key: value.to(device) for key, value in batch.items()} for batch in batches]
    alternate(steppers, on_device, config.rounds, device)
    return _summary(steppers, batches)


def alternate(arms: list[_Arm], batches: list[dict], rounds: int, device: str = "cpu") -> None:
    """``len(batches)`` warm-up rounds, then ``rounds`` timed ones; round r steps both arms on batch r mod
    len(batches), which arm first alternating from batch to batch within a pass over the batches and from one
    pass to the next, so that no batch is always timed in one order."""
    warmup = len(batches)
    for round_ in range(warmup + rounds):
        batch = batches[round_ % len(batches)]
        # batch b of pass p: the first arm first when b + p is even, so a batch's order flips from pass to pass
        first_arm_first = (round_ % len(batches) + round_ // len(batches)) % 2 == 0
        for arm in (arms if first_arm_first else arms[::-1]):
            inputs = batch if arm.wants_spans else {k: v for k, v in batch.items() if not k.startswith("span_")}
            wall, cpu, wait = _timed(arm.step, inputs, device)
            if round_ >= warmup:
                arm.walls.append(wall)
                arm.cpus.append(cpu)
                arm.waits.append(wait)


def _timed(step: Callable[[dict], None], inputs: dict, device: str) -> tuple[float, float, float | None]:
    if device == "cuda":
        torch.cuda.synchronize()
    wait, cpu, wall = run_queue_wait(), time.process_time(), time.perf_counter()
    step(inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    wall, cpu, after = time.perf_counter() - wall, time.process_time() - cpu, run_queue_wait()
    return wall, cpu, None if wait is None or after is None else after - wait


def _summary(arms: list[_Arm], batches: list[dict]) -> dict[str, Any]:
    base, span = arms
    result: dict[str, Any] = {}
    for arm in arms:
        result[f"{arm.name}_step_seconds"] = round(statistics.median(arm.walls), 6)
        result[f"{arm.name}_step_cpu_seconds"] = round(statistics.median(arm.cpus), 6)
    result["ratio"] = round(statistics.median(s / b for s, b in zip(span.walls, base.walls)), 4)
    result["cpu_ratio"] = round(statistics.median(s / b for s, b in zip(span.cpus, base.cpus)), 4)
    waits = base.waits + span.waits
    walls = base.walls + span.walls
    result["contended"] = None if None in waits else contended(statistics.median(walls), statistics.median(waits))
    result["rounds"] = len(base.walls)
    result["batches"] = len(batches)
    result["batch_size"] = int(batches[0]["input_ids"].shape[0])
    result["tokens_per_batch"] = round(statistics.fmean(int(b["input_ids"].numel()) for b in batches), 1)
    return result


def step_cost_arms(baseline: FinetuneOptions, sf: FinetuneOptions, task: TaskSpec) -> dict[str, tuple[Any, bool]]:
    """The two arms of Table 3 from their runs' options: each one's span configuration, and whether it reads spans."""
    arms = {}
    for name, options in (("baseline", baseline), ("sf", sf)):
        span_config = span_config_for(options, task)
        arms[name] = (span_config, span_config.needs_spans)
    return arms


def glue_arms(plan: Plan) -> dict[str, dict[str, tuple[PlannedRun, PlannedRun]]]:
    """``{backbone: {task: (baseline run, sf run)}}`` of the glue study, first seed: what Table 3 times."""
    study = plan.studies["glue"]
    if not study.seeds:
        return {}
    seed = study.seeds[0]
    return {backbone: {task: (plan.find_run("glue", backbone, task, "baseline", seed),
                              plan.find_run("glue", backbone, task, "sf", seed)) for task in study.tasks}
            for backbone in study.backbones}


def step_cost_inputs(plan: Plan) -> list[str]:
    """What the step costs read: every glue backbone and every glue SF run's input."""
    return [f"{BACKBONES_DIR}/{backbone}" for backbone in plan.studies["glue"].backbones] + \
        [sf.data for tasks in glue_arms(plan).values() for _, sf in tasks.values()]


def all_step_costs(plan: Plan, config: StepCostConfig = StepCostConfig()) -> dict[str, Any]:
    """Table 3's side-by-side step costs of every glue backbone, task by task (the step_cost stage's file)."""
    threads = use_threads(plan.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    backbones = {}
    for backbone, tasks in glue_arms(plan).items():
        model, tokenizer = load_backbone(f"{BACKBONES_DIR}/{backbone}") if tasks else (None, None)
        backbones[backbone] = {}
        for name, (baseline, sf) in tqdm(tasks.items(), desc=f"step cost {backbone}", unit="task",
                                         disable=None):
            task = get_task(name)
            options = {run.variant: FinetuneOptions.for_run(run, plan.hparams[name], plan.threads)
                       for run in (baseline, sf)}
            check_max_seq_len(model, sf.backbone_dir, options["sf"].max_seq_len)
            path = Path(sf.data) / f"{task.train_split}.parquet"
            frame = read_prepared(path)
            if len(frame) == 0:
                raise SpanftError(f"{path}: no training examples")
            (enable_full_determinism if device == "cpu" else set_seed)(config.seed)  # as the runs
            batches = sample_batches(frame, tokenizer, task, options["sf"], config)
            backbones[backbone][name] = paired_step_cost(
                model, batches, step_cost_arms(options["baseline"], options["sf"], task), config, device)
    return {"device": device_name(), "threads": threads, "batches": config.batches, "rounds": config.rounds,
            "backbones": backbones}
