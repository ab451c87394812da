"""Level of detail for the timeline: what one frame draws, bounded by pixels, not events.

Within a (track, depth) run the busy time before any instant is a prefix sum plus one partial
slice, so a frame gets every pixel's exact busy fraction from one binary search per pixel edge
(slices narrower than a pixel never vanish); boxes come from a per-run index by (duration
class, start). Times are relative to ``origin`` (the trace start): floats of absolute ns since
the epoch are only precise to 256 ns. Coverage is cached per zoom. Pure numpy; no Qt.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from ..trace import Trace
from .counter_lod import counter_minmax
from .lod_coverage import CoverageCache
from .lod_overview import OverviewCache
from .lod_run import RunIndex

N_COLOURS = 24

__all__ = ["N_COLOURS", "Coverage", "RunIndex", "TraceLOD", "colour_index", "counter_minmax"]


@dataclass(frozen=True)
class Coverage:
    """Per-pixel coverage of one lane: bucket ``i`` spans pixels [x0 + i, x0 + i + 1).
    ``frac`` is the busy fraction of the bucket (0..1); ``name`` the string id of a slice in
    it (the one covering its left edge, else the first starting in it), -1 when empty;
    ``colour`` that name's palette index (-1 when empty)."""

    x0: float
    frac: np.ndarray
    name: np.ndarray
    colour: np.ndarray


class TraceLOD(CoverageCache, OverviewCache):
    """Lazy per-run indexes and a per-zoom coverage cache for one trace. Every time argument
    is an offset in ns from ``origin``."""

    def __init__(self, trace: Trace, origin: int = 0) -> None:
        self.trace = trace
        self.origin = int(origin)
        runs = trace.runs
        self._run_of = {(int(t), int(d)): i for i, (t, d) in enumerate(zip(runs.track, runs.depth, strict=True))}
        self._index: dict[int, RunIndex] = {}
        self._cache: dict[int, tuple[float, int, int, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._colour = np.empty(0, np.int16)
        self._custom_colours = False
        self._g: tuple[int, int, np.ndarray, np.ndarray] | bool | None = None
        self._has_zero = False  # the trace has zero-length slices (set with the packed key)
        self.stale = False
        self._max_dur: np.ndarray | None = None

    def prepare(self) -> TraceLOD:
        """Build the whole-trace indexes now (the loader's worker thread calls this, so the
        first frame does not): the packed search key, per-run maximum durations, colours."""
        self._global()
        runs = self.trace.runs
        if self._max_dur is None and len(runs.begin):
            self._max_dur = np.maximum.reduceat(self.trace.slices.dur_ns, runs.begin)
        self.colours(np.empty(0, np.int32))
        return self

    def depth_count(self, track: int) -> int:
        """Number of depth rows of a track (0 when it has no slices)."""
        runs = self.trace.runs.of_track(track)
        return max((d for d, _, _ in runs), default=-1) + 1

    def run(self, track: int, depth: int) -> RunIndex | None:
        """The index of one (track, depth) run, built on first use; None when empty."""
        r = self._run_of.get((track, depth))
        if r is None:
            return None
        idx = self._index.get(r)
        if idx is None:
            runs = self.trace.runs
            idx = self._index[r] = RunIndex(self.trace, int(runs.begin[r]), int(runs.end[r]))
        return idx

    def coverage(self, track: int, depth: int, t0: float, ns_per_px: float, width: int) -> Coverage | None:
        """Per-pixel coverage of one lane for the view starting at ``t0``."""
        rows = self.coverage_rows([(track, depth)], t0, ns_per_px, width)
        if rows is None or not rows[4][0]:
            return None
        x0, frac, names, cols, _ = rows
        return Coverage(x0, frac[0], names[0], cols[0])

    def wide_rows(self, lanes: list[tuple[int, int]], t0: float, t1: float,
                  min_dur: float) -> tuple[np.ndarray, np.ndarray]:
        """``wide_slices`` of many lanes at once: (lane index, slice id) pairs ordered by lane
        then start. Lanes with few slices in the window are searched together; a lane with
        many goes through its duration-class index."""
        g = self._global()
        a0, a1 = self.origin + int(np.floor(t0)), self.origin + int(np.ceil(t1))  # exact absolute bounds
        if g is None:
            parts = [(i, self.wide_slices(t, d, t0, t1, min_dur)) for i, (t, d) in enumerate(lanes)]
        else:
            shift, tmin, key, _ = g
            if self._max_dur is None:
                runs = self.trace.runs
                self._max_dur = (np.maximum.reduceat(self.trace.slices.dur_ns, runs.begin)
                                 if len(runs.begin) else np.empty(0, np.int64))
            idx = np.array([self._run_of.get(k, -1) for k in lanes], np.int64)
            lane = np.flatnonzero(idx >= 0)
            r = idx[lane]
            keep = self._max_dur[r] >= min_dur
            lane, r = lane[keep], r[keep]
            if not len(r):
                return np.empty(0, np.int64), np.empty(0, np.int64)
            top = (1 << shift) - 1
            lo_q = (r << shift) + np.clip(a0 - tmin - self._max_dur[r], 0, top).astype(np.int64)
            hi_q = (r << shift) + np.int64(min(max(a1 - tmin, 0), top))
            lo = np.searchsorted(key, lo_q, "left")
            n = np.searchsorted(key, hi_q, "left") - lo
            small = n <= 4096
            parts = []
            if small.any():
                ns, los, ls = n[small], lo[small], lane[small]
                total = int(ns.sum())
                rows = np.repeat(los - np.cumsum(ns) + ns, ns) + np.arange(total)
                which = np.repeat(ls, ns)
                sl = self.trace.slices
                ok = (sl.dur_ns[rows] >= min_dur) & (sl.start_ns[rows] + sl.dur_ns[rows] > a0)
                parts.append((which[ok], rows[ok]))
            for i in lane[~small].tolist():
                t, d = lanes[i]
                ids = self.wide_slices(t, d, t0, t1, min_dur)
                parts.append((np.full(len(ids), i, np.int64), ids))
            if not parts:
                return np.empty(0, np.int64), np.empty(0, np.int64)
            which = np.concatenate([p[0] for p in parts]).astype(np.int64)
            rows = np.concatenate([p[1] for p in parts]).astype(np.int64)
            order = np.lexsort((rows, which))
            return which[order], rows[order]
        which = np.concatenate([np.full(len(ids), i, np.int64) for i, ids in parts]) if parts else np.empty(0, np.int64)
        rows = np.concatenate([ids for _, ids in parts]) if parts else np.empty(0, np.int64)
        return which, rows.astype(np.int64)

    def wide_slices(self, track: int, depth: int, t0: float, t1: float, min_dur: float) -> np.ndarray:
        """Slice ids of a lane overlapping the view that last at least ``min_dur`` ns."""
        idx = self.run(track, depth)
        if idx is None:
            return np.empty(0, np.int64)
        return idx.wide(self.origin + int(np.floor(t0)), self.origin + int(np.ceil(t1)), min_dur)

    def instant_times(self, track: int, t0: float, t1: float, ns_per_px: float) -> np.ndarray:
        """Absolute timestamps of a track's instant events in [t0, t1), at most one per pixel."""
        inst = self.trace.instants
        if not len(inst):
            return np.empty(0, np.int64)
        lo = int(np.searchsorted(inst.track, track, "left"))
        hi = int(np.searchsorted(inst.track, track, "right"))
        ts = inst.ts_ns[lo:hi]
        a0 = self.origin + int(np.floor(t0))
        a = int(np.searchsorted(ts, np.int64(a0), "left"))
        b = int(np.searchsorted(ts, np.int64(self.origin + int(np.ceil(t1))), "left"))
        ts = ts[a:b]
        if len(ts) > 1:
            px = np.floor((ts - a0) / ns_per_px).astype(np.int64)
            ts = ts[np.concatenate(([True], px[1:] != px[:-1]))]
        return ts

    def slice_at(self, track: int, depth: int, t: float, tol_ns: float = 0.0) -> int:
        """The slice id of a lane under time ``t`` (within ``tol_ns``), or -1."""
        idx = self.run(track, depth)
        return -1 if idx is None else idx.at(self.origin + int(np.floor(t)), tol_ns)

    def busy_fraction(self, track: int, a: float, b: float) -> float:
        """Fraction of [a, b) in which the track's top-level slices are busy."""
        idx = self.run(track, 0)
        if idx is None or b <= a:
            return 0.0
        return idx.busy_ns(self.origin + int(a), self.origin + int(b)) / max(int(b) - int(a), 1)

    def set_colour_table(self, table: np.ndarray | None) -> None:
        """Colour slices by ``table[name id]`` (palette indexes, e.g. by bottleneck class) instead
        of by name; None goes back to colours by name. Cached coverage is dropped."""
        self._custom_colours = table is not None
        self._colour = np.asarray(table, np.int16) if table is not None else np.empty(0, np.int16)
        self._cache.clear()

    def colours(self, name_ids: np.ndarray) -> np.ndarray:
        """Stable palette indexes (0..N_COLOURS-1) of string ids; -1 stays -1. The table of
        every string's colour is built once (a hash per string), then each call is a gather."""
        if not self._custom_colours and (len(self._colour) != len(self.trace.strings)
                                         or (len(self._colour) and self._colour[-1] < 0)):
            self._colour = np.fromiter((colour_index(s) for s in self.trace.strings.strings()), np.int16,
                                       count=len(self.trace.strings))
        ids = np.asarray(name_ids)
        return np.where(ids >= 0, self._colour[np.maximum(ids, 0)], -1).astype(np.int16)


def colour_index(name: str, n: int = N_COLOURS) -> int:
    """Stable palette index of a name: the same name gets the same colour in every run and
    every trace. Trailing digits are ignored so ``matmul_12`` and ``matmul_13`` match."""
    key = name.rstrip("0123456789_#:. ") or name
    return zlib.crc32(key.encode("utf-8")) % n
