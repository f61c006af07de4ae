"""How spanft prints: a count with its noun in the right number, and a number the one way every place prints it
(the report's tables and verdict lines, ``headline.json`` and the closing summary of a ``dvc repro``).

- **Points** (a gain, an interval end, a score x 100): one decimal, rounded half away from zero after the float
  noise is taken off (``2.75`` and ``-2.75`` print ``+2.8`` and ``-2.8`` whatever their last bits), so an interval
  ``0 ± 2.75`` prints ``[-2.8, +2.8]``. A value that is not 0 never prints as ``0.0`` (``+0.03``, ``-0.004``), and
  0 prints ``0.0`` — never ``-0.0`` nor ``+0.0``. A gain within :data:`ZERO` of 0 is 0 (float noise); an interval
  end is 0 only when it is exactly 0 (the verdict reads its sign).
- **p-values** (:func:`p_round`): significant digits, never rounded onto or across 0.05.
- **headline.json** stores each number as it prints (:func:`stored`), so the summary that formats it again with
  :func:`signed` prints the same text as the verdict line.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

DASH = "—"
LEVEL = 0.05  # two-sided test level; the line a printed p-value never crosses
ZERO = 1e-9  # |value| below this is 0: float noise of a difference of equal numbers
MAX_DECIMALS = 6  # a smaller value that is not 0 prints in exponent form (``+6e-12``)
NOISE_DIGITS = 12  # significant digits kept before rounding: the float noise of an exact half goes


def _rounded(value: float, decimals: int) -> Decimal:
    """``value`` to ``decimals`` places, half away from zero, after dropping digits past :data:`NOISE_DIGITS`."""
    exact = Decimal(f"{value:.{NOISE_DIGITS}g}")
    return exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def points(value: float | None, sign: bool = False, zero: float = ZERO) -> str:
    """A number in points, one decimal (see the module's rules); ``sign``: a leading ``+`` on a positive value;
    ``zero``: below this magnitude the value is 0 (float noise)."""
    if value is None or math.isnan(value):
        return DASH
    if math.isinf(value):
        return ("+" if sign and value > 0 else "") + ("∞" if value > 0 else "-∞")
    if abs(value) <= zero:
        return "0.0"
    decimals = 1
    while _rounded(value, decimals) == 0 and decimals < MAX_DECIMALS:  # not 0: never printed as 0.0
        decimals += 1
    number = _rounded(value, decimals)
    text = f"{number:f}" if number != 0 else f"{value:.0e}"
    return f"+{text}" if sign and value > 0 else text


def signed(value: float | None) -> str:
    """A gain: ``+7.9``, ``-0.2``, ``+0.03``, and ``0.0`` for 0 up to float noise (:data:`ZERO`)."""
    return points(value, sign=True)


def end(value: float | None) -> str:
    """An interval end: as :func:`signed`, except that only an exact 0 prints ``0.0`` — the verdict reads the
    end's sign, so an end a float step above 0 prints above it (``+1e-17``)."""
    return points(value, sign=True, zero=0.0)


def interval(gain: float | None, low: float | None, high: float | None) -> str:
    """``+7.9 [+6.4, +9.5]``."""
    return f"{signed(gain)} [{end(low)}, {end(high)}]"


def stored(text: str) -> float | None:
    """A printed number back as a number (what ``headline.json`` holds: ``stored(end(low))``); None for a dash."""
    return None if text == DASH else float(text.replace("∞", "inf"))


def p_round(p: float, digits: int = 2) -> str:
    """``p`` to ``digits`` significant digits, except that rounding never moves it onto or across 0.05: 0.050016
    prints ``0.051``, 0.04996 ``0.049`` (an exact 0.05 prints 0.05)."""
    text = f"{p:.{digits}g}"
    shown = float(text)
    step = 10.0 ** (math.floor(math.log10(LEVEL)) - digits + 1)
    if p > LEVEL >= shown:
        return f"{LEVEL + step:.{digits}g}"
    if p < LEVEL <= shown:
        return f"{LEVEL - step:.{digits}g}"
    return text


def tied(a: float, b: float, relative: float = ZERO) -> bool:
    """``a`` and ``b`` equal up to float rounding: within ``relative`` of the larger magnitude (or of 1 near 0)."""
    return abs(a - b) <= relative * max(1.0, abs(a), abs(b))


def count_of(n: int, noun: str, plural: str | None = None) -> str:
    """``1 seed``, ``2 seeds``, ``0 seeds``; ``plural`` for a noun that does not take an s (``1 process``)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
