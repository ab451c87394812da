"""The diff's statistics in numpy: rank tests, the multiple-testing correction, the median's
interval, and the alignment that keeps an inserted op from shifting every later one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from accelview.model.compare import ranktests
from accelview.model.compare.align import ALIGN_MAX, align, by_rank, lcs
from accelview.model.compare.families import family
from accelview.model.compare.ranktests import _u_counts, benjamini_hochberg, mann_whitney, median_ci, sign_test


def test_mann_whitney_exact_for_small_samples():
    # Five against five, fully separated: one ordering of C(10, 5) = 252 each way.
    assert mann_whitney(np.arange(5), np.arange(5) + 10) == pytest.approx(2 / 252)
    assert mann_whitney(np.arange(5), np.arange(5)) == 1.0  # all tied in pairs: no evidence
    assert mann_whitney(np.array([]), np.arange(3)) == 1.0
    # The counts of U are a distribution: they add up to the number of orderings.
    assert sum(_u_counts(6, 4)) == math.comb(10, 4)


def test_mann_whitney_normal_approximation_agrees_with_the_exact_count(monkeypatch):
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 1, 20), rng.normal(0.8, 1, 20)
    exact = mann_whitney(a, b)  # 20 x 20 = 400 pairs: counted exactly
    monkeypatch.setattr(ranktests, "EXACT_MAX", 0)
    approx = mann_whitney(a, b)
    assert exact < 0.01 and approx < 0.01 and 0.67 < approx / exact < 1.5  # the tail is where they differ most


def test_mann_whitney_sees_a_shift_but_not_noise():
    rng = np.random.default_rng(0)
    base = rng.normal(100, 5, 40)
    assert mann_whitney(base, rng.normal(100, 5, 40)) > 0.05
    assert mann_whitney(base, rng.normal(110, 5, 40)) < 1e-6


def test_sign_test():
    assert sign_test(np.ones(10)) == pytest.approx(2 / 1024)
    assert sign_test(np.array([1, -1, 1, -1, 0])) == 1.0
    assert sign_test(np.zeros(3)) == 1.0
    assert sign_test(np.concatenate((np.ones(1200), -np.ones(800)))) < 1e-10  # the normal approximation


def test_benjamini_hochberg_matches_the_published_procedure():
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.5])
    # Sorted: 0.005, 0.01, 0.03, 0.04, 0.5 → × 5/rank: 0.025, 0.025, 0.05, 0.05, 0.5 (monotone from the top)
    assert benjamini_hochberg(p) == pytest.approx([0.025, 0.05, 0.05, 0.025, 0.5])
    assert len(benjamini_hochberg(np.array([]))) == 0


def test_median_interval_from_order_statistics():
    med, lo, hi = median_ci(np.arange(10.0))
    assert (med, lo, hi) == (4.5, 1.0, 8.0)  # x(2) and x(9) of 10: the 97.9% binomial interval
    assert median_ci(np.array([3.0, 1.0, 2.0])) == (2.0, 1.0, 3.0)  # too few for 95%: the range
    med, lo, hi = median_ci(np.arange(100.0))
    assert lo < med < hi and hi - lo < 25


def test_inserted_op_is_an_insertion_not_a_shift():
    a = np.array([1, 2, 3, 4, 5, 2, 3])
    b = np.array([1, 2, 9, 3, 4, 5, 2, 3])  # 9 inserted after the first 2
    ia, ib = align(a, b)
    assert ia.tolist() == list(range(7))
    assert ib.tolist() == [0, 1, 3, 4, 5, 6, 7]


def test_renamed_op_is_left_unmatched_and_the_rest_stays_paired():
    a = np.array([1, 2, 3, 4, 3])
    b = np.array([1, 2, 7, 4, 3])  # the first 3 renamed 7
    ia, ib = align(a, b)
    assert list(zip(ia.tolist(), ib.tolist(), strict=True)) == [(0, 0), (1, 1), (3, 3), (4, 4)]


def test_long_steps_match_by_occurrence():
    a = np.tile(np.arange(10), ALIGN_MAX // 5)
    b = np.insert(a, 5, 99)
    ia, ib = align(a, b)  # too long to align: the k-th op of a family pairs with its k-th
    assert len(ia) == len(a) and (a[ia] == b[ib]).all()
    assert by_rank(np.array([5, 5, 6]), np.array([6, 5]))[0].tolist() == [0, 2]


def test_families_take_numbers_out_of_names_but_not_out_of_words():
    assert family("decode 12") == family("decode 3") == "decode #"
    assert family("prefill.layers.31.qkv_proj") == "prefill.layers.#.qkv_proj"
    assert family("ProfilerStep#1009") == "ProfilerStep#"
    assert family("H2D 436224256 B") == "H2D # B"
    assert family("sm80_xmma_gemm_fp8") == "sm80_xmma_gemm_fp8"


def test_the_alignment_is_a_longest_common_subsequence():
    rng = np.random.default_rng(5)
    for _ in range(20):
        a, b = rng.integers(0, 4, rng.integers(1, 30)), rng.integers(0, 4, rng.integers(1, 30))
        best = np.zeros((len(a) + 1, len(b) + 1), int)  # the textbook table, cell by cell
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                best[i, j] = best[i - 1, j - 1] + 1 if a[i - 1] == b[j - 1] else max(best[i - 1, j], best[i, j - 1])
        ia, ib = lcs(a, b)
        assert len(ia) == best[-1, -1] and (a[ia] == b[ib]).all()
        assert (np.diff(ia) > 0).all() and (np.diff(ib) > 0).all()
