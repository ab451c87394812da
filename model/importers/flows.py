"""Bind Chrome flow events (s/t/f) to slices, and link launches to device work by correlation.

A flow event names a point (thread, timestamp); it belongs to a slice of that thread. ``s``
and ``t``, and ``f`` with ``"bp": "e"``, bind to the enclosing slice (the deepest one that
contains the timestamp); ``f`` without it binds to the next slice that starts at or after the
timestamp. Steps of one flow share (category, id) and chain in time order: s → t … → f.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..nesting import start_order

WALK_LIMIT = 64  # slices stepped back over before a vectorised search for the enclosing one


class SliceIndex:
    """Slices sorted by (thread, start, longest first) for point look-ups."""

    def __init__(self, thread: np.ndarray, start: np.ndarray, dur: np.ndarray, ids: np.ndarray) -> None:
        order = start_order(thread, start, dur)
        # int64: numpy would convert an int32 array to search it for a Python int (tens of µs a call)
        self.thread, self.start = thread[order].astype(np.int64), start[order]
        self.end = self.start + dur[order]
        self.dur = dur[order]
        self.ids = ids[order]
        self.by_order = ids

    def enclosing(self, thread: int, ts: int) -> int:
        """Provisional id of the deepest slice of ``thread`` containing ``ts``, or -1."""
        lo = int(np.searchsorted(self.thread, thread, "left"))
        hi = int(np.searchsorted(self.thread, thread, "right"))
        j = int(np.searchsorted(self.start[lo:hi], ts, "right")) + lo - 1
        s, e, d = self.start, self.end, self.dur
        for k in range(j, max(lo, j - WALK_LIMIT) - 1, -1):
            if ts < e[k] or (d[k] == 0 and s[k] == ts):
                return int(self.ids[k])
        if j - WALK_LIMIT > lo:
            hit = np.flatnonzero(e[lo : j + 1] > ts)
            if len(hit):
                return int(self.ids[lo + hit[-1]])
        return -1

    def next_starting(self, thread: int, ts: int) -> int:
        """Provisional id of the first slice of ``thread`` starting at or after ``ts``, or -1."""
        lo = int(np.searchsorted(self.thread, thread, "left"))
        hi = int(np.searchsorted(self.thread, thread, "right"))
        k = int(np.searchsorted(self.start[lo:hi], ts, "left")) + lo
        return int(self.ids[k]) if k < hi else -1


def chain_flows(endpoints: list[tuple], index: SliceIndex, stats: Counter) -> list[tuple[int, int, str]]:
    """Flows (src, dst, category) from endpoints (thread, ts, phase, enclosing, cat, id, order, xslice);
    ``xslice`` >= 0 names the complete event (by order) to bind to, as accelview's export does."""
    out: list[tuple[int, int, str]] = []
    open_flows: dict[tuple, int] = {}
    waiting: dict[tuple, list[int]] = {}  # steps seen before any start of their flow
    rank = {"s": 0, "t": 1, "f": 2}
    n = len(index.by_order)
    for thread, ts, phase, enclosing, cat, fid, _order, xslice in sorted(
            endpoints, key=lambda e: (e[1], rank[e[2]], e[6])):
        if 0 <= xslice < n:
            sid = int(index.by_order[xslice])
        else:
            sid = index.enclosing(thread, ts) if enclosing else index.next_starting(thread, ts)
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
