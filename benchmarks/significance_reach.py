"""What the power figures a verdict line prints reach, measured: the table behind their words
(src/spanft/report/reach.csv, read by :mod:`spanft.report.reach`).

A verdict whose interval holds 0 prints, from the measured per-seed sds, the gain these runs detect with 80%
power, its "80% range", and the seeds per arm a gain would need (:mod:`spanft.report.seedtest`). Each is a
function of sds measured on a few seeds, so each misses its promise by the sds' own noise. For every cell of
seeds per arm k = 2..10 and spread ratio r = 1..4 (one arm's true per-seed sd r times the other's), this
simulates pilot experiments — k normal seed scores per arm at the true sds — and measures, against the truth
(the same functions at the true sds):

- ``power``: the mean real power of the printed detectable gain (the chance that Welch's test finds a true gain
  of that size, at the true sds; :func:`spanft.report.seedtest.welch_power`). The words promise 0.80.
- ``range_holds``: how often the printed 80% range holds the detectable gain at the true sds. Promised: 0.80.
- ``seeds_reach``: how often the seeds needed for a gain, from the pilot, give 80% real power for it (the gain:
  the one the true sds detect with 80% power at 2k seeds per arm). Promised: every pilot, as the words read.
- ``seeds_range_holds``: how often the printed range of the seeds needed holds the true number.

The printed detectable gain is computed the report's way up to an interpolation: it is the measured se times a
factor of the measured variance share alone, the report's :func:`~spanft.report.seedtest.detectable_gain` at 41
shares, interpolated (the test of the table checks cells against the report's own functions). The seeds
needed are the report's own :func:`~spanft.report.seedtest.seeds_needed`, on fewer pilots (it is slower).
"""

from __future__ import annotations

import csv
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy import special

from spanft.report.seedtest import (
    _welch_grid,
    detectable_gain,
    sd_range,
    seeds_needed,
)

SEEDS = tuple(range(2, 11))
RATIOS = (1.0, 2.0, 3.0, 4.0)
SHARES = np.linspace(0.0, 1.0, 41)
COLUMNS = ("seeds", "ratio", "pilots", "power", "range_holds", "seed_pilots", "seeds_reach", "seeds_range_holds")


@lru_cache(maxsize=None)
def _factor(k: int) -> np.ndarray:
    """The detectable gain in units of the se, at each variance share of :data:`SHARES` (k seeds per arm)."""
    se = math.sqrt(1.0 / k)
    return np.array([detectable_gain(share, 1.0 - share, k, k) / se for share in SHARES])


def _power(gains: np.ndarray, var_a: float, var_b: float, k: int) -> np.ndarray:
    """Welch's power at each true gain of ``gains`` (true variances, k per arm), vectorised over the gains."""
    total = (var_a + var_b) / k
    se, df = _welch_grid(var_a / k / total, k, k)
    critical = special.stdtrit(df, 0.975) * se
    shift = np.abs(gains)[:, None] / math.sqrt(total)
    return np.mean(special.ndtr(shift - critical) + special.ndtr(-shift - critical), axis=1)


def cell(rng: np.random.Generator, k: int, ratio: float, pilots: int, seed_pilots: int) -> dict:
    """One cell: ``pilots`` simulated pilots for the detectable gain and its range, ``seed_pilots`` for the seeds
    needed."""
    var_a, var_b = 1.0, ratio ** 2
    scores_a = rng.normal(0.0, 1.0, (pilots, k))
    scores_b = rng.normal(0.0, ratio, (pilots, k))
    v_a, v_b = scores_a.var(axis=1, ddof=1), scores_b.var(axis=1, ddof=1)
    factor = np.interp(v_a / (v_a + v_b), SHARES, _factor(k))
    printed = factor * np.sqrt((v_a + v_b) / k)
    truth = detectable_gain(var_a, var_b, k, k)
    low, high = sd_range(k, k)
    power = float(np.mean(_power(printed, var_a, var_b, k)))
    holds = float(np.mean((low * printed <= truth) & (truth <= high * printed)))
    gain = detectable_gain(var_a, var_b, 2 * k, 2 * k)
    needed_truth = seeds_needed(gain, var_a, var_b)
    reach = holds_n = 0
    for a, b in zip(v_a[:seed_pilots], v_b[:seed_pilots]):
        needed = seeds_needed(gain, a, b)
        fewest, most = seeds_needed(gain / low, a, b), seeds_needed(gain / high, a, b)
        reach += needed is not None and float(_power(np.array([gain]), var_a, var_b, needed)[0]) >= 0.8
        holds_n += (fewest or math.inf) <= needed_truth <= (most or math.inf)
    return {"seeds": k, "ratio": ratio, "pilots": pilots, "power": power, "range_holds": holds,
            "seed_pilots": seed_pilots, "seeds_reach": reach / seed_pilots, "seeds_range_holds": holds_n / seed_pilots}


def table(pilots: int, seed_pilots: int, seed: int = 51, seeds=SEEDS, ratios=RATIOS) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [cell(rng, k, ratio, pilots, seed_pilots) for k in seeds for ratio in ratios]


def write(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: (f"{row[key]:.4f}" if isinstance(row[key], float) else row[key]) for key in COLUMNS})


def lines(rows: list[dict]) -> list[str]:
    """The table as printed: each promise beside what it reaches."""
    out = ["What the printed power figures reach (promised: power 80%, range holds 80%, seeds needed reach 80% "
           "power in every pilot):",
           "seeds  ratio   power (promised 80%)   range holds (80%)   seeds needed reach 80%   seeds range holds"]
    for row in rows:
        out.append(f"{row['seeds']:>5}  {row['ratio']:>5.0f}   {100 * row['power']:>19.1f}%   "
                   f"{100 * row['range_holds']:>16.1f}%   {100 * row['seeds_reach']:>21.1f}%   "
                   f"{100 * row['seeds_range_holds']:>16.1f}%")
    worst = min(rows, key=lambda r: r["power"])
    out.append(f"worst power {100 * worst['power']:.1f}% at {worst['seeds']} seeds, ratio {worst['ratio']:.0f}; "
               f"worst range {100 * min(r['range_holds'] for r in rows):.1f}%; worst seeds-needed reach "
               f"{100 * min(r['seeds_reach'] for r in rows):.1f}%")
    return out
