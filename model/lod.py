"""Level of detail for the timeline: what one frame draws, bounded by pixels, not events.

Each (track, depth) run of slices is non-overlapping and sorted by start, so the busy time
before any instant is a prefix sum plus one partial slice: ``busy(t)``. A frame samples it at
its pixel-bucket edges (one binary search per edge), which gives every pixel's exact busy
fraction however many slices fall in it; slices narrower than a pixel merge into that
coverage and never vanish. Slices wide enough to be boxes come from a per-run index sorted by
(duration class, start), so finding them is also bounded by the pixels on screen.

Coverage is computed for a window half a screen wider on each side than the view and cached per
zoom level, so panning at one zoom reuses it. Pure numpy; no Qt.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from .trace import Trace

N_COLOURS = 24
_SHIFT = 56  # class << 56 | (start - first start): starts within 2^56 ns (833 days) of a run's first


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


class RunIndex:
    """Search structures of one (track, depth) run: prefix sums of durations and the rows
    ordered by (log2 duration class, start)."""

    def __init__(self, trace: Trace, begin: int, end: int) -> None:
        sl = trace.slices
        self.begin = begin
        self.end = end
        self.start = sl.start_ns[begin:end]
        self.dur = sl.dur_ns[begin:end]
        self.names = sl.name[begin:end]
        self.cum = np.zeros(end - begin + 1, np.int64)
        np.cumsum(self.dur, out=self.cum[1:])
        cls = np.zeros(end - begin, np.uint8)
        pos = self.dur > 0
        cls[pos] = np.frexp(self.dur[pos].astype(np.float64))[1].astype(np.uint8)  # 2^(c-1) <= d < 2^c
        self.by_class = np.argsort(cls, kind="stable").astype(np.int32)
        sorted_cls = cls[self.by_class]
        self.classes = np.unique(sorted_cls) if len(cls) else np.empty(0, np.uint8)
        class_lo = np.searchsorted(sorted_cls, self.classes, "left")
        class_hi = np.searchsorted(sorted_cls, self.classes, "right")
        self._class_list = [(int(c), int(lo), int(hi)) for c, lo, hi in zip(self.classes, class_lo, class_hi,
                                                                                  strict=True) if c > 0]
        self.max_dur = int(self.dur.max()) if len(self.dur) else 0
        # One sorted key (class, start) so all classes are searched with one call each way.
        self.t_min = int(self.start[0]) if len(self.start) else 0
        self.class_key = (sorted_cls.astype(np.int64) << _SHIFT) + np.clip(
            self.start[self.by_class] - self.t_min, 0, (1 << _SHIFT) - 1)

    def _busy(self, t: np.ndarray, j: np.ndarray) -> np.ndarray:
        jm = np.maximum(j - 1, 0)
        partial = np.clip(t - self.start[jm], 0, self.dur[jm])
        return np.where(j > 0, self.cum[jm] + partial, 0)

    def busy_at(self, t: np.ndarray) -> np.ndarray:
        """Busy ns of the run before each time in ``t`` (int64 array)."""
        t = np.asarray(t, np.int64)
        if not len(self.start):
            return np.zeros_like(t)
        return self._busy(t, np.searchsorted(self.start, t, "right"))

    def busy_ns(self, a: int, b: int) -> int:
        """Busy ns of the run within [a, b)."""
        v = self.busy_at(np.array([a, b], np.int64))
        return int(v[1] - v[0])

    def coverage(self, first_bucket: int, n: int, ns_per_px: float) -> tuple[np.ndarray, np.ndarray]:
        """Busy fraction and a representative name of ``n`` buckets of ``ns_per_px`` ns from
        bucket index ``first_bucket`` (bucket k spans [k·p, (k+1)·p)). One binary search per
        bucket edge serves both."""
        k = np.arange(first_bucket, first_bucket + n + 1, dtype=np.float64)
        edges = np.round(k * ns_per_px).astype(np.int64)
        if not len(self.start):
            return np.zeros(n, np.float32), np.full(n, -1, np.int32)
        j = np.searchsorted(self.start, edges, "right")  # slices starting <= each edge
        busy = self._busy(edges, j)
        width = np.maximum(np.diff(edges), 1)
        frac = (np.diff(busy) / width).astype(np.float32)
        left, jl = edges[:-1], j[:-1] - 1  # last slice starting <= the bucket's left edge
        jc = np.maximum(jl, 0)
        covers = (jl >= 0) & (self.start[jc] + self.dur[jc] > left)
        pick = np.where(covers, jc, np.minimum(jl + 1, len(self.start) - 1))
        names = np.where(frac > 0, self.names[pick], -1).astype(np.int32)
        return frac, names

    def wide(self, t0: int, t1: int, min_dur: float) -> np.ndarray:
        """Rows (trace slice ids) of slices overlapping [t0, t1) that last ≥ ``min_dur`` ns,
        sorted by start. When the window holds few slices they are filtered directly;
        otherwise only duration classes that can reach ``min_dur`` are searched, each within
        the window, so the work is bounded by what fits on screen either way."""
        if self.max_dur < min_dur or not len(self.start):
            return np.empty(0, np.int64)
        a = int(np.searchsorted(self.start, t0 - self.max_dur, "left"))
        b = int(np.searchsorted(self.start, t1, "left"))
        if b - a <= 4096:
            rows = np.arange(a, b)
        else:
            sel = [(c, lo, hi) for c, lo, hi in self._class_list if (1 << c) > min_dur]
            if not sel:
                return np.empty(0, np.int64)
            los = np.array([(c << _SHIFT) + max(t0 - (1 << c) - self.t_min, 0) for c, _, _ in sel], np.int64)
            his = np.array([(c << _SHIFT) + min(max(t1 - self.t_min, 0), (1 << _SHIFT) - 1) for c, _, _ in sel],
                           np.int64)
            lo = np.searchsorted(self.class_key, los, "left")
            n = np.maximum(np.searchsorted(self.class_key, his, "left") - lo, 0)
            total = int(n.sum())
            if not total:
                return np.empty(0, np.int64)
            rows = self.by_class[np.repeat(lo - np.cumsum(n) + n, n) + np.arange(total)]
            rows.sort()
        rows = rows[(self.dur[rows] >= min_dur) & (self.start[rows] + self.dur[rows] > t0)]
        return rows.astype(np.int64) + self.begin

    def at(self, t: float, tol_ns: float = 0.0) -> int:
        """The slice id under time ``t`` (or within ``tol_ns`` of it, nearest first); -1."""
        if not len(self.start):
            return -1
        ti = np.int64(np.floor(t))
        j = int(np.searchsorted(self.start, ti, "right")) - 1
        best, gap = -1, tol_ns
        for i in (j, j + 1):
            if 0 <= i < len(self.start):
                s, e = int(self.start[i]), int(self.start[i] + self.dur[i])
                d = 0.0 if s <= t < max(e, s + 1) else min(abs(t - s), abs(t - e))
                if d <= gap and (best < 0 or d < gap):
                    best, gap = i, d
        return best + self.begin if best >= 0 else -1


class TraceLOD:
    """Lazy per-run indexes and a per-zoom coverage cache for one trace."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        runs = trace.runs
        self._run_of = {(int(t), int(d)): i for i, (t, d) in enumerate(zip(runs.track, runs.depth, strict=True))}
        self._index: dict[int, RunIndex] = {}
        self._cache: dict[int, tuple[float, int, int, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._colour = np.full(len(trace.strings), -1, np.int16)

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
        """Per-pixel coverage of a lane for the view starting at ``t0``; reuses the cached
        padded window while the zoom level is unchanged."""
        r = self._run_of.get((track, depth))
        idx = self.run(track, depth)
        if idx is None or r is None:
            return None
        k0 = int(np.floor(t0 / ns_per_px))
        k1 = k0 + width + 1
        hit = self._cache.get(r)
        if hit is None or hit[0] != ns_per_px or not (hit[1] <= k0 and k1 <= hit[2]):
            pad = width // 2
            g0, g1 = k0 - pad, k1 + pad
            frac, names = idx.coverage(g0, g1 - g0, ns_per_px)
            hit = self._cache[r] = (ns_per_px, g0, g1, frac, names, self.colours(names))
        _, g0, _, frac, names, cols = hit
        a, b = k0 - g0, k0 - g0 + width + 1
        return Coverage(k0 - t0 / ns_per_px, frac[a:b], names[a:b], cols[a:b])

    def wide_slices(self, track: int, depth: int, t0: float, t1: float, min_dur: float) -> np.ndarray:
        """Slice ids of a lane overlapping the view that last at least ``min_dur`` ns."""
        idx = self.run(track, depth)
        if idx is None:
            return np.empty(0, np.int64)
        return idx.wide(int(np.floor(t0)), int(np.ceil(t1)), min_dur)

    def slice_at(self, track: int, depth: int, t: float, tol_ns: float = 0.0) -> int:
        """The slice id of a lane under time ``t`` (within ``tol_ns``), or -1."""
        idx = self.run(track, depth)
        return -1 if idx is None else idx.at(t, tol_ns)

    def busy_fraction(self, track: int, a: float, b: float) -> float:
        """Fraction of [a, b) in which the track's top-level slices are busy."""
        idx = self.run(track, 0)
        if idx is None or b <= a:
            return 0.0
        return idx.busy_ns(int(a), int(b)) / max(int(b) - int(a), 1)

    def colours(self, name_ids: np.ndarray) -> np.ndarray:
        """Stable palette indexes (0..N_COLOURS-1) of string ids; -1 stays -1."""
        ids = np.asarray(name_ids)
        if len(self._colour) < len(self.trace.strings):
            grown = np.full(len(self.trace.strings), -1, np.int16)
            grown[: len(self._colour)] = self._colour
            self._colour = grown
        valid = ids >= 0
        safe = np.where(valid, ids, 0)
        got = self._colour[safe]
        missing = np.unique(safe[valid & (got < 0)])
        for i in missing.tolist():
            self._colour[i] = colour_index(self.trace.strings[i])
        return np.where(valid, self._colour[safe], -1)


def colour_index(name: str, n: int = N_COLOURS) -> int:
    """Stable palette index of a name: the same name gets the same colour in every run and
    every trace. Trailing digits are ignored so ``matmul_12`` and ``matmul_13`` match."""
    key = name.rstrip("0123456789_#:. ") or name
    return zlib.crc32(key.encode("utf-8")) % n


def counter_minmax(
    ts: np.ndarray, values: np.ndarray, t0: float, ns_per_px: float, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of a step-function counter in each of ``width`` pixel buckets from ``t0``.

    A bucket's range includes the value held from the previous sample, so flat stretches
    draw as lines and spikes narrower than a pixel survive. NaN where no sample precedes."""
    edges = (t0 + np.arange(width + 1, dtype=np.float64) * ns_per_px)
    e = np.floor(edges).astype(np.int64)
    idx = np.searchsorted(ts, e, "left")
    prev_i = idx[:-1] - 1
    held = np.where(prev_i >= 0, values[np.maximum(prev_i, 0)], np.nan).astype(np.float64)
    lo, hi = held.copy(), held.copy()
    a, b = int(idx[0]), int(idx[-1])
    if b > a:
        # A NaN sentinel keeps every start a valid index; fmin/fmax ignore it.
        seg = np.append(values[a:b].astype(np.float64), np.nan)
        starts = idx[:-1] - a
        nonempty = idx[1:] > idx[:-1]
        mins = np.fmin.reduceat(seg, starts)
        maxs = np.fmax.reduceat(seg, starts)
        lo = np.where(nonempty, np.fmin(lo, mins), lo)
        hi = np.where(nonempty, np.fmax(hi, maxs), hi)
    return lo, hi
