"""The one-screen summary that opens ``reports/index.md``: profile, inputs, each table's verdict, flagged runs.

Inputs come from each run's ``metrics.json`` ``inputs`` block (``{"backbone": {...}, "data": {...}}``, written
by fine-tuning: where the backbone and the task data came from, with a revision or a digest); runs without
one show "not recorded". The corpus (WikiText's hub commit, or a path or the synthetic language, and the
corpus file's digest) comes from the corpus stage's record.
"""

from __future__ import annotations

from typing import Any

from spanft.report.runs import Run
from spanft.report.trivial import RunCheck

NOT_RECORDED = "not recorded"
FIELD_ORDER = ("source", "id_or_path", "revision", "digest")
DIGEST_CHARS = 12
FLAGS_SHOWN = 8


def summary_lines(runs: list[Run], tables: list, checks: list[RunCheck], corpus: dict | None = None) -> list[str]:
    """Markdown lines: inputs, verdicts per table, and the flagged runs (the first few); the profile line
    comes first in every report."""
    lines = ["# Summary", "", f"- Corpus: {describe(corpus)}", *inputs_lines(runs), "", "## Verdicts", ""]
    for table in tables:
        if not table.verdicts:
            lines.append(f"- Table {table.number}: no verdict ({'; '.join(table.notes[:1]) or 'no runs'})")
        for verdict in table.verdicts:
            lines.append(f"- Table {table.number}, {verdict.line()}")
    lines += ["", "## Runs no better than a constant predictor", ""]
    flagged = [check for check in checks if check.flagged]
    if not flagged:
        lines.append(f"- none of the {len(checks)} dev splits checked")
    for check in flagged[:FLAGS_SHOWN]:
        lines.append(f"- {check.describe()}")
    if len(flagged) > FLAGS_SHOWN:
        lines.append(f"- … and {len(flagged) - FLAGS_SHOWN} more (all {len(flagged)} at the end of this page)")
    return lines + [""]


def flagged_lines(checks: list[RunCheck]) -> list[str]:
    """Every flagged run, for the end of the index."""
    flagged = [check for check in checks if check.flagged]
    if len(flagged) <= FLAGS_SHOWN:
        return []
    return ["## Every run no better than a constant predictor", "",
            *(f"- {check.describe()}" for check in flagged), ""]


def inputs_lines(runs: list[Run]) -> list[str]:
    """One line for the backbones and one for the data: each distinct record and who used it."""
    backbones: dict[str, list[str]] = {}
    data: dict[str, list[str]] = {}
    missing = 0
    for run in runs:
        inputs = run.get("inputs")
        if not isinstance(inputs, dict):
            missing += 1
            inputs = {}
        _add(backbones, describe(inputs.get("backbone")), run.backbone)
        _add(data, describe(inputs.get("data")), run.task)
    runs_text = f"{len(runs)} runs read" + (f", {missing} without an inputs record" if missing else "")
    return [f"- Backbones: {_grouped(backbones)}", f"- Data: {_grouped(data)}", f"- Runs: {runs_text}"]


def describe(record: Any) -> str:
    """``source hub, id_or_path bert-base-uncased, revision 86b5e09…`` from an inputs record."""
    if not isinstance(record, dict) or not record:
        return NOT_RECORDED
    keys = [k for k in FIELD_ORDER if k in record] + sorted(k for k in record if k not in FIELD_ORDER)
    parts = []
    for key in keys:
        value = record[key]
        if isinstance(value, (dict, list)):
            continue
        text = str(value)
        if key in ("revision", "digest") and len(text) > DIGEST_CHARS:
            text = text[:DIGEST_CHARS] + "…"
        parts.append(f"{key} {text}")
    return ", ".join(parts) or NOT_RECORDED


def _add(groups: dict[str, list[str]], description: str, user: str) -> None:
    users = groups.setdefault(description, [])
    if user not in users:
        users.append(user)


def _grouped(groups: dict[str, list[str]]) -> str:
    if not groups:
        return NOT_RECORDED
    return "; ".join(f"{', '.join(users)}: {description}" for description, users in groups.items())
