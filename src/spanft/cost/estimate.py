"""``spanft plan``: what the current params will cost, in seconds of arithmetic (no torch, no data read).

Runs per table (the plan's fine-tuning runs), training hours per device kind, disk, and the fan-out's jobs.

- Step times per device come from ``bench_step.py``'s measurements under ``benchmarks/results/``:
  ``step_h100.json`` (one H100, bf16) and ``step_cpu.json`` (the 2-core VM, 1 torch thread), one line per
  backbone class through its rows (:func:`spanft.cost.model.fit_rows`). The A100 figures are the H100's
  measured steps times an assumed ratio, :data:`A100_OVER_H100`, and say so: the two datasheets' dense BF16
  tensor-core peaks (H100 SXM 989 TFLOPS, A100 SXM 312), never measured here. A class a device has no row
  for is counted apart ("not measured").
- Tokens per step: batch x max_seq_len (every example padded to the cap: an upper bound; the full model,
  ``benchmarks/cost_model.py --stand-in``, measures the real lengths).
- Disk: each backbone's fp32 weights (4 bytes a parameter; ``data/backbones/`` and the DVC cache), and a
  running job's checkpoints: the best and the last epoch's weights and Adam moments (2 x 12 bytes a
  parameter), removed when the run ends. Parameters: a BERT-shaped encoder's count from its shape (built
  backbones: their params; local ones: their ``config.json``; hub ones: the public shapes below).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from spanft.cost.model import (
    EVAL_FRACTION,
    StepFit,
    backbone_size,
    fit_rows,
    train_steps,
)
from spanft.english import count_of
from spanft.errors import SpanftError
from spanft.params.plan import Plan, PlannedRun, plan_from_tree
from spanft.params.schema import check_params_file

RESULTS_DIR = Path("benchmarks/results")
CLASSES = ("tiny", "minilm", "base", "large")
# bench_step.py's row names per device and backbone class (None: not measured there)
MEASURED = {
    "H100": ("step_h100.json", {"minilm": "minilm-gpu", "base": "bert-base-gpu", "large": "bert-large-gpu"}),
    "CPU": ("step_cpu.json", {"tiny": "tiny ", "minilm": "minilm ", "base": "bert-base-cpu"}),
}
# The A100 is not measured: its step is the H100's measured one times the ratio of NVIDIA's datasheet peaks
# (dense BF16 tensor-core TFLOPS, SXM parts). A small encoder is not compute-bound, so the real ratio is likely
# lower: the A100 column is an assumption, named as one wherever it prints.
H100_PEAK_TFLOPS, A100_PEAK_TFLOPS = 989.0, 312.0
A100_OVER_H100 = H100_PEAK_TFLOPS / A100_PEAK_TFLOPS
A100_SOURCE = (f"assumed: the H100's measured steps x {A100_OVER_H100:.2f}, the ratio of the datasheets' dense "
               f"BF16 peaks, H100 SXM {H100_PEAK_TFLOPS:.0f} / A100 SXM {A100_PEAK_TFLOPS:.0f} TFLOPS; not measured")
# Public shapes of the hub backbones the profiles name: vocab, hidden, layers, intermediate, positions, types
HUB_SHAPES = {
    "bert-base-uncased": (30522, 768, 12, 3072, 512, 2),
    "bert-large-uncased": (30522, 1024, 24, 4096, 512, 2),
    "bert-large-uncased-whole-word-masking": (30522, 1024, 24, 4096, 512, 2),
    "roberta-large": (50265, 1024, 24, 4096, 514, 1),
    "SpanBERT/spanbert-large-cased": (28996, 1024, 24, 4096, 512, 2),
}
CHECKPOINT_BYTES = 2 * 12  # two checkpoints of fp32 weights + Adam's two moments, per parameter


@dataclass(frozen=True)
class DeviceSteps:
    """One device kind's step time per backbone class (baseline, 32 x 128 tokens) and where it came from."""

    name: str
    fits: dict[str, StepFit]
    source: str

    def step_ms(self, cls: str, tokens: float, span_module: bool) -> float | None:
        fit = self.fits.get(cls)
        if fit is None:
            return None
        return fit.at(tokens) * (fit.sf_overhead if span_module else 1.0)


def device_steps(root: Path) -> list[DeviceSteps]:
    """H100 and CPU from the measured JSON under ``root/benchmarks/results`` (empty when absent), A100 assumed."""
    devices = {}
    for name, (file, prefixes) in MEASURED.items():
        path = root / RESULTS_DIR / file
        timings = _read_json(path) if path.is_file() else {}
        fits = {cls: fit for cls, prefix in prefixes.items() if (fit := fit_rows(timings, prefix)) is not None}
        devices[name] = DeviceSteps(name, fits, f"measured, {RESULTS_DIR / file}" if fits else f"{path} not found")
    a100 = {cls: StepFit(fit.fixed_ms * A100_OVER_H100, fit.per_token_ms * A100_OVER_H100, fit.sf_overhead, 0, "A100")
            for cls, fit in devices["H100"].fits.items()}
    source = A100_SOURCE if a100 else "assumed from the H100's steps, which are not measured here"
    return [devices["H100"], DeviceSteps("A100", a100, source), devices["CPU"]]


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpanftError(f"{path}: cannot be read as JSON ({exc})") from None


def backbone_class(name: str, plan: Plan) -> str:
    """tiny (built here), minilm (a MiniLM by name or path), else base or large (:func:`backbone_size`)."""
    spec = plan.backbones[name]
    if spec.source == "build":
        return "tiny"
    label = f"{name} {spec.settings.get('hub_id', '')} {spec.settings.get('path', '')}".lower()
    return "minilm" if "minilm" in label else backbone_size(name, plan)


def bert_parameters(vocab: int, hidden: int, layers: int, intermediate: int, positions: int, types: int) -> int:
    """Parameters of a BERT encoder with its pooler: embeddings, ``layers`` blocks, the pooler."""
    embeddings = (vocab + positions + types) * hidden + 2 * hidden
    block = 4 * (hidden * hidden + hidden) + 2 * hidden + 2 * hidden * intermediate + intermediate + hidden + 2 * hidden
    return embeddings + layers * block + hidden * hidden + hidden


def backbone_parameters(name: str, plan: Plan, root: Path) -> int | None:
    """The backbone's parameter count from its shape; None when its shape is not known here."""
    spec = plan.backbones[name]
    settings = spec.settings
    if spec.source == "build":
        return bert_parameters(settings["vocab_size"], settings["hidden"], settings["layers"],
                               settings["intermediate"], settings["max_len"], 2)
    if spec.source == "hub":
        shape = HUB_SHAPES.get(str(settings.get("hub_id")))
        return None if shape is None else bert_parameters(*shape)
    config = _local_path(str(settings.get("path", "")), root) / "config.json"
    if not config.is_file():
        return None
    c = _read_json(config)
    try:
        return bert_parameters(c["vocab_size"], c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"],
                               c["max_position_embeddings"], c.get("type_vocab_size", 2))
    except KeyError as exc:
        raise SpanftError(f"{config}: no {exc.args[0]!r}: not a BERT-shaped config") from None


def _local_path(path: str, root: Path) -> Path:
    """A local backbone's folder: a ``pkg:`` path of a profile is its link under ``root`` (``spanft profile``
    made it) or else the installed package's folder; any other path, relative to ``root``."""
    from spanft.params.profiles import packaged_names, packaged_path

    if path.startswith("pkg:"):
        linked = root / packaged_names(path)
        if linked.exists():
            return linked
        module, _, relative = path.removeprefix("pkg:").partition("/")
        try:
            return packaged_path(module, "/" + relative)
        except SpanftError:
            return linked  # not installed here: no config.json, shape not known
    return root / path


# ------------------------------------------------------------------------------------------- the estimate


def runs_table(plan: Plan) -> pd.DataFrame:
    """One row per fine-tuning run: its study, tables, backbone class, steps and tokens per step."""
    rows = [_run_row(run, plan) for run in plan.runs()]
    return pd.DataFrame(rows, columns=["study", "table", "backbone", "backbone_class", "span", "steps", "tokens"])


def _run_row(run: PlannedRun, plan: Plan) -> dict:
    hparams = plan.hparams[run.task]
    return {"study": run.study, "table": STUDY_TABLES[run.study], "backbone": run.backbone,
            "backbone_class": backbone_class(run.backbone, plan), "span": run.variant != "baseline",
            "steps": train_steps(run.task, plan), "tokens": hparams.batch_size * hparams.max_seq_len}


STUDY_TABLES = {"glue": "Tables 1-3", "backbones": "Table 4", "snli": "Tables 5, 7", "ablation": "Table 6",
                "ner": "Table 8", "dictsize": "Figure 4"}


def _hours(steps: int, step_ms: float) -> float:
    """Hours of ``steps`` training steps of ``step_ms`` each, evaluation included."""
    return steps * step_ms * (1 + EVAL_FRACTION) / 3_600_000


def device_hours(runs: pd.DataFrame, device: DeviceSteps) -> tuple[float, list[str]]:
    """Hours of every run this device has a step time for (evaluation included), and the backbone classes it
    has none for."""
    hours, missing = 0.0, []
    for row in runs.itertuples():
        ms = device.step_ms(row.backbone_class, row.tokens, row.span)
        if ms is None:
            missing.append(row.backbone_class)
        else:
            hours += _hours(row.steps, ms)
    return hours, list(dict.fromkeys(missing))


def run_hours(run: PlannedRun, plan: Plan, device: DeviceSteps) -> float | None:
    """Hours of one run on ``device`` (evaluation included); None when it has no step time for the backbone."""
    row = _run_row(run, plan)
    ms = device.step_ms(row["backbone_class"], row["tokens"], row["span"])
    return None if ms is None else _hours(row["steps"], ms)


def fanout_jobs(plan: Plan) -> int:
    """Jobs ``spanft fanout`` sends from an empty cache: one per fine-tuning run, and Table 3's step cost."""
    step_cost = 1 if plan.studies["glue"].backbones else 0
    return len(plan.runs()) + step_cost


def estimate_lines(plan: Plan, root: Path, source: str, startup: tuple[int, str] | None = None) -> list[str]:
    runs = runs_table(plan)
    lines = [f"{source}: profile {plan.profile_label}, {count_of(len(runs), 'fine-tuning run')}, "
             f"{int(runs['steps'].sum()):,} training steps"]
    for (table, study), group in runs.groupby(["table", "study"], sort=False):
        lines.append(f"  {table} ({study}): {count_of(len(group), 'run')}, {int(group['steps'].sum()):,} steps")
    lines.append(f"Training time (every run on one device in turn; evaluation +{EVAL_FRACTION:.0%}; tokens per step "
                 f"padded to max_seq_len, an upper bound):")
    devices = device_steps(root)
    for device in devices:
        hours, missing = device_hours(runs, device)
        unit = "CPU-hours (1 torch thread)" if device.name == "CPU" else "GPU-hours"
        left_out = runs["backbone_class"].isin(missing).sum()
        note = f" (without the {count_of(int(left_out), 'run')} on {', '.join(missing)}: no step time)" if missing else ""
        shown = "no step time for " + ", ".join(missing) if left_out == len(runs) else f"{hours:,.2f} {unit}{note}"
        lines.append(f"  {device.name}: {shown} ({device.source})")
    lines += _disk_lines(plan, root, runs)
    jobs = fanout_jobs(plan)
    parallel = min(jobs, plan.cluster.max_parallel)
    lines.append(f"Fan-out (spanft fanout, from an empty cache): {count_of(jobs, 'job')}, "
                 f"{parallel} at once (cluster.max_parallel {plan.cluster.max_parallel})")
    return lines + [fanout_against_serial(plan, device, startup) for device, (_, missing) in
                    zip(devices, [device_hours(runs, device) for device in devices]) if not missing and len(runs)]


def fanout_against_serial(plan: Plan, device: DeviceSteps, startup: tuple[int, str] | None = None) -> str:
    """The fan-out's wall time against a serial ``dvc repro`` on ``device``: every job pays its start-up
    (``cluster.startup_s``, or the jobs' own where they recorded a longer one: clone, imports, DVC), at best
    spread evenly over the jobs at once; and how many jobs at once it takes to beat serial (``--jobs`` locally,
    where the cores bound it)."""
    seconds = sorted(run_hours(run, plan, device) * 3600 for run in plan.runs())  # every run has a step time here
    startup, source = startup or (plan.cluster.startup_s, "cluster.startup_s")
    serial, jobs = sum(seconds), len(seconds)
    parallel = min(jobs, plan.cluster.max_parallel)
    fanout = max((serial + jobs * startup) / parallel, seconds[-1] + startup)
    even = int(1 + jobs * startup / serial) + 1  # fewest jobs at once with (serial + jobs x startup) / p < serial
    beats = f"faster than serial from {even} jobs at once" if even <= jobs and seconds[-1] + startup < serial \
        else "never faster than serial"
    line = (f"  {device.name}: serial dvc repro ~{_duration(serial)}, fan-out ~{_duration(fanout)} with {parallel} "
            f"at once ({startup} s start-up a job, {source}; {beats})")
    if fanout < serial and even <= 2:
        return line
    return (f"{line}: a run takes ~{_duration(seconds[jobs // 2])} (median) against its job's start-up; below that "
            f"many jobs at once use dvc repro (benchmarks/bench_fanout.py --startup measures the start-up)")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"


def _disk_lines(plan: Plan, root: Path, runs: pd.DataFrame) -> list[str]:
    used = list(dict.fromkeys(runs["backbone"]))
    params = {name: backbone_parameters(name, plan, root) for name in used}
    known = {name: n for name, n in params.items() if n is not None}
    unknown = [name for name in used if name not in known]
    weights = sum(4 * n for n in known.values())
    running = min(fanout_jobs(plan), plan.cluster.max_parallel)
    largest = max(known.values(), default=0)
    why = f"shape not known for {', '.join(unknown)} (no config.json at its path here)"
    if not known:
        return [f"Disk: not estimated: {why}"]
    lines = [f"Disk: backbones' fp32 weights {_gb(weights)} ("
             + ", ".join(f"{name} {n / 1e6:,.1f}M parameters" for name, n in known.items()) + ")"
             + (f"; without {why}" if unknown else ""),
             f"  checkpoints while a run trains: up to {_gb(CHECKPOINT_BYTES * largest)} a job (best and last "
             f"epoch, weights and Adam moments), {_gb(CHECKPOINT_BYTES * largest * running)} for {running} "
             f"at once; removed when each run ends"]
    return lines


def _gb(size: float) -> str:
    return f"{size / 1e9:,.2f} GB"


# ------------------------------------------------------------------------------------------- the README's table

PROFILE_TABLE_HEADER = (f"| profile | fine-tuning runs | H100 GPU-hours (measured steps) | A100 GPU-hours (assumed: "
                        f"H100 x {A100_OVER_H100:.2f}, the datasheets' BF16 peak ratio) | CPU-hours, 1 thread "
                        f"(measured steps) | fan-out jobs |\n|---|---|---|---|---|---|")


def profile_table(root: Path) -> str:
    """The README's table of ``spanft plan`` per profile file under ``root/profiles`` (``pkg:`` paths left
    unresolved: the estimate needs only their names)."""
    rows = [PROFILE_TABLE_HEADER]
    for path in sorted((root / "profiles").glob("*.yaml")):
        plan = plan_from_tree(check_params_file(path), str(path.relative_to(root)))
        runs = runs_table(plan)
        cells = []
        for device in device_steps(root):
            hours, missing = device_hours(runs, device)
            cells.append("—" if runs["backbone_class"].isin(missing).all()
                         else f"{hours:,.1f}" + (f" (no {', '.join(missing)})" if missing else ""))
        rows.append(f"| {path.stem} | {len(runs)} | {' | '.join(cells)} | {fanout_jobs(plan)} |")
    return "\n".join(rows)
