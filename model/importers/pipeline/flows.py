"""Bind Chrome flow events (s/t/f) to slices, and link launches to device work by correlation.

A flow event names a point (thread, timestamp); it belongs to a slice of that thread. ``s``
and ``t``, and ``f`` with ``"bp": "e"``, bind to the enclosing slice (the deepest one that
contains the timestamp); ``f`` without it binds to the next slice that starts at or after the
timestamp. Steps of one flow share (category, id) and chain in time order: s → t … → f.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ...nesting import start_order

WALK_LIMIT = 64  # slices stepped back over before a vectorised search for the enclosing one


class SliceIndex:
    """Slices sorted by (thread, start, longest first) for point look-ups; only those of
    ``threads`` when given (the threads that will be asked about)."""

    def __init__(self, thread: np.ndarray, start: np.ndarray, dur: np.ndarray, ids: np.ndarray,
                 threads: np.ndarray | None = None) -> None:
        order = start_order(thread, start, dur) if threads is None else _subset_order(thread, start, dur, threads)
        # int64: numpy would convert an int32 array to search it for a Python int (tens of µs a call)
        self.thread, self.start = thread[order].astype(np.int64), start[order]
        self.end = self.start + dur[order]
        self.dur = dur[order]
        self.ids = ids[order]
        self.by_order = ids

    def enclosing(self, thread: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Provisional ids of the deepest slice of each ``thread[i]`` containing ``ts[i]`` (-1: none)."""
        lo, _, j = self._positions(thread, ts, "right")
        j -= 1  # the last slice starting at or before ts
        found = np.full(len(j), -1, np.int64)
        s, e, d = self.start, self.end, self.dur
        todo = np.flatnonzero(j >= lo)
        for _ in range(WALK_LIMIT):  # step back over slices that ended before ts, all queries at once
            if not len(todo):
                return found
            k = j[todo]
            hit = (ts[todo] < e[k]) | ((d[k] == 0) & (s[k] == ts[todo]))
            found[todo[hit]] = self.ids[k[hit]]
            j[todo] -= 1
            todo = todo[~hit & (j[todo] >= lo[todo])]
        for q in todo.tolist():  # deep in a long run of slices that ended: search it
            hit = np.flatnonzero(e[lo[q] : j[q] + 1] > ts[q])
            if len(hit):
                found[q] = self.ids[lo[q] + hit[-1]]
        return found

    def next_starting(self, thread: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Provisional ids of the first slice of each ``thread[i]`` starting at or after ``ts[i]`` (-1: none)."""
        _, hi, k = self._positions(thread, ts, "left")
        if not len(self.ids):
            return np.full(len(k), -1, np.int64)
        return np.where(k < hi, self.ids[np.minimum(k, len(self.ids) - 1)], -1)

    def _positions(self, thread: np.ndarray, ts: np.ndarray, side: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first, end) of each query's thread among the sorted slices, and where ``ts`` falls in it."""
        thread, ts = np.asarray(thread, np.int64), np.asarray(ts, np.int64)
        lo = np.searchsorted(self.thread, thread, "left")
        hi = np.searchsorted(self.thread, thread, "right")
        if not len(self.start) or not len(ts):
            return lo, hi, lo.copy()
        t0, s0 = int(self.thread[0]), int(self.start.min())
        bits = (int(self.start.max()) - s0 + 1).bit_length()  # 2**bits - 1 lies past every start
        if (int(self.thread[-1]) - t0).bit_length() + bits <= 62:  # (thread, start) as one sorted key
            key = ((self.thread - t0) << bits) | (self.start - s0)
            q = np.clip(ts - s0, -1, (1 << bits) - 1)
            at = np.searchsorted(key, ((thread - t0) << bits) | np.maximum(q, 0), side)
            at = np.where(q < 0, lo, np.clip(at, lo, hi))
            return lo, hi, at
        at = [int(np.searchsorted(self.start[a:b], t, side)) + a
              for a, b, t in zip(lo.tolist(), hi.tolist(), ts.tolist(), strict=True)]
        return lo, hi, np.asarray(at, dtype=np.int64)


def _subset_order(thread: np.ndarray, start: np.ndarray, dur: np.ndarray, threads: np.ndarray) -> np.ndarray:
    """``start_order`` of the slices of ``threads`` only (indices into the full arrays)."""
    rows = np.flatnonzero(np.isin(thread, threads))
    return rows[start_order(thread[rows], start[rows], dur[rows])]


def chain_flows(endpoints: list[tuple], index: SliceIndex, stats: Counter) -> list[tuple[int, int, str]]:
    """Flows (src, dst, category) from endpoints (thread, ts, phase, enclosing, cat, id, order, xslice);
    ``xslice`` >= 0 names the complete event (by order) to bind to, as accelview's export does."""
    out: list[tuple[int, int, str]] = []
    open_flows: dict[tuple, int] = {}
    waiting: dict[tuple, list[int]] = {}  # steps seen before any start of their flow
    rank = {"s": 0, "t": 1, "f": 2}
    endpoints = sorted(endpoints, key=lambda e: (e[1], rank[e[2]], e[6]))
    for _thread, _ts, phase, _enclosing, cat, fid, _order, _xslice, sid in _bound(endpoints, index):
        if sid < 0:
            stats["flow_endpoints_unbound"] += 1
        key = (cat, fid)
        prev = open_flows.pop(key, None)
        if phase == "s":
            if prev is not None:
                stats["flows_never_finished"] += 1
            early = waiting.get(key)
            if early:  # an end bound earlier in time than its start (the file says which is which)
                dst = early.pop(0)
                if sid >= 0 and dst >= 0:
                    out.append((sid, dst, cat))
                    stats["flows_ending_before_start"] += 1
            elif sid >= 0:
                open_flows[key] = sid
            continue
        if prev is None:
            waiting.setdefault(key, []).append(sid)
        elif sid >= 0:
            out.append((prev, sid, cat))
        if phase == "t" and sid >= 0:
            open_flows[key] = sid
    stats["flow_steps_without_start"] += sum(len(v) for v in waiting.values())
    stats["flows_never_finished"] += len(open_flows)
    return out


def _bound(endpoints: list[tuple], index: SliceIndex) -> list[tuple]:
    """The endpoints, each with the provisional id of the slice it binds to (-1: none) added."""
    if not endpoints:
        return []
    thread, ts, _, enclosing, _, _, _, xslice = (np.asarray(c) for c in zip(*endpoints, strict=True))
    thread, ts, xslice = thread.astype(np.int64), ts.astype(np.int64), xslice.astype(np.int64)
    enclosing = enclosing.astype(bool)
    sid = np.where(enclosing, index.enclosing(thread, ts), index.next_starting(thread, ts))
    n = len(index.by_order)
    named = (xslice >= 0) & (xslice < n)
    sid[named] = index.by_order[xslice[named]]
    return [(*e, s) for e, s in zip(endpoints, sid.tolist(), strict=True)]


def correlation_flows(corr: np.ndarray, on_device: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Link each host slice to the device slices that share its correlation id.

    ``corr`` is -1 where a slice has none; returns (src, dst) provisional ids."""
    has = corr >= 0
    host = has & ~on_device
    dev = has & on_device
    h_corr, h_ids = corr[host], ids[host]
    order = np.argsort(h_corr, kind="stable")
    h_corr, h_ids = h_corr[order], h_ids[order]
    d_corr, d_ids = corr[dev], ids[dev]
    if not len(h_corr) or not len(d_corr):
        e = np.empty(0, np.int64)
        return e, e
    pos = np.minimum(np.searchsorted(h_corr, d_corr, "left"), len(h_corr) - 1)
    found = h_corr[pos] == d_corr
    return h_ids[pos[found]], d_ids[found]
