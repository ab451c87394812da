"""Interval arithmetic on numpy arrays: unions, clipping, intersections, gaps."""

from __future__ import annotations

import numpy as np


def union(starts: np.ndarray, ends: np.ndarray, presorted: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals [start, end) into sorted, disjoint ones (``presorted``: already by start)."""
    if len(starts) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if presorted:
        s, e = starts.astype(np.int64, copy=False), ends.astype(np.int64, copy=False)
    else:
        o = np.argsort(starts, kind="stable")
        s, e = starts[o].astype(np.int64), ends[o].astype(np.int64)
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.concatenate((first[1:], [len(s)])) - 1
    return s[first], reach[last]


def clip(starts: np.ndarray, ends: np.ndarray, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
    """Intervals cut to [t0, t1); empty ones dropped."""
    s, e = np.maximum(starts, t0), np.minimum(ends, t1)
    keep = e > s
    return s[keep], e[keep]


def total(starts: np.ndarray, ends: np.ndarray) -> int:
    """Summed length of disjoint intervals."""
    return int((ends - starts).sum())


def intersection(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Intersection of two sets of sorted, disjoint intervals."""
    (s1, e1), (s2, e2) = a, b
    if len(s1) == 0 or len(s2) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # Every intersection piece starts at a start of one set that lies inside an interval of the other.
    pieces_s, pieces_e = [], []
    for (sa, ea), (sb, eb) in (((s1, e1), (s2, e2)), ((s2, e2), (s1, e1))):
        i = np.searchsorted(sb, sa, "right") - 1
        ok = (i >= 0) & (sa < eb[np.maximum(i, 0)])
        # ties (equal starts) would be counted twice: keep them from the first set only
        if sa is s2:
            ok &= ~np.isin(sa, s1)
        pieces_s.append(sa[ok])
        pieces_e.append(np.minimum(ea[ok], eb[i[ok]]))
    s, e = np.concatenate(pieces_s), np.concatenate(pieces_e)
    o = np.argsort(s, kind="stable")
    return s[o], e[o]


def gaps(starts: np.ndarray, ends: np.ndarray, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
    """The parts of [t0, t1) not covered by the sorted, disjoint intervals."""
    s, e = clip(starts, ends, t0, t1)
    gs = np.concatenate(([t0], e))
    ge = np.concatenate((s, [t1]))
    keep = ge > gs
    return gs[keep], ge[keep]
