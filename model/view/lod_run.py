"""Search structures of one (track, depth) run of slices: prefix sums of durations (busy
time before any instant, so per-pixel coverage is one binary search per pixel edge) and the
rows ordered by (log2 duration class, start) (so the slices wide enough to be boxes are found
without scanning the ones that are not). Pure numpy."""

from __future__ import annotations

import numpy as np

from ..trace import Trace

_SHIFT = 56  # class << 56 | (start - first start): starts within 2^56 ns (833 days) of a run's first


def split_edges(first_bucket: int, n: int, ns_per_px: float, origin: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n + 1`` edges of buckets ``first_bucket``.. as (absolute whole ns, fraction of a ns):
    below 1 ns a pixel edges fall between whole ns, and rounding them would make empty buckets."""
    rel = np.arange(first_bucket, first_bucket + n + 1, dtype=np.float64) * ns_per_px
    whole = np.floor(rel)
    return whole.astype(np.int64) + np.int64(origin), rel - whole


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

    def coverage(self, first_bucket: int, n: int, ns_per_px: float, origin: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Busy fraction and a representative name of ``n`` buckets of ``ns_per_px`` ns from
        bucket index ``first_bucket`` (bucket k spans origin + [k·p, (k+1)·p)). One binary
        search per bucket edge serves both."""
        edges, ef = split_edges(first_bucket, n, ns_per_px, origin)
        if not len(self.start):
            return np.zeros(n, np.float32), np.full(n, -1, np.int32)
        j = np.searchsorted(self.start, edges, "right")  # slices starting <= each edge
        jm = np.maximum(j - 1, 0)
        part = np.clip((edges - self.start[jm]).astype(np.float64) + ef, 0, self.dur[jm])
        busy = np.where(j > 0, self.cum[jm].astype(np.float64) + part, 0.0)
        frac = np.clip(np.diff(busy) / ns_per_px, 0, 1).astype(np.float32)
        if (self.dur == 0).any():  # a bucket where a zero-length slice starts is not drawn empty
            starts_in = np.diff(np.searchsorted(self.start, edges + (ef > 0), "left")) > 0
            frac = np.where(starts_in & (frac < 0.25), np.float32(0.25), frac)
        left, jl = edges[:-1], j[:-1] - 1  # last slice starting <= the bucket's left edge
        jc = np.maximum(jl, 0)
        covers = (jl >= 0) & (self.start[jc] + self.dur[jc] - left > ef[:-1])
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

    def at(self, t: int, tol_ns: float = 0.0) -> int:
        """The slice id under absolute time ``t`` (or within ``tol_ns`` of it, nearest first); -1."""
        if not len(self.start):
            return -1
        ti = np.int64(t)
        j = int(np.searchsorted(self.start, ti, "right")) - 1
        best, gap = -1, tol_ns
        for i in (j, j + 1):
            if 0 <= i < len(self.start):
                s, e = int(self.start[i]), int(self.start[i] + self.dur[i])
                d = 0.0 if s <= t < max(e, s + 1) else min(abs(t - s), abs(t - e))
                if d <= gap and (best < 0 or d < gap):
                    best, gap = i, d
        return best + self.begin if best >= 0 else -1
