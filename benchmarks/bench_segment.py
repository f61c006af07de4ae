"""Segmentation throughput (words/s) against word tokenization alone, measured in the same run, one core.

Three ways to segment the same words: ``segment_batch`` (Python lists in, lists of span lengths out: the
``spanft segment`` command's path), ``segment_flat`` (lists in, flat arrays out) and ``segment_arrow`` (a
``list<string>`` arrow column in, a ``list<int32>`` column out: the ``segment-task`` stage's path on prepared
parquet data; one column holds every sentence, as one split file does; it is built once from the tokenized
words, as the prepared data stores them). Rounds run all four in turn; each figure is the fastest of its rounds.

A realistic dictionary: n-grams (2..5, min count 10, top ``--dict-size``) counted with ``spanft.ngrams``
on a synthetic corpus (``spanft.corpus``); the text segmented is a second synthetic corpus with
another seed, tokenized as the segment stages do (``WordTokenizer(lowercase=False)``; the segmenter
lower-cases for matching itself).

Usage: flock /tmp/spanft-bench.lock python benchmarks/bench_segment.py [--dict-tokens N] [--text-tokens N]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

from spanft.data.corpus import write_synthetic_corpus
from spanft.text.dictionary import read_dictionary
from spanft.text.greedy import GreedySegmenter
from spanft.text.ngrams import count_ngrams, write_counts
from spanft.text.random_spans import RandomSegmenter
from spanft.text.words import WordTokenizer


def best_of(repeats: int, fn) -> float:
    """The fastest of ``repeats`` wall-clock timings (the least disturbed by other processes)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved_best(runs: dict, repeats: int) -> dict[str, float]:
    """The fastest wall-clock time of each run over ``repeats`` rounds that run every one in turn."""
    best = {name: float("inf") for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def build_dictionary(work: Path, tokens: int, size: int) -> Path:
    corpus = work / "dict_corpus.txt"
    write_synthetic_corpus(corpus, tokens, seed=0)
    counts = count_ngrams([corpus], min_count=10, workers=1, progress=False)
    counts_path = work / "counts.txt"
    write_counts(counts, counts_path)
    dict_path = work / "dict.txt"
    with open(counts_path, encoding="utf-8") as src, open(dict_path, "w", encoding="utf-8") as out:
        for _, line in zip(range(size), src):
            out.write(line)
    return dict_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dict-tokens", type=int, default=5_000_000, help="corpus size the dictionary is counted on")
    parser.add_argument("--dict-size", type=int, default=200_000)
    parser.add_argument("--text-tokens", type=int, default=2_000_000, help="words of text to segment")
    parser.add_argument("--batch", type=int, default=8192, help="sentences per segment_batch call")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        dict_path = build_dictionary(work, args.dict_tokens, args.dict_size)
        entries = len(read_dictionary(dict_path))
        print(f"dictionary: {entries} entries counted on {args.dict_tokens:,} words ({time.perf_counter() - start:.1f} s)")
        text = work / "text.txt"
        write_synthetic_corpus(text, args.text_tokens, seed=1)
        lines = text.read_text(encoding="utf-8").splitlines()

        segmenter = _load(dict_path)
    tokenizer = WordTokenizer(lowercase=False)
    sentences = tokenizer.words_batch(lines)
    words = sum(map(len, sentences))

    batches = [sentences[i : i + args.batch] for i in range(0, len(sentences), args.batch)]
    line_batches = [lines[i : i + args.batch] for i in range(0, len(lines), args.batch)]
    import pyarrow as pa

    column = pa.array(sentences, pa.list_(pa.string()))  # segment-task reads one column per split file
    assert segmenter.segment_arrow(column[:4000]).to_pylist() == segmenter.segment_batch(sentences[:4000])
    runs = {
        "tokenize": lambda: [tokenizer.words_batch(b) for b in line_batches],
        "flat": lambda: [segmenter.segment_flat(b) for b in batches],
        "lists": lambda: [segmenter.segment_batch(b) for b in batches],
        "arrow": lambda: segmenter.segment_arrow(column),
    }
    best = interleaved_best(runs, args.repeats)  # rounds of all four: load that comes and goes hits each
    tokenize_s, flat_s, lists_s, arrow_s = (best[name] for name in ("tokenize", "flat", "lists", "arrow"))
    random_s = best_of(1, lambda: [RandomSegmenter(segmenter, seed=0).segment_batch(b) for b in batches[:4]])
    random_words = sum(len(s) for b in batches[:4] for s in b)
    spans = sum(int(segmenter.segment_flat(b).counts().sum()) for b in batches)

    print(f"machine: {platform.machine()}, {platform.processor() or platform.platform()}, pinned to one core")
    print(f"text: {words:,} words in {len(sentences):,} lines")
    print(f"mean words per span: {words / spans:.3f}")
    print(f"tokenize (WordTokenizer.words)       : {words / tokenize_s / 1e6:6.2f} M words/s")
    print(f"segment_flat (arrays)                : {words / flat_s / 1e6:6.2f} M words/s")
    print(f"segment_batch (lists of span lengths): {words / lists_s / 1e6:6.2f} M words/s")
    print(f"segment_arrow (arrow column)         : {words / arrow_s / 1e6:6.2f} M words/s")
    print(f"random segmenter                     : {random_words / random_s / 1e6:6.2f} M words/s")
    print(f"segment_batch time / tokenize time   : {lists_s / tokenize_s:.2f}")
    print(f"(tokenize + segment_batch) / tokenize: {(tokenize_s + lists_s) / tokenize_s:.2f}")
    print(f"(tokenize + segment_flat) / tokenize : {(tokenize_s + flat_s) / tokenize_s:.2f}")
    print(f"(tokenize + segment_arrow) / tokenize: {(tokenize_s + arrow_s) / tokenize_s:.2f}")


def _load(dict_path: Path) -> GreedySegmenter:
    start = time.perf_counter()
    segmenter = GreedySegmenter.from_dictionary(dict_path, max_n=5, lowercase=True)
    print(f"segmenter built in {time.perf_counter() - start:.2f} s")
    return segmenter


if __name__ == "__main__":
    main()
