"""Sampled counters from intervals: exact per-window sums, vectorised.

A quantity moved uniformly over ``[start, end)`` (bytes of an op, busy time of a unit)
contributes to each sampling window in proportion to its overlap. With ``F(t)`` the running
total up to ``t`` (piecewise linear, built from the sorted rate changes), a window's value is
``F(b) - F(a)``, so the windows add up exactly to the total moved.
"""

from __future__ import annotations

import numpy as np


def cumulative(starts: np.ndarray, ends: np.ndarray, amounts: np.ndarray, at: np.ndarray) -> np.ndarray:
    """F(at): the total of ``amounts`` moved by each time in ``at``, each spread uniformly
    over its interval (a zero-length interval moves its amount at its start)."""
    starts = np.asarray(starts, dtype=np.float64)
    ends = np.maximum(np.asarray(ends, dtype=np.float64), starts)
    amounts = np.asarray(amounts, dtype=np.float64)
    at = np.asarray(at, dtype=np.float64)
    if len(starts) == 0:
        return np.zeros(len(at))
    point = ends <= starts
    if not point.any():
        order = _serial_order(starts, ends)
        if order is not None:  # one unit's busy time, serial ops: no sort of 2n changes needed
            s, a = starts[order], amounts[order]
            done = np.concatenate(([0.0], np.cumsum(a)))
            i = _count_upto(s, at) - 1
            j = np.maximum(i, 0)
            part = at - s[j]
            part /= (ends[order] - s)[j]
            np.clip(part, 0.0, 1.0, out=part)
            part *= a[j]
            part += done[j]
            return np.where(i >= 0, part, 0.0)
    out = np.zeros(len(at))
    if point.any():  # instantaneous amounts: a step at their time
        order = np.argsort(starts[point], kind="stable")
        t, a = starts[point][order], np.cumsum(amounts[point][order])
        idx = np.searchsorted(t, at, side="right")
        out += np.where(idx > 0, a[np.maximum(idx - 1, 0)], 0.0)
    span = ~point
    if span.any():
        s, e, a = starts[span], ends[span], amounts[span]
        rate = a / (e - s)
        times = np.concatenate((s, e))
        deltas = np.concatenate((rate, -rate))
        order = np.argsort(times, kind="stable")
        times, deltas = times[order], deltas[order]
        level = np.cumsum(deltas)  # rate in force after each change point
        level[np.abs(level) < 1e-12 * np.abs(rate).max()] = 0.0
        total = np.concatenate(([0.0], np.cumsum(level[:-1] * np.diff(times))))
        idx = np.searchsorted(times, at, side="right") - 1
        valid = idx >= 0
        i = np.maximum(idx, 0)
        out += np.where(valid, total[i] + level[i] * (at - times[i]), 0.0)
    return out


def serial_window_sums(starts: np.ndarray, ends: np.ndarray, amounts: list[np.ndarray], edges: np.ndarray,
                       outs: list[np.ndarray]) -> bool:
    """:func:`window_sums` of several amounts moved over the same intervals into ``outs``,
    sharing the work that depends on the intervals alone (which window each edge falls in,
    how far into its interval). Only for disjoint intervals of positive length: returns False,
    writing nothing, otherwise. Each result equals ``window_sums`` of its amount alone over the
    intervals where it is not zero, bit for bit, when those are disjoint too: an interval
    moving nothing only repeats the running total."""
    s = np.asarray(starts, dtype=np.float64)
    e = np.maximum(np.asarray(ends, dtype=np.float64), s)
    if len(s) == 0 or not (e > s).all():
        return False
    order = _serial_order(s, e)
    if order is None:
        return False
    n = len(edges) - 1
    windows = _reached(s, e, n, edges)  # few intervals among many windows: the totals at their edges only
    if windows is not None:
        at = np.concatenate((windows, windows + 1))
        at.sort()
        at = at[np.concatenate(([True], at[1:] != at[:-1]))]
        points = edges[at]
    else:
        points = edges
    s = s[order]
    i = _count_upto(s, points) - 1
    j = np.maximum(i, 0)
    frac = points - s[j]
    frac /= (e[order] - s)[j]
    np.clip(frac, 0.0, 1.0, out=frac)
    before = int(np.searchsorted(i, 0))  # points before the first interval: a total of 0 (i never decreases)
    total, picked = np.empty(len(points)), np.empty(len(points))
    for amount, out in zip(amounts, outs, strict=True):
        a = np.asarray(amount, dtype=np.float64)[order]
        done = np.concatenate(([0.0], np.cumsum(a)))
        np.take(a, j, out=picked)
        np.multiply(frac, picked, out=total)  # as cumulative() makes it, step by step
        np.take(done, j, out=picked)
        total += picked
        total[:before] = 0.0
        if windows is None:
            np.subtract(total[1:], total[:-1], out=out)
        else:
            out.fill(0.0)
            out[windows] = total[np.searchsorted(at, windows + 1)] - total[np.searchsorted(at, windows)]
    return True


def _count_upto(s: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``np.searchsorted(s, at, side="right")`` for sorted ``s``: how many of ``s`` are at or
    before each time in ``at``. Where ``at`` is sorted and evenly spaced (window edges, the
    usual case) each item of ``s`` finds its window by arithmetic (checked against ``at``) and
    the counts come from a histogram: no binary search per time."""
    n = len(at)
    # s is sorted: a NaN in it is last (and would have no window)
    if n > 2 and len(s) and not np.isnan(s[-1]) and at[-1] > at[0] and np.all(at[1:] >= at[:-1]):
        w = np.ceil((s - at[0]) / ((at[-1] - at[0]) / (n - 1)))
        np.clip(w, 0, n, out=w)
        place = w.astype(np.int64)  # where s would go in at, if rounding did not move it by one
        place -= ((place > 0) & (at[np.maximum(place - 1, 0)] >= s)).astype(np.int64)
        place += ((place < n) & (at[np.minimum(place, n - 1)] < s)).astype(np.int64)
        ok = (place == 0) | (at[np.maximum(place - 1, 0)] < s)
        ok &= (place == n) | (at[np.minimum(place, n - 1)] >= s)
        if ok.all():  # at[place - 1] < s <= at[place]: s counts from at[place] on
            return np.cumsum(np.bincount(place, minlength=n + 1)[:n])
    return np.searchsorted(s, at, side="right")


def _serial_order(starts: np.ndarray, ends: np.ndarray) -> np.ndarray | slice | None:
    """The intervals' order by start (a slice when they are in order already), or None when
    some overlap."""
    if len(starts) < 2:
        return slice(None)
    if np.all(starts[1:] >= starts[:-1]):
        return slice(None) if np.all(ends[:-1] <= starts[1:]) else None
    order = np.argsort(starts, kind="stable")
    return order if np.all(ends[order][:-1] <= starts[order][1:]) else None


def window_sums(starts: np.ndarray, ends: np.ndarray, amounts: np.ndarray, edges: np.ndarray,
                out: np.ndarray | None = None) -> np.ndarray:
    """Per-window totals for windows ``[edges[i], edges[i+1])`` (written into ``out``, if given,
    and returned). A few intervals among many windows (the copies of a run sampled every
    10 us) are summed over the windows they reach only: elsewhere the running total is flat and
    the difference exactly 0."""
    n = len(edges) - 1
    if out is None:
        out = np.empty(n)
    windows = _reached(starts, ends, n, edges)
    if windows is None:
        total = cumulative(starts, ends, amounts, edges)
        return np.subtract(total[1:], total[:-1], out=out)
    at = np.concatenate((windows, windows + 1))
    at.sort()
    at = at[np.concatenate(([True], at[1:] != at[:-1]))]  # the edges of those windows, each once
    total = cumulative(starts, ends, amounts, edges[at])
    out.fill(0.0)
    out[windows] = total[np.searchsorted(at, windows + 1)] - total[np.searchsorted(at, windows)]
    return out


def _reached(starts: np.ndarray, ends: np.ndarray, n: int, edges: np.ndarray) -> np.ndarray | None:
    """The windows (sorted, each once) that disjoint intervals of positive length touch, with
    one window of margin either side; None when that is not a small part of the ``n`` windows
    or the intervals are not of that kind."""
    if not 0 < 16 * len(starts) < n:
        return None
    s = np.asarray(starts, dtype=np.float64)
    e = np.maximum(np.asarray(ends, dtype=np.float64), s)
    if not (e > s).all() or _serial_order(s, e) is None:
        return None
    lo = np.clip(np.searchsorted(edges, s, side="right") - 2, 0, n - 1)
    hi = np.clip(np.searchsorted(edges, e, side="left") + 1, 0, n - 1)
    count = hi - lo + 1
    total = int(count.sum())
    if 4 * total > n:
        return None
    first = np.repeat(lo - np.concatenate(([0], np.cumsum(count)[:-1])), count)
    windows = first + np.arange(total)
    windows.sort()
    return windows[np.concatenate(([True], windows[1:] != windows[:-1]))]


def level_at(ups: np.ndarray, downs: np.ndarray, at: np.ndarray) -> np.ndarray:
    """How many items have arrived (``ups``) and not left (``downs``) at each time in ``at``."""
    ups, downs = np.sort(np.asarray(ups)), np.sort(np.asarray(downs))
    return _count_upto(ups, at) - _count_upto(downs, at)


def window_edges(t0: float, t1: float, period: float) -> np.ndarray:
    """Window boundaries from ``t0`` in steps of ``period`` covering up to ``t1``."""
    n = max(1, int(np.ceil((t1 - t0) / period)))
    return t0 + period * np.arange(n + 1, dtype=np.float64)
