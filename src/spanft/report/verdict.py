"""The verdict of a comparison: does our gain agree in sign and size with the paper's published gain?

Our gain comes with a 95% interval [low, high]. With two or more runs (seeds) in each arm it is Welch's t
interval over per-seed scores (:mod:`spanft.report.seedtest`), which speaks of the method; with one run in an
arm it is the example-level bootstrap (:mod:`spanft.report.bootstrap`), which speaks of those runs only. The rule
compares *signed* gains (percentage points; P the paper's gain, of any sign, 0 included):

- **opposite sign**: P is not 0 and the interval excludes 0 on the side away from P;
- **reproduced**: the interval holds P and excludes 0;
- **inconclusive**: the interval holds both P and 0 — these runs cannot tell a gain of P from none (with P = 0:
  the interval holds 0, which is no evidence that the gain is 0, only a bound on it);
- **larger than published**: the whole interval lies above P (for a published loss: a smaller loss, or a gain;
  the reason says so);
- **smaller than published**: the whole interval lies below P (for a published loss: a larger loss, and the
  reason says so).

The interval excludes 0 exactly when p < 0.05 (one rule gives both). A comparison without an interval (no
runs, a metric that cannot be scored, too few finite resamples) is **not computable**. Beside every verdict whose
interval holds 0 (inconclusive, or short of P without excluding 0), the line prints the smallest gain these runs
could have detected with 80% power and the seeds per arm the paper's gain would need, each with its range
over the 80% interval of the seed sd (:mod:`spanft.report.seedtest`).

Printed numbers never cross a line the verdict draws: a p-value never rounds onto or across 0.05 (0.050016
prints 0.051), and an interval end that is not 0 never prints as 0.0 (+0.03).

Three cases judge nothing, whatever the interval:

- **no inference (1 seed)**: an arm with a single run. Its runs cannot be resampled, so the interval covers dev
  examples only: it says how sure the gain of *these* runs is, not whether the method helps. The line still
  shows that example-level interval, labelled as such.
- **no inference (no spread across seeds)**: every seed of an arm scored the same (ties are likely at 99%
  accuracy on a small dev set). A sample variance of 0 supports no test: the line prints the gain with no
  interval and no p-value, never p = 0.
- **synthetic: no verdict on the paper**: synthetic task data (the embedded profile). Its numbers check the
  machinery — the pipeline runs end to end and the statistics compute — and make no claim about the method
  or the paper.

The rule judges our dev gain against the paper's gain on the split the paper printed (GLUE: test), which the
verdict line names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spanft.english import count_of, end, p_round, signed
from spanft.report import degenerate, reach
from spanft.report.bootstrap import BootstrapResult
from spanft.report.seedtest import MAX_SEEDS

REPRODUCED = "reproduced"
LARGER = "larger than published"
SMALLER = "smaller than published"
OPPOSITE = "opposite sign"
INCONCLUSIVE = "inconclusive"
PARTLY = "partly reproduced"  # Table 2: some tasks significant in SF's favour, the rest inconclusive
MIXED = "mixed signs"  # Table 2: significant gains and significant losses
NOT_COMPUTABLE = "not computable"
NO_INFERENCE = "no inference (1 seed)"
NO_SPREAD = "no inference (no spread across seeds)"
TIED = ("every seed of an arm scored the same: a sample variance of 0 supports no test, so no interval and no "
        "p-value")
SYNTHETIC = "synthetic: no verdict on the paper"
MACHINERY = "synthetic data: this checks the machinery, not the method"
ONE_SEED = ("1 seed per arm: the interval resamples dev examples only, so it speaks of these trained runs, "
            "not of the method")


def judge(low: float, high: float, paper_gain: float) -> tuple[str, str]:
    """The verdict word for interval [low, high] against the paper's signed gain, and the reason in a few words."""
    if any(math.isnan(v) for v in (low, high, paper_gain)):
        return NOT_COMPUTABLE, "no interval or no published gain"
    holds_zero = low <= 0 <= high
    if paper_gain > 0 and high < 0 or paper_gain < 0 and low > 0:
        return OPPOSITE, "the interval excludes 0 on the side away from the paper's gain"
    if low <= paper_gain <= high:
        if not holds_zero:
            return REPRODUCED, "the interval excludes 0 and holds the paper's gain"
        if paper_gain == 0:
            return INCONCLUSIVE, "the interval holds 0, the paper's gain: that bounds the gain, it does not show it is 0"
        return INCONCLUSIVE, "the interval holds both 0 and the paper's gain"
    zero = "; it holds 0" if holds_zero else ""
    loss = paper_gain < 0
    if low > paper_gain:
        what = "above the paper's published loss: a smaller loss, or a gain" if loss else "above the paper's gain"
        return LARGER, f"the whole interval lies {what}{zero}"
    what = "below the paper's published loss: a larger loss" if loss else "below the paper's gain"
    return SMALLER, f"the whole interval lies {what}{zero}"


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
    backbone: str = ""  # our backbone's key (``subject`` is its label)
    versus: str = "baseline"  # the method the gain is over (Table 7: the other encoder)

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
    def method_inference(self) -> bool:
        """The interval speaks of the method: Welch's test over two or more seeds in each arm."""
        return self.result is not None and self.result.method_inference

    @property
    def word(self) -> str:
        return self._judged()[0]

    @property
    def reason(self) -> str:
        return self._judged()[1]

    def _judged(self) -> tuple[str, str]:
        if self.synthetic:
            return SYNTHETIC, MACHINERY
        if getattr(self.result, "no_spread", False):
            return NO_SPREAD, TIED
        word, reason = judge(self.low, self.high, self.paper_gain)
        if word != NOT_COMPUTABLE and not self.method_inference:
            return NO_INFERENCE, ONE_SEED
        return word, reason

    @property
    def detectable_gain(self) -> float:
        """Percentage points: the smallest gain these runs detect with 80% power (NaN without a seed test)."""
        return 100 * self.result.detectable_gain if self.method_inference else math.nan

    @property
    def seeds_needed(self) -> int | None:
        """Seeds per arm for 80% power at the paper's gain (None: no seed test, a gain of 0, or too many)."""
        if not self.method_inference or math.isnan(self.paper_gain):
            return None
        return self.result.seeds_needed(self.paper_gain / 100)

    def line(self) -> str:
        ours = self._ours() if self.result is not None and not math.isnan(self.gain) else "not computable"
        paper = "—" if math.isnan(self.paper_gain) else f"{signed(self.paper_gain)} pp"
        extra = f"; {self.extra}" if self.extra else ""
        return (f"**{self.word}** — {self.subject}, {self.comparison} over {self.scope}: {ours}"
                f"{degenerate.words(self.result)}; paper ({self.paper_scope}): {paper}{extra} ({self.reason})"
                f"{self._power()}.")

    def _ours(self) -> str:
        result = self.result
        interval = f"95% CI [{end(self.low)}, {end(self.high)}]"
        if getattr(result, "no_spread", False):
            return (f"{signed(self.gain)} pp over seeds, no interval and no test ({seeds(result)}: an arm's seeds "
                    f"tie{left_out(result)})")
        if self.method_inference:
            return (f"{signed(self.gain)} pp, {interval} over seeds ({tested(result)}, df {result.df:.1f}"
                    f"{left_out(result)}), {p_text(result)}")
        return (f"{signed(self.gain)} pp, example-level {interval} ({interval_level(result)}), {p_text(result)}, "
                f"{result.resamples} resamples")

    def _power(self) -> str:
        """What to run next, beside a verdict whose interval holds 0."""
        if self.synthetic or not self.method_inference or not self.low <= 0 <= self.high:
            return ""
        return "; " + power_words(self.result, self.paper_gain)

    def record(self) -> dict:
        return {"table": self.table, "subject": self.subject, "comparison": self.comparison, "scope": self.scope,
                "n_seeds": self.n_seeds, "gain_pct": _none(self.gain), "ci_low_pct": _none(self.low),
                "ci_high_pct": _none(self.high), "p_value": _none(self.p_value),
                "p_at_floor": None if self.result is None else self.result.p_at_floor,
                "resamples": None if self.result is None else self.result.resamples,
                "interval": None if self.result is None else interval_level(self.result),
                "detectable_gain_pct": _none(self.detectable_gain), "seeds_needed": self.seeds_needed,
                "paper_gain_pct": _none(self.paper_gain), "paper_scope": self.paper_scope, "verdict": self.word}


def power_words(result, paper_gain: float) -> str:
    """``these runs detect a gain of ±7.7 pp with 80% power (80% range 5.5–14.9 from the seed sd's uncertainty;
    per-seed sd ...); the paper's +1.1 pp would need 40 seeds per arm (13–140)`` for a seed test; ``paper_gain`` in
    percentage points."""
    low, high = result.detectable_range
    text = (f"these runs detect a gain of ±{100 * result.detectable_gain:.1f} pp with 80% power, a rough estimate "
            f"from {result.seeds_tested} seeds per arm (80% range {100 * low:.1f}–{100 * high:.1f} from the "
            f"uncertain seed sd; per-seed sd {100 * result.sd_a:.1f} baseline, {100 * result.sd_b:.1f} compared) — "
            f"{reach.detectable_words(result.seeds_tested)}")
    if math.isnan(paper_gain):
        return text
    if paper_gain == 0:
        return f"{text}; the paper's gain is 0, which no number of seeds tells from a small gain"
    return f"{text}; the paper's {signed(paper_gain)} pp would need {seeds_words(result, paper_gain / 100)}"


def seeds_words(result, gain: float) -> str:
    """``17 seeds per arm (6–32; from 3 seeds, such a figure gives 80% power in about 4 of 10 pilots ...)``: the
    seeds needed for a true ``gain`` (metric units), their 80% range, and what such a figure reaches
    (:mod:`spanft.report.reach`)."""
    needed = result.seeds_needed(gain)
    fewest, most = result.seeds_range(gain)
    count = f"{needed:,} seeds per arm" if needed is not None else f"more than {MAX_SEEDS:,} seeds per arm"
    return f"{count} ({_count(fewest)}–{_count(most)}; {reach.seeds_words(result.seeds_tested)})"


def _count(seeds: int | None) -> str:
    return f"{seeds:,}" if seeds is not None else f">{MAX_SEEDS:,}"


def seeds(result) -> str:
    """``3 baseline and 3 compared seeds``: the seeds a test over seeds uses."""
    k = result.seeds_tested
    return f"{k} baseline and {k} compared seeds"


def tested(result) -> str:
    """``Welch t over 3 baseline and 3 compared seeds``."""
    return f"Welch t over {seeds(result)}"


def left_out(result) -> str:
    """``; the 2 other compared seeds left out to keep the arms equal``, or nothing with equal arms."""
    extra = max(result.runs_a, result.runs_b) - result.seeds_tested
    arm = "baseline" if result.runs_a > result.runs_b else "compared"
    return f"; the {extra} other {arm} seed{'s' if extra > 1 else ''} left out to keep the arms equal" if extra else ""


def interval_level(result) -> str:
    """What the interval varied: the seeds (Welch's test), or for a bootstrap what it resampled, arm by arm."""
    if result.method_inference:
        return "seeds (Welch t)"
    if getattr(result, "no_spread", False):
        return "seeds: an arm's seeds tie, no test"
    if result.runs_resampled:
        return "seeds and examples"
    if result.resampled_b:
        return f"examples and the compared arm's {count_of(result.runs_b, 'run')} (the baseline's {result.runs_a} held fixed)"
    if result.resampled_a:
        return f"examples and the baseline's {count_of(result.runs_a, 'run')} (the compared arm's {result.runs_b} held fixed)"
    return "examples only"


def test_name(result) -> str:
    """Which test decided a gain, for a table's row: Welch over seeds, or an inference-free fallback."""
    if result is None:
        return "—"
    if result.method_inference:
        return f"Welch t over seeds ({result.seeds_tested} per arm)"
    if getattr(result, "no_spread", False):
        return "no test: an arm's seeds tie (no spread)"
    return "example bootstrap, 1 seed: no inference"


def p_text(result: BootstrapResult | None, prefix: str = "p ") -> str:
    """``p = 0.031``, or at the resampling floor ``p ≤ 2/(R+1) = 0.0002`` (R: finite resamples)."""
    if result is None or math.isnan(result.p_value):
        return f"{prefix}= —"
    if result.p_at_floor:
        return f"{prefix}≤ 2/(R+1) = {result.p_value:.2g}"
    return f"{prefix}= {p_round(result.p_value)}"


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
