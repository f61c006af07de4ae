"""The verdict of a comparison: does our gain agree in sign and size with the paper's published gain?

Our gain comes with a 95% interval [low, high] from the two-level bootstrap (:mod:`spanft.report.bootstrap`:
seeds within each arm, then dev examples), so it speaks of the method, not of one pair of trained runs.
Rule (gains in percentage points; P the paper's gain; written for P > 0 and mirrored for P < 0):

- **reproduced**: the interval excludes 0 on the paper's side and contains P;
- **larger than published**: the interval excludes 0 on the paper's side and lies beyond P;
- **smaller than published**: the interval lies short of P (it excludes P, whether or not it excludes 0);
- **opposite sign**: the interval excludes 0 on the other side;
- **inconclusive**: the interval holds both 0 and P — these runs cannot tell a gain of P from none.

When P is 0: **reproduced** if the interval holds 0, else larger or smaller than published. The interval
excludes 0 exactly when the bootstrap p <= 0.05 (one rule gives both). A comparison without an interval (no
runs, a metric that cannot be scored, too few finite resamples) is **not computable**.

Two cases judge nothing, whatever the interval:

- **no inference (1 seed)**: an arm with a single run. Its runs cannot be resampled, so the interval covers dev
  examples only: it says how sure the gain of *these* runs is, not whether the method helps. The line still
  shows that example-level interval, labelled as such.
- **synthetic: no verdict on the paper**: synthetic task data (the embedded profile). Its numbers check the
  machinery — the pipeline runs end to end and the statistics compute — and make no claim about the method
  or the paper.

The rule judges our dev gain against the paper's gain on the split the paper printed (GLUE: test), which the
verdict line names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spanft.report.bootstrap import BootstrapResult

REPRODUCED = "reproduced"
LARGER = "larger than published"
SMALLER = "smaller than published"
OPPOSITE = "opposite sign"
INCONCLUSIVE = "inconclusive"
NOT_COMPUTABLE = "not computable"
NO_INFERENCE = "no inference (1 seed)"
SYNTHETIC = "synthetic: no verdict on the paper"
MACHINERY = "synthetic data: this checks the machinery, not the method"
ONE_SEED = ("1 seed per arm: the interval resamples dev examples only, so it speaks of these trained runs, "
            "not of the method")


def judge(low: float, high: float, paper_gain: float) -> tuple[str, str]:
    """The verdict word for interval [low, high] against the paper's gain, and the reason in a few words."""
    if any(math.isnan(v) for v in (low, high, paper_gain)):
        return NOT_COMPUTABLE, "no interval or no published gain"
    if paper_gain == 0:
        if low <= 0 <= high:
            return REPRODUCED, "the interval holds 0, the paper's gain"
        return (LARGER, "the interval lies above the paper's gain of 0") if low > 0 else \
            (SMALLER, "the interval lies below the paper's gain of 0")
    side = 1.0 if paper_gain > 0 else -1.0
    near, far = sorted((side * low, side * high))  # the interval on the paper's side, as positive numbers
    target = abs(paper_gain)
    if far < 0:
        return OPPOSITE, "the interval excludes 0 on the other side"
    if far < target:
        holds = "holds 0 and " if near <= 0 else "excludes 0 but "
        return SMALLER, f"the interval {holds}stays short of the paper's gain"
    if near <= 0:
        return INCONCLUSIVE, "the interval holds both 0 and the paper's gain"
    if near > target:
        return LARGER, "the whole interval lies beyond the paper's gain"
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
    synthetic: bool = False  # synthetic task data: no verdict on the paper

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
    def runs_resampled(self) -> bool:
        return self.result is not None and self.result.runs_resampled

    @property
    def word(self) -> str:
        return self._judged()[0]

    @property
    def reason(self) -> str:
        return self._judged()[1]

    def _judged(self) -> tuple[str, str]:
        if self.synthetic:
            return SYNTHETIC, MACHINERY
        word, reason = judge(self.low, self.high, self.paper_gain)
        if word != NOT_COMPUTABLE and not self.runs_resampled:
            return NO_INFERENCE, ONE_SEED
        return word, reason

    def line(self) -> str:
        ours = self._ours() if self.result is not None and not math.isnan(self.gain) else "not computable"
        paper = "—" if math.isnan(self.paper_gain) else f"{signed(self.paper_gain)} pp"
        extra = f"; {self.extra}" if self.extra else ""
        return (f"**{self.word}** — {self.subject}, {self.comparison} over {self.scope}: {ours}; paper "
                f"({self.paper_scope}): {paper}{extra} ({self.reason}).")

    def _ours(self) -> str:
        result = self.result
        interval = f"95% CI [{signed(self.low)}, {signed(self.high)}]"
        if self.runs_resampled:
            level = (f"{interval} over seeds and dev examples (two-level bootstrap, {result.runs_a} baseline and "
                     f"{result.runs_b} compared seeds)")
        else:
            level = f"example-level {interval} (dev examples only, runs held fixed)"
        return f"{signed(self.gain)} pp, {level}, {p_text(result)}, {result.resamples} resamples"

    def record(self) -> dict:
        return {"table": self.table, "subject": self.subject, "comparison": self.comparison, "scope": self.scope,
                "n_seeds": self.n_seeds, "gain_pct": _none(self.gain), "ci_low_pct": _none(self.low),
                "ci_high_pct": _none(self.high), "p_value": _none(self.p_value),
                "p_at_floor": None if self.result is None else self.result.p_at_floor,
                "resamples": None if self.result is None else self.result.resamples,
                "interval": None if self.result is None else interval_level(self.result),
                "paper_gain_pct": _none(self.paper_gain), "paper_scope": self.paper_scope, "verdict": self.word}


def interval_level(result: BootstrapResult) -> str:
    """What the interval resampled: ``seeds and examples`` or ``examples only``."""
    return "seeds and examples" if result.runs_resampled else "examples only"


def signed(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:+.1f}"


def p_text(result: BootstrapResult | None, prefix: str = "p ") -> str:
    """``p = 0.031``, or at the resampling floor ``p ≤ 2/(R+1) = 0.0002`` (R: finite resamples)."""
    if result is None or math.isnan(result.p_value):
        return f"{prefix}= —"
    if result.p_at_floor:
        return f"{prefix}≤ 2/(R+1) = {result.p_value:.2g}"
    return f"{prefix}= {result.p_value:.2g}"


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
