"""``reports/headline.json`` as the closing summary of a ``dvc repro`` reads it back (the report writes it:
:mod:`spanft.report.headline`): the file's names, and one item per gain, printed as the verdict line prints it.
Here, beside the data every stage reads, so that the stages' progress needs none of the report's code."""

from __future__ import annotations

import math

from spanft.english import DASH, interval, signed

SYNTHETIC = "synthetic"
REAL = "real"
DATA_WORDS = {SYNTHETIC: "synthetic data: checks the machinery, not the method", REAL: "real task data"}
NUMBERS = ("gain", "low", "high")


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
