"""``reports/headline.json`` (DVC metrics: each table's gain with its 95% interval, as the verdict line prints it)
(its reader, the closing summary's gains line: :mod:`spanft.data.headline`).

The file: ``{"data": "synthetic", "t1": {"gain": 7.9, "low": 6.4, "high": 9.5, "what": "SF − baseline"}, ...}``.
``data`` says whether the gains come from synthetic task data (they check the machinery, not the method) or real
data; each entry's numbers are stored as they print (:func:`spanft.english.stored`), null where the line
has none, and ``what`` names the comparison as its table does (Table 7: one span encoder against another). Short
keys, so that ``dvc exp show`` fits the first tables in 120 columns. A table with several gains nests them under
the backbone and the method the gain is over (``t7.vs-cnn-max``), where those differ; two verdicts that would
still share a key are told apart by a number (``t1.tiny-2``), never merged. An entry without an interval says
why (``note``: the seeds of an arm tie, one seed, not computable). Tables 2 and 3 judge counts and costs, not one
gain: they have no entry.
"""

from __future__ import annotations

from typing import Any

from spanft.data.headline import REAL, SYNTHETIC
from spanft.english import end, signed, stored


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
