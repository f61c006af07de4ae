"""GLUE leaderboard submission: test prediction TSVs -> ``CoLA.tsv ... AX.tsv`` zipped together.

Each file is ``index<TAB>prediction`` with the leaderboard's label strings (the registry's ``raw_labels``:
0/1 for CoLA, SST-2, MRPC, QQP, WNLI; entailment/not_entailment for QNLI, RTE; entailment/neutral/
contradiction for MNLI-m, MNLI-mm, AX); STS-B scores are clipped to [0, 5] and written with 3 decimals.
The input TSVs are the trainer's ``predictions/<split>.tsv`` (header ``idx<TAB>gold<TAB>pred``, label names).
A leaderboard file without predictions (the runs had no test split) is skipped and the log says which and
why; the zip then holds the others, or none (an empty zip: the stage's output still exists).

:func:`glue_submission` picks those TSVs from one backbone's glue-study runs: each task's best seed.
"""

from __future__ import annotations

import logging
import math
import zipfile
from pathlib import Path
from typing import Iterable, Mapping

from spanft.data.registry import GLUE_TASKS, TaskSpec, get_task, submission_splits
from spanft.errors import SpanftError, where
from spanft.fileio import atomic_path, read_text_lines
from spanft.report.runs import best_run, read_run

log = logging.getLogger("spanft")

PREDICTION_HEADER = ["idx", "gold", "pred"]


def read_predictions(path: str | Path, task: TaskSpec) -> list[tuple[int, str]]:
    """``(index, leaderboard prediction string)`` per row of a predictions TSV."""
    rows: list[tuple[int, str]] = []
    seen: set[int] = set()
    for number, line in read_text_lines(path, what="predictions TSV"):
        fields = line.split("\t")
        if number == 1:
            if fields != PREDICTION_HEADER:
                raise SpanftError(f"{where(path, 1)}: header must be {chr(9).join(PREDICTION_HEADER)!r}, found {line!r}")
            continue
        if not line:
            continue
        if len(fields) != 3:
            raise SpanftError(f"{where(path, number)}: expected 3 tab-separated fields, found {len(fields)}")
        try:
            index = int(fields[0])
        except ValueError:
            raise SpanftError(f"{where(path, number)}: idx {fields[0]!r} is not an integer") from None
        if index in seen:
            raise SpanftError(f"{where(path, number)}: idx {index} appears twice")
        seen.add(index)
        rows.append((index, leaderboard_label(task, fields[2], where(path, number))))
    if not rows:
        raise SpanftError(f"{path}: no predictions")
    return rows


def leaderboard_label(task: TaskSpec, prediction: str, location: str) -> str:
    """A predicted label name (or score) -> the string the GLUE leaderboard expects."""
    if task.is_regression:
        try:
            score = float(prediction)
        except ValueError:
            raise SpanftError(f"{location}: prediction {prediction!r} is not a number") from None
        if math.isnan(score):
            raise SpanftError(f"{location}: prediction is NaN")
        low, high = task.label_range
        return f"{min(max(score, low), high):.3f}"
    if prediction not in task.label_names:
        raise SpanftError(f"{location}: prediction {prediction!r} is not one of {task.label_names}")
    return task.raw_labels[task.label_names.index(prediction)]


def write_glue_submission(predictions: Mapping[str, Path], out_zip: str | Path,
                          skipped: Mapping[str, str] | None = None, *,
                          inputs: Iterable[str | Path] = ()) -> list[str]:
    """Zip one leaderboard file per stem in ``predictions``; return the stems written (sorted as the registry).

    ``skipped``: stem -> why it has no predictions (an absent test split); those are logged, not errors.
    The zip may not replace, or lie inside, a predictions file or one of ``inputs`` (the runs directory).
    """
    known = submission_splits()
    skipped = dict(skipped or {})
    unknown = [stem for stem in [*predictions, *skipped] if stem not in known]
    if unknown:
        raise SpanftError(f"unknown GLUE submission file(s) {unknown}; valid: {', '.join(known)}")
    if not predictions and not skipped:
        raise SpanftError("no prediction files given (--pred STEM=TSV)")
    stems = [stem for stem in known if stem in predictions]
    with atomic_path(out_zip, inputs=[*predictions.values(), *inputs]) as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for stem in stems:
                task, _ = known[stem]
                # a fixed date: the same predictions give a byte-identical zip
                entry = zipfile.ZipInfo(f"{stem}.tsv", date_time=(1980, 1, 1, 0, 0, 0))
                entry.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(entry, _leaderboard_file(predictions[stem], task))
    for stem, reason in skipped.items():
        log.warning("submission: %s.tsv skipped: %s", stem, reason)
    missing = [stem for stem in known if stem not in predictions]
    if missing:
        log.warning("submission: %s lacks %s (the leaderboard needs every file)", out_zip, ", ".join(missing))
    log.info("submission: wrote %s with %s", out_zip, ", ".join(f"{s}.tsv" for s in stems) or "no files")
    return stems


def _leaderboard_file(path: Path, task: TaskSpec) -> str:
    rows = read_predictions(path, task)
    return "index\tprediction\n" + "".join(f"{index}\t{label}\n" for index, label in rows)


def parse_pred_arguments(pairs: list[str]) -> tuple[dict[str, Path], dict[str, str]]:
    """(found, skipped): {stem: path} and {stem: why} for ``STEM=TSV`` arguments; a TSV that does not exist
    is an error (a mistyped path would otherwise zip nothing and exit 0)."""
    result: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    for pair in pairs:
        stem, sep, path = pair.partition("=")
        if not sep or not stem or not path:
            raise SpanftError(f"--pred {pair!r}: expected STEM=TSV, e.g. CoLA=runs/cola/predictions/test.tsv")
        if stem not in submission_splits():
            raise SpanftError(f"--pred {pair!r}: unknown GLUE submission file {stem!r}; valid: {', '.join(submission_splits())}")
        if stem in result:
            raise SpanftError(f"--pred: {stem} given twice")
        if not Path(path).is_file():
            found = "a directory" if Path(path).is_dir() else "not found"
            raise SpanftError(f"--pred {pair!r}: predictions file {path} {found}")
        result[stem] = Path(path)
    return result, skipped


def glue_submission(run_dir_of_backbone: str | Path, variant: str, out_zip: str | Path) -> dict[str, Path]:
    """Zip GLUE leaderboard files from ``<runs>/<task>/<variant>/seed*/`` (one backbone of the glue study).

    Per task, the seed with the best dev main metric (MNLI: matched) provides the test predictions
    (MNLI also provides MNLI-mm and AX). Tasks without runs are skipped with a warning listing the missing
    leaderboard files, and so are test splits the runs did not have (``metrics.json`` ``splits.absent``).
    Returns {leaderboard stem: predictions TSV used}.
    """
    root = Path(run_dir_of_backbone)
    if not root.is_dir():
        raise SpanftError(f"{root}: runs directory not found")
    predictions: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    absent = []
    for name in GLUE_TASKS:
        seeds = _seeds_found(root / name / variant)
        if not seeds:
            absent.append(name)
            continue
        runs = [read_run(root / name / variant / f"seed{s}", "glue", root.name, name, variant, s) for s in seeds]
        best = best_run(runs)
        task = get_task(name)
        log.info("glue-submission: %s: seed %d (dev %s %.4f)", name, best.seed, task.main_metric, best.dev_main())
        for split in task.test_splits:
            path = best.predictions(split)
            stem = task.splits[split].submission_stem
            if split in (best.get("splits") or {}).get("absent", []):
                skipped[stem] = f"{task.name} {split} was absent from the task data (no test predictions)"
            elif not path.is_file():
                raise SpanftError(f"{path}: test predictions missing from the run")
            else:
                predictions[stem] = path
    if not predictions and not skipped:
        raise SpanftError(f"{root}: no GLUE runs of variant {variant!r} (expected <task>/{variant}/seed<N>/metrics.json)")
    if absent:
        log.warning("glue-submission: no %s runs under %s for %s", variant, root, ", ".join(absent))
    write_glue_submission(predictions, out_zip, skipped, inputs=[root])
    return predictions


def _seeds_found(variant_dir: Path) -> list[int]:
    seeds = []
    for path in variant_dir.glob("seed*"):
        if path.name[4:].isdigit() and (path / "metrics.json").is_file():
            seeds.append(int(path.name[4:]))
    return sorted(seeds)
