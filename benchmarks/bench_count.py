"""Benchmark n-gram counting: the numpy counter at 100M tokens, and against a plain Counter at 10M.

    flock /tmp/spanft-bench.lock python benchmarks/bench_count.py

Generates the synthetic corpora (once, cached in benchmarks/_work/), then runs each measured command
in a child process and reads its wall time and peak RSS (os.wait4). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Iterable

from spanft.text.words import WordTokenizer, has_letter_or_digit

WORK = Path(__file__).resolve().parent / "_work"


def corpus(tokens: int, seed: int) -> Path:
    """The synthetic corpus of about ``tokens`` words (generated once, then reused)."""
    from spanft.data.corpus import write_synthetic_corpus

    path = WORK / f"synthetic-{tokens}-seed{seed}.txt"
    if not path.exists():
        print(f"generating {path.name} ...", file=sys.stderr, flush=True)
        write_synthetic_corpus(path, tokens, seed)
    return path


def measure(command: list[str]) -> tuple[float, float]:
    """Run a child process; return (wall seconds, peak RSS in MiB of the child and its descendants)."""
    start = time.perf_counter()
    child = subprocess.Popen(command)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(command)}")
    return wall, usage.ru_maxrss / 1024


def fast_command(path: Path, out: Path, min_count: int, max_n: int, pretokenized: bool = False) -> list[str]:
    command = [sys.executable, "-m", "spanft.cli", "-q", "count-ngrams", str(path), "--out", str(out)]
    command += ["--min-count", str(min_count), "--max-n", str(max_n)]
    return command + (["--pretokenized"] if pretokenized else [])


def count_ngrams_reference(
    lines: Iterable[str], tokenizer: WordTokenizer, min_n: int = 2, max_n: int = 5, min_count: int = 10
) -> list[tuple[str, int]]:
    """The plain ``collections.Counter`` counter (the benchmark's reference), in canonical order."""
    counter: Counter[str] = Counter()
    for line in lines:
        words = tokenizer.words(line)
        for n in range(min_n, max_n + 1):
            for i in range(len(words) - n + 1):
                gram = words[i : i + n]
                if all(has_letter_or_digit(w) for w in gram):
                    counter[" ".join(gram)] += 1
    kept = [(text, c) for text, c in counter.items() if c >= min_count]
    return sorted(kept, key=lambda e: (-e[1], e[0]))


def reference_main(path: Path, out: Path, min_count: int, max_n: int) -> None:
    """The plain collections.Counter counter, writing the same file format."""
    from spanft.fileio import read_text_lines

    lines = (line for _, line in read_text_lines(path))
    entries = count_ngrams_reference(lines, WordTokenizer(), 2, max_n, min_count)
    with open(out, "w", encoding="utf-8") as handle:
        handle.writelines(f"{text}\t{count}\n" for text, count in entries)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {memory:.0f} GiB RAM, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=100_000_000)
    parser.add_argument("--slice-tokens", type=int, default=10_000_000)
    parser.add_argument("--min-count", type=int, default=10)
    parser.add_argument("--max-n", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-reference", action="store_true", help="do not run the slow Counter reference")
    parser.add_argument("--reference", nargs=2, metavar=("CORPUS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reference:
        reference_main(Path(args.reference[0]), Path(args.reference[1]), args.min_count, args.max_n)
        return

    WORK.mkdir(parents=True, exist_ok=True)
    big, small = corpus(args.tokens, args.seed), corpus(args.slice_tokens, args.seed)
    out = WORK / "counts"
    out.mkdir(exist_ok=True)
    rows: list[tuple[str, float, float, str]] = []

    def run(label: str, command: list[str], result: Path) -> float:
        wall, rss = measure(command)
        entries = sum(1 for _ in open(result, encoding="utf-8"))
        rows.append((label, wall, rss, f"{entries:,}"))
        print(f"{label}: {wall:.1f} s, {rss:.0f} MiB", file=sys.stderr, flush=True)
        return wall

    k = args.min_count
    big_label = f"{args.tokens / 1e6:.0f}M"
    small_label = f"{args.slice_tokens / 1e6:.0f}M"
    run(f"numpy counter, {big_label} tokens", fast_command(big, out / "big.txt", k, args.max_n), out / "big.txt")
    fast = run(f"numpy counter, {small_label} tokens", fast_command(small, out / "small.txt", k, args.max_n), out / "small.txt")
    run(
        f"numpy counter, {small_label} tokens, --pretokenized",
        fast_command(small, out / "small-pre.txt", k, args.max_n, pretokenized=True),
        out / "small-pre.txt",
    )
    ratio = None
    identical = None
    if not args.skip_reference:
        reference = [sys.executable, __file__, "--min-count", str(k), "--max-n", str(args.max_n)]
        reference += ["--reference", str(small), str(out / "small-ref.txt")]
        slow = run(f"collections.Counter reference, {small_label} tokens", reference, out / "small-ref.txt")
        ratio = slow / fast
        identical = (out / "small.txt").read_bytes() == (out / "small-ref.txt").read_bytes()

    print(f"\nn = 2..{args.max_n}, min_count {k}, synthetic corpus seed {args.seed}; machine: {machine()}\n")
    print("| run | wall time (s) | peak RSS (MiB) | n-grams kept |")
    print("|---|---:|---:|---:|")
    for label, wall, rss, entries in rows:
        print(f"| {label} | {wall:.1f} | {rss:.0f} | {entries} |")
    if ratio is not None:
        print(f"\nspeed-up over the Counter reference on {small_label} tokens: {ratio:.1f}x; outputs identical: {identical}")


if __name__ == "__main__":
    main()
