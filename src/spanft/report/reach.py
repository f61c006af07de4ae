"""What the printed power figures reach, in words read off a measured table (``reach.csv`` beside this module,
written by ``benchmarks/bench_significance.py --reach-table``; :mod:`benchmarks.significance_reach` tells how).

The detectable gain, its "80% range" and the seeds needed that a verdict line prints are computed from per-seed
sds measured on a few seeds (:mod:`spanft.report.seedtest`): at the true sds they would keep their promise (80%
power, a range that holds the truth 80% of the time), at the measured ones they do not. The table holds, per
seeds per arm (2–10) and spread ratio between the arms (1–4), what each reaches over simulated pilots; the words
quote the worst ratio's figure at the line's seeds (10 for more than 10), floored to tenths ("in about 6 of 10
experiments"), so they never promise more than was measured.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from spanft.errors import SpanftError

TABLE = "reach.csv"
SOURCE = "benchmarks/significance_reach.py"


@dataclass(frozen=True)
class Reach:
    """At ``seeds`` per arm, the worst over the spread ratios measured, each a share of pilots."""

    seeds: int
    power: float  # mean real power of the printed detectable gain (promised 0.80)
    range_holds: float  # the printed 80% range holds the true detectable gain
    seeds_reach: float  # the printed seeds needed reach 80% real power
    seeds_range_holds: float  # the printed range of the seeds needed holds the true number


@lru_cache(maxsize=1)
def rows() -> tuple[dict, ...]:
    """The measured table, one dict per (seeds, ratio) cell, numbers as floats."""
    try:
        text = resources.files("spanft.report").joinpath(TABLE).read_text(encoding="utf-8")
    except OSError as exc:
        raise SpanftError(f"spanft/report/{TABLE}: the measured power table is missing ({exc.strerror})") from None
    return tuple({key: float(value) for key, value in row.items()} for row in csv.DictReader(text.splitlines()))


def reach(seeds: int) -> Reach:
    """The worst cell over the spread ratios at ``seeds`` per arm (clipped to the table's seeds)."""
    table = rows()
    measured = sorted({int(row["seeds"]) for row in table})
    k = min(max(seeds, measured[0]), measured[-1])
    cells = [row for row in table if int(row["seeds"]) == k]
    return Reach(k, *(min(row[key] for row in cells) for key in ("power", "range_holds", "seeds_reach",
                                                                  "seeds_range_holds")))


def tenths(share: float) -> str:
    """``about 6 of 10``: a share floored to tenths (never more than measured)."""
    return f"about {math.floor(10 * share + 1e-9)} of 10"


def short(share: float) -> str:
    """``, not 8`` where the printed 80% power is not reached (floored to tenths)."""
    return ", not 8" if math.floor(10 * share + 1e-9) < 8 else ""


def _seeds(k: int, seeds: int) -> str:
    return f"{k} seeds per arm" if k == seeds else f"{k} seeds per arm (the table's nearest; these runs: {seeds})"


def detectable_words(seeds: int) -> str:
    """``measured (...): with 3 seeds per arm a true gain this size is found in about 6 of 10 experiments, not 8,
    and the range holds the true figure in about 5 of 10``."""
    r = reach(seeds)
    return (f"measured ({SOURCE}, the worst spread ratio 1–4): with {_seeds(r.seeds, seeds)} a true "
            f"gain of the printed size is found in {tenths(r.power)} experiments{short(r.power)}, and the range "
            f"holds the figure at the true sds in {tenths(r.range_holds)}")


def seeds_words(seeds: int) -> str:
    """``from 3 seeds, such a figure gives 80% power in about 4 of 10 pilots; its range holds the true number
    in about 8 of 10``."""
    r = reach(seeds)
    return (f"from {r.seeds} seeds, such a figure gives 80% power in {tenths(r.seeds_reach)} pilots and its range "
            f"holds the true number in {tenths(r.seeds_range_holds)}")


def note() -> str:
    """The tables' note: what the printed figures reach over the whole table."""
    table = rows()

    def span(key: str) -> str:
        values = [100 * row[key] for row in table]
        return f"{min(values):.0f}–{max(values):.0f}%"

    seeds = sorted({int(row["seeds"]) for row in table})
    return (f"Measured ({SOURCE}: {seeds[0]}–{seeds[-1]} seeds per arm, spread ratio 1–4 between the arms): a "
            f"printed detectable gain has {span('power')} real power, not 80%; its 80% range holds the figure at "
            f"the true sds in {span('range_holds')} of experiments; the seeds needed from a pilot give 80% power in "
            f"{span('seeds_reach')} of pilots. The verdict lines quote the figure at their seeds.")
