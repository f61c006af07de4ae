"""Every printed number at the place it prints (issue 51): the verdict line, Table 2's cells, headline.json and
the closing summary, each against an independent computation (scipy's Welch test, decimal arithmetic by hand)."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats

from spanft.data.headline import summary_gains
from spanft.english import end, signed
from spanft.report.cells import bootstrap_p_cell, ci_cell, p_value_cell, pct
from spanft.report.headline import headline
from spanft.report.seedtest import seed_test
from spanft.report.verdict import NO_SPREAD, Verdict
from spanft.report.verdict import test_name as row_test_name


def _welch_at_p(p: float, base=(0.70, 0.72, 0.75), b_seeds=(1, 2, 3)):
    """A real seed test whose Welch p-value is ``p`` (to 1e-12), found by shifting one arm."""
    def p_at(shift: float) -> float:
        return stats.ttest_ind(np.add(base, shift), base, equal_var=False).pvalue - p

    shift = optimize.brentq(p_at, 0.0, 1.0, xtol=1e-15)
    return seed_test(base, [s + shift for s in base], [1, 2, 3], list(b_seeds), 1000)


def test_p_just_above_005_prints_above_it_in_the_verdict_line_and_table2():
    result = _welch_at_p(0.050016)
    assert result.p_value == pytest.approx(0.050016, abs=1e-9)
    line = Verdict(1, "tiny", "SF − baseline", "x", result, 3, 5.0, "test").line()
    assert "p = 0.051" in line and "p = 0.05," not in line and "p = 0.05)" not in line
    assert p_value_cell(result.p_value) == "0.0501" and bootstrap_p_cell(result) == "0.0501"
    below = _welch_at_p(0.04996)
    assert "p = 0.049" in Verdict(1, "t", "SF − baseline", "x", below, 3, 5.0, "test").line()
    assert p_value_cell(below.p_value) == "0.0499"


def test_an_interval_of_plus_minus_2_75_prints_symmetric_in_table2_and_the_line():
    """A gain of 0 whose half-width is 2.75 points: both ends round alike, half away from zero."""
    base = [0.70, 0.71, 0.72]
    result = seed_test(base, base[::-1], [1, 2, 3], [1, 2, 3], 1000)  # gain 0 up to float noise
    scale = 0.0275 / result.half_width
    result = seed_test([v * scale for v in base], [v * scale for v in base[::-1]], [1, 2, 3], [1, 2, 3], 1000)
    assert 100 * result.high == pytest.approx(2.75, abs=1e-12)
    assert ci_cell(result).endswith("[-2.8, +2.8]")
    assert "95% CI [-2.8, +2.8]" in Verdict(1, "t", "SF − baseline", "x", result, 3, 5.0, "test").line()


@given(st.decimals(-60, 60, places=2, allow_nan=False, allow_infinity=False))
def test_a_printed_number_is_its_value_rounded_half_away_from_zero(value):
    """Against decimal arithmetic by hand: the value with float noise of either sign rounds as its exact
    decimal does, and a negative value prints as the mirror of its positive."""
    exact = float(value)
    for noisy in (exact, math.nextafter(exact, math.inf), math.nextafter(exact, -math.inf)):
        text = signed(noisy)
        tenths = int((abs(value) * 10 + Decimal("0.5")).to_integral_value(rounding="ROUND_FLOOR"))
        if value == 0:
            assert text == "0.0"
        elif tenths:
            assert text == f"{'+' if value > 0 else '-'}{tenths // 10}.{tenths % 10}"
        else:
            assert float(text) == pytest.approx(exact, rel=0.5) and float(text) != 0
    assert signed(-exact).lstrip("-+") == signed(exact).lstrip("-+")


def test_zero_never_prints_signed_or_negative():
    for value in (0.0, -0.0, 1e-17, -1e-17):
        assert signed(value) == "0.0"  # a gain within float noise of 0
    assert end(0.0) == end(-0.0) == "0.0"
    assert pct(-0.0) == "0.0" and pct(-1e-6) != "-0.0"
    assert end(0.03) == "+0.03" and end(-0.004) == "-0.004"  # never 0.0 for an end that is not 0


def test_seeds_a_float_step_apart_are_tied_and_the_line_names_no_test():
    """Per-seed averages equal in exact arithmetic, one float step apart: no spread, no interval, no test."""
    a = [0.1 + 0.2, 0.3, 0.1 + 0.2]  # 0.30000000000000004, 0.3, ...
    b = [0.2 + 0.1 + 0.01, 0.31, 0.31]
    assert a[0] != a[1] and b[0] != b[1]  # a float step apart
    result = seed_test(a, b, [1, 2, 3], [1, 2, 3], 1000)
    assert result.no_spread and math.isnan(result.p_value)
    verdict = Verdict(1, "tiny", "SF − baseline", "x", result, 3, -1.0, "test")
    assert verdict.word == NO_SPREAD
    line = verdict.line()
    assert "Welch" not in line and "p =" not in line and "CI" not in line and "no test" in line
    assert "Welch" not in row_test_name(result)


def _verdict(table: int, backbone: str, gain: float, low: float, high: float, versus: str = "baseline",
             comparison: str = "SF − baseline") -> Verdict:
    result = SimpleNamespace(gain=gain / 100, low=low / 100, high=high / 100, method_inference=True,
                             no_spread=False, p_value=0.01, p_at_floor=False, resamples=None)
    return Verdict(table, backbone, comparison, "x", result, 3, 1.0, "test", backbone=backbone, versus=versus)


def test_headline_keeps_two_backbones_and_ends_near_0_as_printed():
    tables = [SimpleNamespace(number=1, verdicts=[_verdict(1, "tiny", 1.0, 0.03, 2.0),
                                                  _verdict(1, "tiny-bpe", -0.01, -0.04, 0.0)]),
              SimpleNamespace(number=7, verdicts=[_verdict(7, "tiny", 2.2, -0.2, 4.7, "cnn-max", "CNN-CNN − CNN-Max"),
                                                  _verdict(7, "tiny", 2.2, -0.2, 4.7, "cnn-max", "CNN-CNN − CNN-Max")])]
    tree = json.loads(json.dumps(headline(tables, synthetic=False), ensure_ascii=False))
    assert tree["data"] == "real"
    assert tree["t1"]["tiny"] == {"gain": 1.0, "low": 0.03, "high": 2.0, "what": "SF − baseline"}
    assert tree["t1"]["tiny-bpe"] == {"gain": -0.01, "low": -0.04, "high": 0.0, "what": "SF − baseline"}
    assert sorted(tree["t7"]) == ["1", "2"]  # two verdicts under one key: numbered, never merged
    head, gains = summary_gains(tree)
    assert gains[:2] == ["t1.tiny SF − baseline +1.0 [+0.03, +2.0]", "t1.tiny-bpe SF − baseline -0.01 [-0.04, 0.0]"]
    assert gains[2:] == [f"t7.{n} CNN-CNN − CNN-Max +2.2 [-0.2, +4.7]" for n in (1, 2)]
    assert "real task data" in head


def test_headline_of_a_tied_comparison_keeps_its_gain_and_says_why():
    result = seed_test([0.7, 0.7, 0.7], [0.8, 0.8, 0.8], [1, 2, 3], [1, 2, 3], 1000)
    table = SimpleNamespace(number=5, verdicts=[Verdict(5, "tiny", "SF − baseline", "x", result, 3, 1.0, "t")])
    tree = headline([table], synthetic=True)
    assert tree["t5"] == {"gain": 10.0, "low": None, "high": None, "what": "SF − baseline", "note": NO_SPREAD}
    head, gains = summary_gains(tree)
    assert gains == [f"t5 SF − baseline +10.0 ({NO_SPREAD})"] and "synthetic data" in head
