"""The verdict of a comparison: does our gain agree in sign and size with the paper's published gain?

Rule (gains in percentage points; [low, high] is our 95% bootstrap interval, P the paper's gain):

- **reproduced**: the interval lies on the paper's side of 0 (excludes 0) and contains P;
- **larger than published**: the interval lies on the paper's side of 0, beyond P;
- **smaller than published**: the interval lies on the paper's side of 0, short of P;
- **not reproduced**: the interval touches or crosses 0 (no detectable gain), or lies on the other side.

When P is 0, "reproduced" means the interval contains 0. A comparison without an interval (no runs, a
metric that cannot be scored) is "not computable". The rule judges our dev gain against the paper's gain on
the split the paper printed (GLUE: test), which the verdict line names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spanft.report.bootstrap import BootstrapResult

REPRODUCED = "reproduced"
LARGER = "larger than published"
SMALLER = "smaller than published"
NOT_REPRODUCED = "not reproduced"
NOT_COMPUTABLE = "not computable"


def judge(low: float, high: float, paper_gain: float) -> tuple[str, str]:
    """The verdict word for interval [low, high] against the paper's gain, and the reason in a few words."""
    if any(math.isnan(v) for v in (low, high, paper_gain)):
        return NOT_COMPUTABLE, "no interval or no published gain"
    if paper_gain == 0:
        if low <= 0 <= high:
            return REPRODUCED, "interval contains 0, as the paper's gain is 0"
        return NOT_REPRODUCED, "interval excludes 0; the paper's gain is 0"
    side = 1.0 if paper_gain > 0 else -1.0
    near, far = sorted((side * low, side * high))  # the interval on the paper's side, as positive numbers
    target = abs(paper_gain)
    if near <= 0:
        if far < 0:
            return NOT_REPRODUCED, "the interval lies on the other side of 0"
        return NOT_REPRODUCED, "the interval includes 0"
    if near > target:
        return LARGER, "the whole interval lies beyond the paper's gain"
    if far < target:
        return SMALLER, "the interval excludes 0 but stays short of the paper's gain"
    return REPRODUCED, "the interval excludes 0 and contains the paper's gain"


@dataclass(frozen=True)
class Verdict:
    """One comparison's verdict line: our gain with its interval, the paper's gain, and the rule's word."""

    table: int
    subject: str  # our backbone, as labelled in the table
    comparison: str  # "SF − baseline"
    scope: str  # the columns and split of our gain
    result: BootstrapResult | None
    n_seeds: int
    paper_gain: float  # percentage points
    paper_scope: str  # the paper's split and rows
    extra: str = ""

    @property
    def gain(self) -> float:
        return math.nan if self.result is None else 100 * self.result.gain

    @property
    def low(self) -> float:
        return math.nan if self.result is None else 100 * self.result.low

    @property
    def high(self) -> float:
        return math.nan if self.result is None else 100 * self.result.high

    @property
    def p_value(self) -> float:
        return math.nan if self.result is None else self.result.p_value

    @property
    def word(self) -> str:
        return judge(self.low, self.high, self.paper_gain)[0]

    @property
    def reason(self) -> str:
        return judge(self.low, self.high, self.paper_gain)[1]

    def line(self) -> str:
        seeds = f"{self.n_seeds} seed{'' if self.n_seeds == 1 else 's'}"
        ours = (f"{signed(self.gain)} pp, 95% CI [{signed(self.low)}, {signed(self.high)}], bootstrap p = "
                f"{p_text(self.p_value)} ({seeds} pooled, {self.result.resamples} resamples)"
                if self.result is not None and not math.isnan(self.gain) else "not computable")
        paper = "—" if math.isnan(self.paper_gain) else f"{signed(self.paper_gain)} pp"
        extra = f"; {self.extra}" if self.extra else ""
        return (f"**{self.word}** — {self.subject}, {self.comparison} over {self.scope}: {ours}; paper "
                f"({self.paper_scope}): {paper}{extra} ({self.reason}).")

    def record(self) -> dict:
        return {"table": self.table, "subject": self.subject, "comparison": self.comparison, "scope": self.scope,
                "n_seeds": self.n_seeds, "gain_pct": _none(self.gain), "ci_low_pct": _none(self.low),
                "ci_high_pct": _none(self.high), "p_value": _none(self.p_value),
                "resamples": None if self.result is None else self.result.resamples,
                "paper_gain_pct": _none(self.paper_gain), "paper_scope": self.paper_scope, "verdict": self.word}


def signed(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:+.1f}"


def p_text(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2g}"


def _none(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value


@dataclass(frozen=True)
class PlainVerdict:
    """A verdict that is a count or a cost rather than one gain (Tables 2 and 3), already worded."""

    table: int
    subject: str
    word: str
    text: str

    def line(self) -> str:
        return f"**{self.word}** — {self.subject}: {self.text}"

    def record(self) -> dict:
        return {"table": self.table, "subject": self.subject, "comparison": self.text, "verdict": self.word}
