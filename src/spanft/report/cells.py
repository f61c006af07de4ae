"""A report table and its cells: the :class:`Table` (formatted rows, tidy numbers, notes, verdicts, the paper's
table) rendered as Markdown, LaTeX and CSV, and the cell formatters every table builder shares. Scores are
shown in percent (metric x 100), one decimal, as the paper prints them; "mean ± sd" is the mean and the sample
standard deviation over seeds (the sd left out with a single seed); ``—`` marks a cell without a value. The CSV
holds the same numbers unrounded (6 decimals), one row per cell, integer columns as integers.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field

import pandas as pd

from spanft.english import end, p_round, points, signed
from spanft.params.plan import CHANGED
from spanft.report.runs import Summary
from spanft.report.verdict import interval_level

DASH = "—"
NO_VALUE = "—: no value; in a paper cell, the paper prints none for that row and column."
INTEGER_COLUMNS = {"n_seeds", "best_seed", "baseline_seed", "sf_seed", "n", "both_correct", "only_a_correct",
                   "only_b_correct", "both_wrong", "resamples"}
PROFILE_LINES = {
    "embedded": "Profile: embedded — synthetic data, tiny local backbones, CPU — not paper numbers.",
    "paper": "Profile: paper — the paper's tasks and backbones.",
    "small": "Profile: small — real task data, a small local encoder — not the paper's backbones.",
}


def significance_note(examples: str = "dev examples") -> str:
    """The tables' note on their intervals; ``examples``: what the 1-seed bootstrap resamples."""
    return ("95% CI of the gain in the mean over seeds: Welch's t over per-seed scores (README \"Significance\"; "
            "each run's score already carries the chance of the examples it is scored on); an Avg's interval tests "
            "each seed's average over the columns. With 1 seed in an arm: the paired bootstrap of "
            f"{examples}, which speaks of these runs, not of the method.")


def profile_line(profile: str) -> str:
    """The reports' first line: the profile's words, then the params changed from its file."""
    profile, _, changed = profile.partition(CHANGED)
    line = PROFILE_LINES.get(profile, f"Profile: {profile}.")
    return f"{line} Changed from profiles/{profile.split(' ')[0]}.yaml: {changed}." if changed else line


# ------------------------------------------------------------------------------------------- cells


def pct(value: float) -> str:
    """A score x 100 as :func:`spanft.english.points` prints it (never ``-0.0``)."""
    return DASH if value is None or math.isnan(value) else points(100 * value)


def paper_cell(value: float) -> str:
    return DASH if math.isnan(value) else f"{value:.1f}"


def mean_sd(summary: Summary) -> str:
    if summary.n == 0:
        return DASH
    if summary.n == 1:
        return pct(summary.mean)
    return f"{pct(summary.mean)} ± {points(100 * summary.sd)}"


def p_value_cell(value: float) -> str:
    """Three significant digits, never rounded onto or across 0.05 (:func:`spanft.report.verdict.p_round`)."""
    return DASH if math.isnan(value) else p_round(value, 3)


def bootstrap_p_cell(result) -> str:
    """The comparison's p-value; a bootstrap's at the resampling floor ``≤ 2/(R+1)``, an upper bound."""
    if result is None or math.isnan(result.p_value):
        return DASH
    return f"≤ {result.p_value:.3g}" if result.p_at_floor else p_value_cell(result.p_value)


def ci_cell(result) -> str:
    """``+1.2 [-0.3, +2.5]``: the gain x 100 and its 95% interval (ends as :func:`spanft.report.verdict.end`);
    ``+0.4 [no spread]`` when an arm's seeds all tie."""
    if result is None or math.isnan(result.gain):
        return DASH
    if getattr(result, "no_spread", False):
        return f"{signed(100 * result.gain)} [no spread]"
    return f"{signed(100 * result.gain)} [{end(100 * result.low)}, {end(100 * result.high)}]"


def difference(ours: float, paper: float) -> str:
    """``ours − paper`` in points, signed; — when either is missing."""
    return DASH if math.isnan(ours) or math.isnan(paper) else signed(ours - paper)


def fixed(value: float, decimals: int) -> str:
    return DASH if value is None or math.isnan(value) else f"{value:.{decimals}f}"


# ------------------------------------------------------------------------------------------- CSV numbers


def csv_number(value: float | None, scale: float = 100.0) -> float | None:
    """A CSV number: ``value`` x ``scale``, None when missing."""
    return None if value is None or math.isnan(value) else scale * value


def gain_fields(result) -> dict:
    """A comparison's CSV fields (percent points), all None without a result; the detectable gain (80% power)
    only for Welch's test over seeds."""
    if result is None:
        return {"gain_pct": None, "ci_low_pct": None, "ci_high_pct": None, "p_value": None, "p_at_floor": None,
                "resamples": None, "interval": None, "detectable_gain_pct": None}
    detectable = csv_number(result.detectable_gain) if result.method_inference else None
    return {"gain_pct": csv_number(result.gain), "ci_low_pct": csv_number(result.low), "ci_high_pct": csv_number(result.high),
            "p_value": csv_number(result.p_value, 1.0), "p_at_floor": result.p_at_floor, "resamples": result.resamples,
            "interval": interval_level(result), "detectable_gain_pct": detectable}


# ------------------------------------------------------------------------------------------- Table


@dataclass
class Table:
    number: int
    title: str
    display: pd.DataFrame  # formatted strings
    data: pd.DataFrame  # tidy numbers
    notes: list[str] = field(default_factory=list)
    verdicts: list = field(default_factory=list)  # Verdict | PlainVerdict
    paper_heading: str = ""
    paper_display: pd.DataFrame = field(default_factory=pd.DataFrame)
    paper_notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if has_dash(self.display) or has_dash(self.paper_display):
            self.notes.append(NO_VALUE)

    def markdown(self, profile: str) -> str:
        notes = "".join(f"- {note}\n" for note in self.notes)
        # disable_numparse: cells are formatted strings already ("14.0" must not become "14")
        body = self.display.to_markdown(index=False, disable_numparse=True) if len(self.display) else "(no rows)"
        text = f"{profile_line(profile)}\n\n**Table {self.number}.** {self.title}\n\n{body}\n\n{notes}"
        if self.verdicts:
            text += "\nVerdicts (rule: README \"Verdicts\"):\n\n" + "".join(f"- {v.line()}\n" for v in self.verdicts)
        if self.paper_heading:
            paper = self.paper_display.to_markdown(index=False, disable_numparse=True)
            text += f"\n**{self.paper_heading}**\n\n{paper}\n"
            if self.paper_notes:
                text += "\nOn the paper's numbers:\n\n" + "".join(f"- {note}\n" for note in self.paper_notes)
        return text

    def latex(self, profile: str) -> str:
        header = f"% {profile_line(profile)}\n% Table {self.number}. {self.title}\n"
        header += "".join(f"% {note}\n" for note in self.notes)
        header += "".join(f"% {v.line().replace('**', '')}\n" for v in self.verdicts)
        parts = [header]
        if len(self.display):
            parts.append(_tabular(self.display))
        if self.paper_heading:
            parts.append(f"% {self.paper_heading}\n" + "".join(f"% {note}\n" for note in self.paper_notes))
            parts.append(_tabular(self.paper_display))
        return "".join(parts)

    def csv(self, profile: str) -> str:
        frame = self.data.copy()
        for column in INTEGER_COLUMNS.intersection(frame.columns):
            frame[column] = frame[column].astype("Int64")
        frame.insert(0, "profile", profile)
        buffer = io.StringIO()
        frame.to_csv(buffer, index=False, float_format="%.6f", lineterminator="\n")
        return buffer.getvalue()


def _tabular(frame: pd.DataFrame) -> str:
    return frame.to_latex(index=False, escape=True).replace("±", r"$\pm$").replace(DASH, "--").replace("−", "-")


def has_dash(display: pd.DataFrame) -> bool:
    return bool(len(display)) and bool((display == DASH).any().any())
