"""Does every embedded baseline learn its task? Train each task's baseline and SF once, print score vs bar vs trivial.

    python benchmarks/embedded_recipe.py --work /tmp/recipe            # build what is missing, then fine-tune
    python benchmarks/embedded_recipe.py --work /tmp/recipe --tasks cola qnli --variants baseline --jobs 2

Inputs are built under ``--work`` with the same ``spanft`` commands and params as ``dvc.yaml`` (corpus, n-gram
counts, main dictionary, the backbone, every task prepared and n-gram segmented); an existing output is reused,
so delete it after changing its params. Each run is a ``spanft finetune`` child process with
``--hparams PARAMS:hparams.<task>``; ``--jobs N`` runs N at once, each with ``--threads`` torch threads.

For every (task, variant) the table shows the dev main metric (every eval split for MNLI), the trivial score of
that metric on the same dev labels (majority class, all-positive F1, MCC 0 and Pearson 0 of a constant, entity
F1 0 of all-O), the bar the embedded profile must clear (a baseline failing it is flagged), whether the run
predicted every class (or varied, for STS-B), and the wall time of the run's process. Scores x 100.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from sklearn.metrics import f1_score

# metric -> how the bar is set from the trivial score: ("abs", v): score >= v; ("above", d): score >= trivial + d
BARS = {
    "cola": ("mcc", ("abs", 0.20)),
    "sst2": ("accuracy", ("above", 0.10)),
    "mrpc": ("f1", ("above", 0.05)),
    "qqp": ("f1", ("above", 0.05)),
    "stsb": ("pearson", ("abs", 0.50)),
    "mnli": ("accuracy", ("above", 0.10)),
    "qnli": ("accuracy", ("above", 0.10)),
    "rte": ("accuracy", ("above", 0.10)),
    "wnli": ("accuracy", ("above", 0.10)),
    "snli": ("accuracy", ("above", 0.10)),
    "conll2003": ("f1", ("abs", 0.50)),
}
POSITIVE = {"mrpc": "equivalent", "qqp": "duplicate"}
EVAL_SPLITS = {"mnli": ["validation_matched", "validation_mismatched"], "snli": ["validation", "test"],
               "conll2003": ["validation", "test"]}


def spanft(*args: str, threads: int = 0) -> float:
    """Run one ``spanft`` command; return its wall seconds (stops the script on failure)."""
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    start = time.perf_counter()
    done = subprocess.run(["spanft", "-q", *args], env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"spanft {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def build_inputs(work: Path, params: dict, backbone: str, tasks: list[str], segmented: bool) -> None:
    """The inputs of the fine-tuning runs, made as dvc.yaml makes them (each skipped when present)."""
    corpus, synthetic = params["corpus"], params["data"]["synthetic"]
    steps = [(work / "corpus/train.txt", ["corpus", "--source", "synthetic", "--tokens", str(corpus["tokens"]),
                                          "--seed", str(corpus["seed"]), "--out", str(work / "corpus/train.txt")])]
    if segmented:
        steps += [
            (work / "ngrams/counts.tsv", ["count-ngrams", str(work / "corpus/train.txt"), "--out",
                                          str(work / "ngrams/counts.tsv"), *ngram_args(params)]),
            (work / "dicts/main.tsv", ["build-dict", str(work / "ngrams/counts.tsv"), "--size",
                                       str(params["dict_size"]), "--out", str(work / "dicts/main.tsv")]),
        ]
    steps.append((work / "backbones" / backbone, ["backbone", backbone, "--out", str(work / "backbones" / backbone),
                                                  "--corpus", str(work / "corpus/train.txt"),
                                                  *option_args(params["backbones"]["build"][backbone])]))
    for task in tasks:
        steps.append((work / "tasks" / task, [
            "prepare-task", task, "--source", "synthetic", "--seed", str(synthetic["seed"]),
            "--language-seed", str(corpus["seed"]), "--train-size", str(synthetic["train_size"]),
            "--eval-size", str(synthetic["eval_size"]), "--test-size", str(synthetic["test_size"]),
            "--out", str(work / "tasks" / task)]))
        if segmented:
            steps.append((work / "segmented" / task, [
                "segment-task", str(work / "tasks" / task), "--method", "ngram", "--dict",
                str(work / "dicts/main.tsv"), *option_args(params["words"]), "--out", str(work / "segmented" / task)]))
    for out, args in steps:
        if not out.exists():
            print(f"{args[0]} {out.relative_to(work)}: {spanft(*args):.1f} s", flush=True)


def ngram_args(params: dict) -> list[str]:
    n = params["ngrams"]
    return ["--min-n", str(n["min_n"]), "--max-n", str(n["max_n"]), "--min-count", str(n["min_count"]),
            *option_args(params["words"])]


def option_args(block: dict) -> list[str]:
    """A params block as DVC unpacks it onto a command line (``--key value``, booleans as flags)."""
    args: list[str] = []
    for key, value in block.items():
        if isinstance(value, bool):
            args.append(f"--{key}" if value else f"--no-{key}")
        else:
            args += [f"--{key}", str(value)]
    return args


def finetune(work: Path, runs: Path, params_file: Path, backbone: str, task: str, variant: str, seed: int,
             threads: int, score_only: bool = False) -> dict:
    out = runs / backbone / task / variant / f"seed{seed}"
    seconds = None
    if score_only:
        return score_run(out, task, variant, seconds) if (out / "metrics.json").exists() else {"rows": []}
    if not (out / "metrics.json").exists():
        data = work / ("tasks" if variant == "baseline" else "segmented") / task
        seconds = spanft("finetune", "--task", task, "--variant", variant, "--seed", str(seed),
                         "--backbone", str(work / "backbones" / backbone), "--data", str(data),
                         "--hparams", f"{params_file}:hparams.{task}", "--out", str(out),
                         "--checkpoint-dir", str(out.parent / f"checkpoints-{seed}"),
                         threads=threads)
    return score_run(out, task, variant, seconds)


def score_run(out: Path, task: str, variant: str, seconds: float | None) -> dict:
    metrics = json.loads((out / "metrics.json").read_text())
    metric, _ = BARS[task]
    rows = []
    for split in EVAL_SPLITS.get(task, ["validation"]):
        frame = pd.read_csv(out / "predictions" / f"{split}.tsv", sep="\t", keep_default_na=False, dtype=str)
        trivial, varied = trivial_score(task, metric, frame)
        score = metrics["metrics"][split][metric]
        majority = float(frame["gold"].value_counts(normalize=True).max())
        rows.append({"task": task, "split": split, "variant": variant, "metric": metric, "score": score,
                     "trivial": trivial, "bar": bar(task, trivial), "varied": varied, "majority": majority,
                     "accuracy": metrics["metrics"][split].get("accuracy"),
                     "epochs": metrics["epochs"], "best_epoch": metrics["best_epoch"],
                     "train_s": metrics["train_seconds"], "process_s": seconds})
    return {"rows": rows}


def trivial_score(task: str, metric: str, frame: pd.DataFrame) -> tuple[float, bool]:
    """The metric of the best constant prediction on these gold labels, and whether the run's output varied."""
    gold, pred = frame["gold"], frame["pred"]
    if metric == "pearson":
        return 0.0, pred.astype(float).std() > 0
    if metric == "mcc":
        return 0.0, pred.nunique() == gold.nunique()
    if task == "conll2003":  # all-O tags find no entity; varied: some entity predicted
        return 0.0, any(tag != "O" for tags in pred for tag in tags.split())
    if metric == "f1":  # all-positive: every example labelled with the positive class
        truth = (gold == POSITIVE[task]).to_numpy()
        return float(f1_score(truth, np.ones_like(truth))), pred.nunique() == gold.nunique()
    return float(gold.value_counts(normalize=True).max()), pred.nunique() == gold.nunique()


def bar(task: str, trivial: float) -> float:
    kind, value = BARS[task][1]
    return value if kind == "abs" else trivial + value


def report(results: list[dict]) -> int:
    frame = pd.DataFrame([row for result in results for row in result["rows"]])
    if frame.empty:
        print("no finished runs")
        return 1
    failing = 0
    print(f"\n{'task':10} {'split':22} {'variant':9} {'metric':8} {'score':>6} {'trivial':>7} {'bar':>6} "
          f"{'varied':>6} {'best/ep':>7} {'train s':>7} {'proc s':>6}  verdict")
    for row in frame.itertuples():
        passed = row.score >= row.bar - 1e-12 and row.varied
        if row.task in ("mrpc", "qqp"):
            passed = passed and row.accuracy > row.majority
        failing += row.variant == "baseline" and not passed
        verdict = "ok" if passed else ("BELOW BAR" if row.variant == "baseline" else "below bar")
        proc = f"{row.process_s:6.1f}" if row.process_s == row.process_s and row.process_s is not None else "     -"
        print(f"{row.task:10} {row.split:22} {row.variant:9} {row.metric:8} {100 * row.score:6.1f} "
              f"{100 * row.trivial:7.1f} {100 * row.bar:6.1f} {str(bool(row.varied)):>6} "
              f"{row.best_epoch}/{row.epochs:<5} {row.train_s:7.1f} {proc}  {verdict}")
    print(f"\nbaselines below their bar or constant: {failing}")
    return failing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="directory for inputs and runs")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--runs", type=Path, default=None, help="where runs go (default WORK/runs); reused if present")
    parser.add_argument("--backbone", default="tiny")
    parser.add_argument("--tasks", nargs="+", default=list(BARS))
    parser.add_argument("--variants", nargs="+", default=["baseline", "sf"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--threads", type=int, default=0, help="torch threads per run (0: torch's default)")
    parser.add_argument("--score-only", action="store_true", help="score the finished runs; build and run nothing")
    args = parser.parse_args()
    params = yaml.safe_load(args.params.read_text())
    if not args.score_only:
        build_inputs(args.work, params, args.backbone, args.tasks, segmented=args.variants != ["baseline"])
    runs = [(task, variant) for task in args.tasks for variant in args.variants]
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda tv: finetune(args.work, args.runs or args.work / "runs", args.params.resolve(),
                                                    args.backbone, *tv, args.seed, args.threads, args.score_only), runs))
    return 1 if report(results) else 0


if __name__ == "__main__":
    sys.exit(main())
