"""``reports/headline.json`` (DVC metrics: each table's gain with its 95% interval, as the verdict line prints it)
and the closing summary's gains line, read back from it.

The file: ``{"data": "synthetic", "t1": {"gain": 7.9, "low": 6.4, "high": 9.5, "what": "SF − baseline"}, ...}``.
``data`` says whether the gains come from synthetic task data (they check the machinery, not the method) or real
data; each entry's numbers are stored as they print (:func:`spanft.report.printed.stored`), null where the line
has none, and ``what`` names the comparison as its table does (Table 7: one span encoder against another). Short
keys, so that ``dvc exp show`` fits the first tables in 120 columns. A table with several gains nests them under
the backbone and the method the gain is over (``t7.vs-cnn-max``), where those differ; two verdicts that would
still share a key are told apart by a number (``t1.tiny-2``), never merged. An entry without an interval says
why (``note``: the seeds of an arm tie, one seed, not computable). Tables 2 and 3 judge counts and costs, not one
gain: they have no entry.
"""

from __future__ import annotations

import math
from typing import Any

from spanft.report.printed import DASH, end, interval, signed, stored

SYNTHETIC = "synthetic"
REAL = "real"
DATA_WORDS = {SYNTHETIC: "synthetic data: checks the machinery, not the method", REAL: "real task data"}
NUMBERS = ("gain", "low", "high")


def headline(tables: list, synthetic: bool) -> dict[str, Any]:
    """headline.json's tree from the report's tables (their :class:`~spanft.report.verdict.Verdict` lines)."""
    from spanft.report.verdict import (
        Verdict,  # the verdict module imports the printing rules; not the reverse
    )

    result: dict[str, Any] = {"data": SYNTHETIC if synthetic else REAL}
    for table in tables:
        verdicts = [v for v in table.verdicts if isinstance(v, Verdict)]
        by_backbone = len({v.backbone or v.subject for v in verdicts}) > 1
        by_versus = len({v.versus for v in verdicts}) > 1
        for verdict in verdicts:
            path = ([verdict.backbone or verdict.subject] if by_backbone else []) + \
                ([f"vs-{verdict.versus}"] if by_versus else [])
            _place(result, f"t{table.number}", path, _entry(verdict))
    return result


def _entry(verdict) -> dict[str, Any]:
    entry = {"gain": stored(signed(verdict.gain)), "low": stored(end(verdict.low)),
             "high": stored(end(verdict.high)), "what": verdict.comparison}
    if entry["gain"] is not None and (entry["low"] is None or entry["high"] is None):
        entry["note"] = verdict.word
    return entry


def _place(tree: dict, key: str, path: list[str], entry: dict) -> None:
    """``entry`` under ``tree[key]`` at ``path``; a place already taken gets the next free numbered key."""
    if not path:
        if key not in tree:
            tree[key] = entry
            return
        path = [""]  # the table's single gain is taken: number this one under the table (never merged)
        if "gain" in tree[key]:
            tree[key] = {"1": tree[key]}
    node = tree.setdefault(key, {})
    for part in path[:-1]:
        node = node.setdefault(part, {})
    last, number = path[-1], 1
    name = last or "1"
    while name in node:
        number += 1
        name = f"{last}-{number}" if last else str(number)
    node[name] = entry


# ------------------------------------------------------------------------------------------- the summary line


def data_words(tree: dict) -> str:
    """``, synthetic data: checks the machinery, not the method`` (nothing when the file does not say)."""
    kind = tree.get("data")
    return f", {DATA_WORDS[kind]}" if kind in DATA_WORDS else ""


def summary_gains(tree: dict) -> tuple[str, list[str]]:
    """The summary's head and one item per gain of headline.json: ``t1 SF − baseline +7.9 [+6.4, +9.5]``; an entry
    without an interval prints its gain and why (a tie is never dropped), one without a gain "not computable"."""
    head = f"gains x 100 [95% interval]{data_words(tree)}: "
    return head, _gains(tree, [])


def _gains(tree: dict, path: list[str]) -> list[str]:
    if any(key in tree for key in NUMBERS):
        return [_gain(tree, path)]
    return [g for key, sub in tree.items() if isinstance(sub, dict) for g in _gains(sub, [*path, str(key)])]


def _number(entry: dict, key: str) -> float | None:
    value = entry.get(key)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _gain(entry: dict, path: list[str]) -> str:
    what = entry.get("what") if isinstance(entry.get("what"), str) else ""
    # the comparison's name says what a "vs-" key says; the table and backbone keys stay
    where = " ".join([".".join(p for p in path if not (what and p.startswith("vs-")))] + ([what] if what else []))
    gain, low, high = (_number(entry, key) for key in NUMBERS)
    if gain is None:
        return f"{where} not computable"
    if low is None or high is None:
        note = entry.get("note") if isinstance(entry.get("note"), str) else "no interval"
        return f"{where} {signed(gain)} ({note})"
    return f"{where} {interval(gain, low, high)}"


def study_gains(tree: dict) -> tuple[str, list[str]]:
    """From the report's metrics.json: SF − baseline per study and backbone (the GLUE-style average where there
    is one), x 100."""
    head = f"SF − baseline, mean dev main metric x 100{data_words(tree)}: "
    gains = []
    for study, backbones in sorted(tree.items()):
        for backbone, rows in sorted(backbones.items()) if isinstance(backbones, dict) else []:
            if not isinstance(rows, dict):
                continue
            shown = {"average": rows["average"]} if "average" in rows else rows
            for row, pair in shown.items():
                diff = _number(pair, "diff") if isinstance(pair, dict) else None
                text = signed(100 * diff) if diff is not None else "n/a"
                gains.append(f"{study} {backbone} {row} {text if text != DASH else 'n/a'}")
    return head, gains
