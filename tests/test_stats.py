"""McNemar's test (spanft.stats) against hand computations with scipy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom, chi2

from spanft.errors import SpanftError
from spanft.report.stats import (
    aligned_predictions,
    mcnemar_files,
    mcnemar_from_correct,
    mcnemar_test,
    read_prediction_table,
)


def paired(both: int, only_a: int, only_b: int, neither: int) -> tuple[np.ndarray, np.ndarray]:
    a = [True] * both + [True] * only_a + [False] * only_b + [False] * neither
    b = [True] * both + [False] * only_a + [True] * only_b + [False] * neither
    return np.array(a), np.array(b)


def hand_exact(b: int, c: int) -> float:
    return min(1.0, 2 * binom.cdf(min(b, c), b + c, 0.5))


def hand_chi2(b: int, c: int) -> tuple[float, float]:
    statistic = max(0, abs(b - c) - 1) ** 2 / (b + c)  # the correction never pushes |b - c| below 0
    return statistic, chi2.sf(statistic, 1)


def write_tsv(path, rows):
    path.write_text("idx\tgold\tpred\n" + "".join(f"{i}\t{g}\t{p}\n" for i, g, p in rows), encoding="utf-8")
    return path


def test_exact_binomial_below_25_discordant_pairs():
    a, b = paired(both=40, only_a=3, only_b=9, neither=8)
    result = mcnemar_from_correct(a, b)
    assert (result.n, result.both_correct, result.only_a_correct, result.only_b_correct, result.both_wrong) == (60, 40, 3, 9, 8)
    assert result.method == "exact"
    assert result.statistic == 3  # statsmodels reports min(b, c) for the exact test
    assert result.p_value == pytest.approx(hand_exact(3, 9), rel=1e-12)
    # by hand: 2 * sum_{k<=3} C(12, k) / 2^12 = 2 * 299 / 4096
    assert result.p_value == pytest.approx(2 * 299 / 4096, rel=1e-12)


def test_chi_square_with_continuity_correction_from_25_discordant_pairs():
    a, b = paired(both=100, only_a=10, only_b=20, neither=5)
    result = mcnemar_from_correct(a, b)
    statistic, p = hand_chi2(10, 20)
    assert result.method == "chi2"
    assert result.statistic == pytest.approx(statistic) == pytest.approx(81 / 30)
    assert result.p_value == pytest.approx(p, rel=1e-10)


def test_boundary_24_is_exact_and_25_is_chi2():
    assert mcnemar_from_correct(*paired(5, 12, 12, 5)).method == "exact"
    assert mcnemar_from_correct(*paired(5, 12, 13, 5)).method == "chi2"


@pytest.mark.parametrize("discordant", [25, 30, 200])
def test_equal_discordant_counts_give_statistic_0_and_p_1(discordant):
    """b = c: no evidence either way. statsmodels' corrected formula (|b - c| - 1)^2 / (b + c) would give
    1 / (b + c) and p < 1 (0.897 at b = c = 30)."""
    result = mcnemar_from_correct(*paired(10, discordant // 2, discordant - discordant // 2, 4))
    if discordant % 2 == 0:
        assert result.method == "chi2" and result.statistic == 0.0 and result.p_value == 1.0
    else:  # b = 12, c = 13: |b - c| - 1 = 0 as well
        assert result.statistic == 0.0 and result.p_value == 1.0
    exact = mcnemar_from_correct(*paired(10, 6, 6, 4))  # 12 discordant: the exact test, statistic min(b, c)
    assert exact.method == "exact" and exact.statistic == 6 and exact.p_value == 1.0


def test_no_discordant_pairs_gives_p_one():
    result = mcnemar_from_correct(*paired(7, 0, 0, 3))
    assert result.method == "exact"
    assert result.p_value == 1.0


def test_from_labels_compares_each_prediction_with_gold():
    gold = ["x", "y", "x", "y", "x"]
    result = mcnemar_test(gold, ["x", "y", "y", "x", "x"], ["x", "x", "x", "y", "y"])
    # A correct: 1,1,0,0,1; B correct: 1,0,1,1,0 -> both 1, only A 2, only B 2, neither 0
    assert (result.both_correct, result.only_a_correct, result.only_b_correct, result.both_wrong) == (1, 2, 2, 0)
    assert result.p_value == pytest.approx(hand_exact(2, 2))


def test_files_are_paired_by_idx_not_by_row_order(tmp_path):
    gold = {0: "a", 1: "b", 2: "a", 3: "b"}
    pred_a = {0: "a", 1: "a", 2: "a", 3: "b"}  # correct: 0, 2, 3
    pred_b = {0: "b", 1: "b", 2: "a", 3: "a"}  # correct: 1, 2
    file_a = write_tsv(tmp_path / "a.tsv", [(i, gold[i], pred_a[i]) for i in (0, 1, 2, 3)])
    file_b = write_tsv(tmp_path / "b.tsv", [(i, gold[i], pred_b[i]) for i in (3, 1, 0, 2)])
    result = mcnemar_files(file_a, file_b)
    assert (result.both_correct, result.only_a_correct, result.only_b_correct, result.both_wrong) == (1, 2, 1, 0)
    assert result.p_value == pytest.approx(hand_exact(2, 1))


def test_differing_idx_sets_name_both_files(tmp_path):
    file_a = write_tsv(tmp_path / "a.tsv", [(0, "a", "a"), (1, "b", "b")])
    file_b = write_tsv(tmp_path / "b.tsv", [(0, "a", "a"), (2, "b", "b")])
    with pytest.raises(SpanftError, match=r"a\.tsv and .*b\.tsv: idx sets differ") as info:
        mcnemar_files(file_a, file_b)
    assert "\n" not in str(info.value)


def test_differing_gold_or_unlabeled_rows_are_errors(tmp_path):
    file_a = write_tsv(tmp_path / "a.tsv", [(0, "a", "a"), (1, "b", "b")])
    file_b = write_tsv(tmp_path / "b.tsv", [(0, "a", "a"), (1, "a", "b")])
    with pytest.raises(SpanftError, match="gold labels differ at idx 1"):
        mcnemar_files(file_a, file_b)
    unlabeled = write_tsv(tmp_path / "u.tsv", [(0, "", "a")])
    with pytest.raises(SpanftError, match="no gold label"):
        mcnemar_files(unlabeled, unlabeled)


def test_bad_predictions_files(tmp_path):
    with pytest.raises(SpanftError, match="not found"):
        read_prediction_table(tmp_path / "none.tsv")
    (tmp_path / "h.tsv").write_text("id\tgold\tpred\n0\ta\ta\n", encoding="utf-8")
    with pytest.raises(SpanftError, match="header"):
        read_prediction_table(tmp_path / "h.tsv")
    write_tsv(tmp_path / "d.tsv", [(0, "a", "a"), (0, "a", "b")])
    with pytest.raises(SpanftError, match="idx 0 appears twice"):
        read_prediction_table(tmp_path / "d.tsv")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=120))
def test_property_matches_hand_computation(pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    result = mcnemar_from_correct(a, b)
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    assert result.n == len(pairs)
    assert result.both_correct + result.only_a_correct + result.only_b_correct + result.both_wrong == len(pairs)
    assert (result.only_a_correct, result.only_b_correct) == (only_a, only_b)
    if only_a + only_b < 25:
        assert result.method == "exact"
        assert result.p_value == pytest.approx(hand_exact(only_a, only_b), rel=1e-9, abs=1e-15)
    else:
        statistic, p = hand_chi2(only_a, only_b)
        assert result.method == "chi2"
        assert result.statistic == pytest.approx(statistic)
        assert result.p_value == pytest.approx(p, rel=1e-9, abs=1e-15)
    # swapping the classifiers swaps b and c and leaves the test unchanged
    swapped = mcnemar_from_correct(b, a)
    assert swapped.p_value == pytest.approx(result.p_value)
    assert 0.0 <= result.p_value <= 1.0


def test_aligned_predictions_pair_several_files_by_idx(tmp_path):
    gold = {0: "a", 1: "b", 2: "a"}
    files = [write_tsv(tmp_path / f"{n}.tsv", [(i, gold[i], f"{n}{i}") for i in order])
             for n, order in (("x", (0, 1, 2)), ("y", (2, 0, 1)), ("z", (1, 2, 0)))]
    aligned_gold, predictions = aligned_predictions(files)
    assert list(aligned_gold) == ["a", "b", "a"]
    assert [list(p) for p in predictions] == [["x0", "x1", "x2"], ["y0", "y1", "y2"], ["z0", "z1", "z2"]]
    odd = write_tsv(tmp_path / "odd.tsv", [(0, "a", "a"), (1, "a", "b"), (2, "a", "a")])
    with pytest.raises(SpanftError, match="gold labels differ at idx 1"):
        aligned_predictions([*files, odd])
