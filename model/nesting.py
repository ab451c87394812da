"""Nesting depth of slices, computed once here so that importers and producers never do.

The invariant the rest of the model relies on: within one (track, depth) the slices do not
overlap. Properly nested slices (a call inside a call) get their stack depth; a slice that
overlaps another without nesting in it (async work on one lane) is put one level deeper.
"""

from __future__ import annotations

import numpy as np

MAX_DEPTH = 0xFFFF  # depths are uint16 and this value means "not computed yet": real ones stay below it


def slice_ends(start_ns: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
    """End timestamps (start + duration) as int64."""
    return start_ns.astype(np.int64, copy=False) + dur_ns.astype(np.int64, copy=False)


def start_order(group: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """``np.lexsort((-dur, start, group))`` (by group, then start, longest first, then input
    order), faster: one stable sort of a combined integer key where it fits in 62 bits, then
    the longest-first order fixed where starts tie."""
    if not len(start):
        return np.empty(0, dtype=np.intp)
    g, s = _offsets(group), _offsets(start)
    if g is None or s is None or int(g.max()).bit_length() + int(s.max()).bit_length() > 62:
        return np.lexsort((-dur, start, group))
    key = (g << int(s.max()).bit_length()) | s
    order = np.argsort(key, kind="stable")
    k = key[order]
    tie = k[1:] == k[:-1]
    if tie.any():
        near = np.zeros(len(k), dtype=bool)
        near[1:] = tie
        near[:-1] |= tie
        at = np.flatnonzero(near)
        sub = order[at]
        order[at] = sub[np.lexsort((-dur[sub], k[at]))]
    return order


def run_order(track: np.ndarray, depth: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``np.lexsort((start, depth, track))`` (the slices table's order), faster: one stable sort
    of a combined integer key where the three fit in 62 bits together."""
    if not len(start):
        return np.empty(0, dtype=np.intp)
    cols = [_offsets(c) for c in (track, depth, start)]
    bits = [int(c.max()).bit_length() if c is not None else 63 for c in cols]
    if sum(bits) > 62:
        return np.lexsort((start, depth, track))
    key = (cols[0] << (bits[1] + bits[2])) | (cols[1] << bits[2]) | cols[2]
    return np.argsort(key, kind="stable")


def _offsets(values: np.ndarray) -> np.ndarray | None:
    """``values - min`` as int64, or None when the span does not fit in 62 bits."""
    lo, hi = int(values.min()), int(values.max())
    return values.astype(np.int64) - lo if hi - lo < 2**62 else None


def assign_depths(track: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray) -> np.ndarray:
    """Return a uint16 depth per slice (in the input order) so that slices of one track and
    depth never overlap. Tracks without overlaps are handled vectorised; others by a stack."""
    n = len(track)
    depth = np.zeros(n, dtype=np.uint16)
    if n == 0:
        return depth
    order = start_order(track, start_ns, dur_ns)
    t = track[order]
    s = start_ns[order].astype(np.int64, copy=False)
    e = slice_ends(s, dur_ns[order])
    bounds = np.flatnonzero(np.diff(t)) + 1
    starts = np.concatenate(([0], bounds))
    stops = np.concatenate((bounds, [n]))
    # A track needs depths only when some slice starts before an earlier one ended; properly
    # nested tracks get them vectorised, others (partial overlaps) from a stack.
    for a, b in zip(starts.tolist(), stops.tolist(), strict=True):
        if b - a > 1 and (s[a + 1 : b] < np.maximum.accumulate(e[a : b - 1])).any():
            d = _nested_depths(s[a:b], e[a:b])
            if d is None:
                d = walked_depths(s[a:b], e[a:b])
            if d is None:
                d = stack_depths(s[a:b].tolist(), e[a:b].tolist())
            depth[order[a:b]] = d
    return depth


def ended_before(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """For slices sorted by (start, -duration): how many earlier ones had ended by each one's
    start. All slices ending by s[i], less the zero-length ones at s[i] that sort at or after i
    (zero-length slices sort last among equal starts)."""
    n = len(s)
    idx = np.arange(n)
    ended = np.searchsorted(np.sort(e), s, "right")
    zero = e == s
    # Where each one's run of equal starts begins and ends (s is sorted: no search needed).
    cuts = np.flatnonzero(s[1:] != s[:-1]) + 1
    firsts, lasts = np.concatenate(([0], cuts)), np.concatenate((cuts, [n]))
    block_start, block_end = np.repeat(firsts, lasts - firsts), np.repeat(lasts, lasts - firsts)
    zeros_before = np.concatenate(([0], np.cumsum(zero)))
    zeros_from_i = zeros_before[block_end] - zeros_before[np.where(zero, idx, block_start)]
    return ended - zeros_from_i


def _nested_depths(s: np.ndarray, e: np.ndarray) -> np.ndarray | None:
    """Depths of one track's slices sorted by (start, -duration), if they nest properly: a
    slice's depth is the number of earlier slices still open at its start. None when the
    result would put overlapping slices at one depth (partial overlaps: use the stack)."""
    depth = np.arange(len(s)) - ended_before(s, e)
    if depth.min() < 0 or depth.max() > 65535:
        return None
    o = np.argsort(depth.astype(np.uint16), kind="stable")  # by (depth, start): s is sorted already
    same = depth[o][1:] == depth[o][:-1]
    if (same & (s[o][1:] < e[o][:-1])).any():
        return None
    return depth.astype(np.uint16)


def walked_depths(s: np.ndarray, e: np.ndarray, max_rounds: int = 64, max_work: int = 16) -> np.ndarray | None:
    """``stack_depths`` (from an empty stack) of slices sorted by (start, -duration), vectorised:
    None when it takes more than ``max_rounds`` rounds or reads more than ``max_work`` times
    the slices' ends (long chains of partial overlaps: the loop is then faster)."""
    # The walk pops slice j at the first later slice i whose start is at or past the end of every
    # slice from j to i (those above j leave first: all of them must have ended, j too). That
    # index is found for all slices at once by raising a bound: the first start at or past
    # max(e[j:bound]), until it stops moving. A slice's depth is then the number of earlier
    # slices not yet popped: its index less the slices popped by it.
    n = len(s)
    index = np.arange(n)
    popped_at = np.maximum(np.searchsorted(s, e, "left"), index + 1)
    moving = index[popped_at < n]  # a slice never popped keeps n
    budget = max_work * n
    for _ in range(max_rounds):
        if not len(moving):
            break
        bound = popped_at[moving]
        budget -= int((bound - moving).sum())
        if budget < 0:
            return None
        ranges = np.empty(2 * len(moving), np.intp)  # [j, bound) of each, at even positions
        ranges[0::2], ranges[1::2] = moving, bound
        reach = np.maximum.reduceat(e, ranges)[0::2]  # the latest end among slices j..bound-1
        later = np.maximum(np.searchsorted(s, reach, "left"), moving + 1)
        popped_at[moving] = later
        moving = moving[(later != bound) & (later < n)]
    else:
        return None
    popped_by = np.cumsum(np.bincount(popped_at, minlength=n + 1))[:n]  # slices popped at or before each
    return np.minimum(index - popped_by, 65535).astype(np.uint16)


def stack_depths(starts: list[int], ends: list[int], stack: list[int] | None = None) -> np.ndarray:
    """Depths by a stack walk over slices sorted by (start, -duration); ``stack`` holds the end
    timestamps of slices still open before the first (innermost last) and is updated."""
    depths: list[int] = []  # a list, not an array: item assignment into numpy is slow in a loop
    stack = [] if stack is None else stack
    pop, push, add = stack.pop, stack.append, depths.append
    for s, e in zip(starts, ends, strict=True):
        while stack and stack[-1] <= s:
            pop()
        add(len(stack))
        push(e)
    return np.minimum(np.asarray(depths, dtype=np.int64), 65535).astype(np.uint16)
