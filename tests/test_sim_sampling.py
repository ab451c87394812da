"""Sampled counters from intervals: the window search agrees with a binary search everywhere."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.capture.sim.device.window_sums import (
    _count_upto,
    cumulative,
    serial_window_sums,
    window_edges,
    window_sums,
)


@pytest.mark.parametrize("t0, period", [(1e9, 10_000.0), (1_000_123_457.0, 3.0), (0.0, 0.1)])
def test_counting_by_window_equals_searchsorted_on_edges_and_between(t0: float, period: float) -> None:
    edges = window_edges(t0, t0 + 5000 * period, period)
    rng = np.random.default_rng(0)
    inside = t0 + rng.uniform(-3, 5003, 4000) * period
    s = np.sort(np.concatenate((inside, edges[::7], np.nextafter(edges[::11], -np.inf), [t0 - 1e6, t0 + 1e9])))
    assert np.array_equal(_count_upto(s, edges), np.searchsorted(s, edges, side="right"))


def test_infinite_and_missing_times_count_as_searchsorted_counts_them() -> None:
    edges = window_edges(0.0, 100.0, 10.0)
    for s in ([-np.inf, 5.0, np.inf], [3.0, 20.0, np.nan], [-np.inf, np.nan, np.nan]):
        assert np.array_equal(_count_upto(np.array(s), edges), np.searchsorted(np.array(s), edges, side="right"))


def test_uneven_or_unsorted_times_fall_back_to_searchsorted() -> None:
    s = np.array([1.0, 2.0, 5.0, 9.0])
    for at in (np.array([0.0, 1.0, 2.5, 9.0, 30.0]), np.array([9.0, 1.0, 5.0, 2.0])):
        assert np.array_equal(_count_upto(s, at), np.searchsorted(s, at, side="right"))


def test_serial_intervals_sum_to_their_amounts_per_window() -> None:
    edges = window_edges(0.0, 100.0, 10.0)
    s, e, a = np.array([5.0, 20.0, 45.0]), np.array([15.0, 40.0, 46.0]), np.array([10.0, 4.0, 1.0])
    sums = window_sums(s, e, a, edges)
    assert sums.sum() == pytest.approx(15.0)
    assert sums[:5].tolist() == pytest.approx([5.0, 5.0, 2.0, 2.0, 1.0])
    assert np.array_equal(cumulative(s, e, a, edges)[[0, -1]], [0.0, 15.0])


def test_several_amounts_over_shared_intervals_equal_each_summed_alone_bit_for_bit() -> None:
    """serial_window_sums: reads and writes over one set of disjoint intervals, some moving only
    one of them, give exactly what window_sums gives each over its own intervals; overlapping
    or zero-length intervals are declined."""
    rng = np.random.default_rng(4)
    edges = window_edges(1e9, 1e9 + 4e6, 10_000.0)
    for n in [3, 8, 20, *rng.integers(25, 3000, 17).tolist()]:  # few intervals among many windows, and many
        gaps = rng.exponential(800.0, n) * (rng.random(n) < 0.7)
        lengths = rng.exponential(1500.0, n) + 1.0
        starts = np.cumsum(np.concatenate(([1e9 - 5e4], gaps[1:] + lengths[:-1])))  # touching where no gap
        ends = starts + lengths
        order = rng.permutation(n)  # given in any order
        starts, ends = starts[order], ends[order]
        reads = rng.exponential(1e6, n) * (rng.random(n) < 0.8)
        writes = rng.exponential(1e5, n) * (rng.random(n) < 0.6)
        outs = [np.full(len(edges) - 1, np.nan), np.full(len(edges) - 1, np.nan)]
        assert serial_window_sums(starts, ends, [reads, writes], edges, outs)
        for got, amount in zip(outs, (reads, writes), strict=True):
            mine = amount != 0
            assert np.array_equal(got, window_sums(starts[mine], ends[mine], amount[mine], edges))
    out = [np.zeros(len(edges) - 1)]
    assert not serial_window_sums(np.array([1e9, 1e9 + 5.0]), np.array([1e9 + 10.0, 1e9 + 20.0]), [np.ones(2)],
                                  edges, out)  # overlapping
    assert not serial_window_sums(np.array([1e9]), np.array([1e9]), [np.ones(1)], edges, out)  # a point
    assert not out[0].any()
