"""McNemar's test of two classifiers scored on the same examples (paper Table 2: baseline vs SF on GLUE dev).

Each example falls in one cell of the 2x2 table of (A correct?, B correct?). Only the discordant cells
b (only A correct) and c (only B correct) matter: statsmodels' ``mcnemar`` runs the exact binomial test
when b + c < 25 (statistic: min(b, c)) and the chi-square test with continuity correction otherwise (the usual
rule of thumb; statistic max(0, |b - c| - 1)^2 / (b + c), so b = c gives 0 and p = 1 where statsmodels'
unclamped formula gives 1 / (b + c)).
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from spanft.errors import SpanftError

EXACT_BELOW = 25  # discordant pairs under which the exact binomial test is used
PREDICTION_COLUMNS = ["idx", "gold", "pred"]


@dataclass(frozen=True)
class McNemarResult:
    """The paired 2x2 table of two classifiers and McNemar's test on it."""

    n: int
    both_correct: int
    only_a_correct: int
    only_b_correct: int
    both_wrong: int
    statistic: float
    p_value: float
    method: str  # "exact" (binomial) or "chi2" (chi-square, continuity-corrected)

    def as_dict(self) -> dict:
        return asdict(self)


def mcnemar_from_correct(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> McNemarResult:
    """McNemar's test from per-example correctness of classifiers A and B (same examples, same order)."""
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise SpanftError(f"McNemar: {a.size} results of A paired with {b.size} results of B")
    if a.size == 0:
        raise SpanftError("McNemar: no paired examples")
    table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
    discordant = table[0][1] + table[1][0]
    exact = discordant < EXACT_BELOW
    # statsmodels here, not at the top: the submission stage reads runs through this module and never tests
    # (1-2 s of its start on 2 cores)
    from statsmodels.stats.contingency_tables import mcnemar

    result = mcnemar(table, exact=exact, correction=True)
    statistic, p_value = float(result.statistic), min(1.0, float(result.pvalue))
    if not exact and table[0][1] == table[1][0]:
        # statsmodels computes (|b - c| - 1)^2 / (b + c) = 1 / (b + c) here; the corrected difference is
        # max(0, |b - c| - 1) = 0: no evidence either way
        statistic, p_value = 0.0, 1.0
    return McNemarResult(
        n=int(a.size),
        both_correct=table[0][0],
        only_a_correct=table[0][1],
        only_b_correct=table[1][0],
        both_wrong=table[1][1],
        statistic=statistic,
        p_value=p_value,
        method="exact" if exact else "chi2",
    )


def mcnemar_test(gold: Sequence, pred_a: Sequence, pred_b: Sequence) -> McNemarResult:
    """McNemar's test of predictions A and B against the same gold labels (compared as equal values)."""
    gold_array = np.asarray(gold, dtype=object)
    a = np.asarray(pred_a, dtype=object)
    b = np.asarray(pred_b, dtype=object)
    if not (len(gold_array) == len(a) == len(b)):
        raise SpanftError(f"McNemar: {len(a)} and {len(b)} predictions for {len(gold_array)} gold labels")
    return mcnemar_from_correct(a == gold_array, b == gold_array)


def read_prediction_table(path: str | Path):
    """A predictions TSV (``idx<TAB>gold<TAB>pred``, written by spanft.train) as a DataFrame of strings.

    ``idx`` becomes an integer column; a missing file, a wrong header or a repeated idx is a SpanftError.
    """
    path = Path(path)
    if not path.is_file():
        raise SpanftError(f"{path}: predictions TSV not found")
    try:
        frame = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=csv.QUOTE_NONE,
                            encoding="utf-8")
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise SpanftError(f"{path}: not a predictions TSV ({str(exc).splitlines()[0]})") from None
    if list(frame.columns) != PREDICTION_COLUMNS:
        raise SpanftError(f"{path}:1: header must be {chr(9).join(PREDICTION_COLUMNS)!r}, found {list(frame.columns)}")
    try:
        frame["idx"] = frame["idx"].astype("int64")
    except ValueError:
        raise SpanftError(f"{path}: idx column holds a value that is not an integer") from None
    repeated = frame["idx"][frame["idx"].duplicated()]
    if len(repeated):
        raise SpanftError(f"{path}: idx {int(repeated.iloc[0])} appears twice")
    return frame


def mcnemar_files(path_a: str | Path, path_b: str | Path) -> McNemarResult:
    """McNemar's test of two predictions TSVs of the same split, paired by ``idx``.

    The idx sets and the gold labels must agree, and every row must carry a gold label.
    """
    gold, (pred_a, pred_b) = aligned_predictions([path_a, path_b])
    return mcnemar_test(gold, pred_a, pred_b)


def aligned_predictions(paths: Sequence[str | Path]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Gold labels and each file's predictions (strings), in idx order, from predictions TSVs of one split.

    Every file must hold the same idx set and gold labels as the first, and every row a gold label.
    """
    if not paths:
        raise SpanftError("no predictions files to pair")
    first = read_prediction_table(paths[0]).set_index("idx").sort_index()
    unlabeled = first.index[first["gold"] == ""]
    if len(unlabeled):
        raise SpanftError(f"{paths[0]}: idx {int(unlabeled[0])} has no gold label (an unlabeled split)")
    predictions = []
    for path in paths:
        frame = read_prediction_table(path).set_index("idx").sort_index()
        if not first.index.equals(frame.index):
            only_a = sorted(set(first.index) - set(frame.index))[:3]
            only_b = sorted(set(frame.index) - set(first.index))[:3]
            raise SpanftError(f"{paths[0]} and {path}: idx sets differ (only in the first: {only_a}, "
                              f"only in the second: {only_b})")
        differing = first.index[first["gold"] != frame["gold"]]
        if len(differing):
            raise SpanftError(f"{paths[0]} and {path}: gold labels differ at idx {int(differing[0])}")
        predictions.append(frame["pred"].to_numpy())
    return first["gold"].to_numpy(), predictions
