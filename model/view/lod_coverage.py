"""The per-zoom coverage cache of ``TraceLOD``: every visible lane's per-pixel busy fraction
and colour for a frame, computed in one batch over a packed (run, start) key, kept for a
window a quarter screen wider than the view on each side, extended (not recomputed) when a pan
leaves it, and resampled while the user is still zooming. A mixin: it uses the trace, its
runs, ``origin`` and the colour table of the class it is mixed into. Pure numpy."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .lod_run import split_edges

if TYPE_CHECKING:
    from ..trace import Trace

MIN_SHOWN = 0.25  # coverage given to a pixel where only zero-length slices start


class CoverageCache:
    """Coverage rows for frames, cached per run and zoom level (see the module docstring)."""

    trace: Trace
    origin: int
    _run_of: dict[tuple[int, int], int]
    _cache: dict[int, tuple[float, int, int, np.ndarray, np.ndarray, np.ndarray]]
    _g: tuple[int, int, np.ndarray, np.ndarray] | bool | None
    _has_zero: bool
    stale: bool

    def coverage_rows(
        self, lanes: list[tuple[int, int]], t0: float, ns_per_px: float, width: int, exact: bool = True
    ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """Coverage of many lanes at once: (x0, frac, names, colours, present), the arrays
        (lanes, width + 1); bucket i of every row spans pixels [x0 + i, x0 + i + 1). Lanes
        whose cached padded window still covers the view at this zoom are reused; the others
        are computed together, with one binary search for all their bucket edges.

        With ``exact=False`` (while the user is zooming) a lane cached at another zoom that
        covers the view is resampled instead of recomputed, and ``self.stale`` says so: the
        caller repaints exactly once zooming pauses."""
        self.stale = False
        if not lanes:
            return None
        k0 = int(np.floor(t0 / ns_per_px))
        k1 = k0 + width + 1
        runs = [self._run_of.get(key, -1) for key in lanes]
        miss, approx, extend = [], {}, {}
        pad = width // 4
        for r in runs:
            hit = self._cache.get(r) if r >= 0 else None
            if r >= 0 and (hit is None or hit[0] != ns_per_px or not (hit[1] <= k0 and k1 <= hit[2])):
                covers_view = hit is not None and hit[1] * hit[0] <= t0 and t0 + width * ns_per_px <= hit[2] * hit[0]
                if not exact and covers_view:
                    approx[r] = hit
                elif hit is not None and hit[0] == ns_per_px and hit[1] - 2 * width < k0 and k1 < hit[2] + 2 * width:
                    extend.setdefault((hit[1], hit[2]), []).append(r)  # panned out of the cached window
                else:
                    miss.append(r)
        if miss:
            self._fill(sorted(set(miss)), k0 - pad, k1 + pad, ns_per_px)
        for (g0, g1), rs in extend.items():
            self._extend(rs, g0, g1, k0 - pad, k1 + pad, ns_per_px, keep=3 * width)
        n = width + 1
        frac = np.zeros((len(lanes), n), np.float32)
        names = np.full((len(lanes), n), -1, np.int32)
        cols = np.full((len(lanes), n), -1, np.int16)
        present = np.array([r >= 0 for r in runs])
        if approx:
            self.stale = True
            centres = (k0 + np.arange(n) + 0.5) * ns_per_px
        for i, r in enumerate(runs):
            if r in approx:
                p_old, g0, g1, f, nm, c = approx[r]
                at = np.clip((centres / p_old).astype(np.int64) - g0, 0, g1 - g0 - 1)
                frac[i], names[i], cols[i] = f[at], nm[at], c[at]
            elif r >= 0:
                _, g0, _, f, nm, c = self._cache[r]
                a = k0 - g0
                frac[i], names[i], cols[i] = f[a : a + n], nm[a : a + n], c[a : a + n]
        return k0 - t0 / ns_per_px, frac, names, cols, present

    def _global(self) -> tuple[int, int, np.ndarray, np.ndarray] | None:
        """(shift, first start, key, prefix sums) over the whole slices table, where
        key = run << shift | start - first start is sorted; None when the trace's span is too
        long to pack (runs are then searched one by one)."""
        if self._g is None:
            sl, runs = self.trace.slices, self.trace.runs
            n = len(sl)
            tmin = int(sl.start_ns.min()) if n else 0
            span = int(sl.start_ns.max()) - tmin + 1 if n else 1
            shift = 62 - max(len(runs.begin).bit_length(), 1)
            if span >= (1 << shift):
                self._g = False
            else:
                rid = np.repeat(np.arange(len(runs.begin), dtype=np.int64), runs.end - runs.begin)
                key = (rid << shift) + (sl.start_ns - tmin)
                cum = np.zeros(n + 1, np.int64)
                np.cumsum(sl.dur_ns, out=cum[1:])
                self._has_zero = bool((sl.dur_ns == 0).any())
                self._g = (shift, tmin, key, cum)
        return self._g or None

    def _fill(self, rs: list[int], g0: int, g1: int, p: float) -> None:
        """Compute and cache buckets [g0, g1) of zoom ``p`` for runs ``rs``."""
        frac, names, cols = self._compute(rs, g0, g1, p)
        for i, run in enumerate(rs):
            self._cache[run] = (p, g0, g1, frac[i], names[i], cols[i])

    def _extend(self, rs: list[int], c0: int, c1: int, n0: int, n1: int, p: float, keep: int) -> None:
        """Runs cached for buckets [c0, c1) at zoom ``p`` now need [n0, n1): compute only the
        buckets not cached yet, join them on, and keep at most ``keep`` around the new range."""
        g0, g1 = min(c0, n0), max(c1, n1)
        parts = []
        if g0 < c0:
            parts.append(("left", self._compute(rs, g0, c0, p)))
        if c1 < g1:
            parts.append(("right", self._compute(rs, c1, g1, p)))
        lo = max(g0, min(n0, n1 - keep))
        hi = min(g1, max(n1, lo + keep))
        for i, run in enumerate(rs):
            _, _, _, f, nm, c = self._cache[run]
            arrays = [f, nm, c]
            for side, (pf, pn, pc) in parts:
                new = (pf[i], pn[i], pc[i])
                arrays = [np.concatenate((a, b)) if side == "right" else np.concatenate((b, a))
                          for a, b in zip(arrays, new, strict=True)]
            f, nm, c = (a[lo - g0 : hi - g0] for a in arrays)
            self._cache[run] = (p, lo, hi, f, nm, c)

    def _compute(self, rs: list[int], g0: int, g1: int, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(frac, names, colours) of buckets [g0, g1) of zoom ``p`` for runs ``rs``, one row each."""
        g = self._global()
        if g is None:
            rows = []
            for r in rs:
                runs = self.trace.runs
                idx = self.run(int(runs.track[r]), int(runs.depth[r]))
                frac, names = idx.coverage(g0, g1 - g0, p, self.origin)
                rows.append((frac, names, self.colours(names)))
            return tuple(np.stack([row[k] for row in rows]) for k in range(3))  # type: ignore[return-value]
        shift, tmin, key, cum = g
        sl, runs = self.trace.slices, self.trace.runs
        start, dur = sl.start_ns, sl.dur_ns
        r = np.asarray(rs, np.int64)
        # Bucket edges are fractional ns when zoomed below 1 ns a pixel: search on their integer
        # part (starts are whole ns) and add the fraction to the partial slice, never rounding an
        # edge onto its neighbour (which left zero-width buckets: a covering slice in stripes).
        edges, ef = split_edges(g0, g1 - g0, p, self.origin)
        q = (r[:, None] << shift) + np.clip(edges - tmin, 0, (1 << shift) - 1)[None, :]
        # Rows starting <= each edge (+ begin). Each lane's edges are searched only within the
        # part of the key its first and last edge bound: small and cache-resident when zoomed in.
        lo = np.searchsorted(key, q[:, 0], "right")
        hi = np.searchsorted(key, q[:, -1], "right")
        j = np.empty(q.shape, np.int64)
        for i in range(len(rs)):
            j[i] = np.searchsorted(key[lo[i] : hi[i]], q[i], "right") + lo[i]
        b = runs.begin[r][:, None]
        e = runs.end[r][:, None]
        jm = np.maximum(j - 1, b)
        has = j > b
        st, du = start[jm], dur[jm]
        part = np.clip((edges[None, :] - st).astype(np.float64) + ef[None, :], 0, du)
        busy = np.where(has, (cum[jm] - cum[b]).astype(np.float64) + part, 0.0)
        frac = np.clip(np.diff(busy, axis=1) / p, 0, 1).astype(np.float32)
        if self._has_zero:  # a bucket where a zero-length slice starts is not drawn empty
            jl = np.empty(q.shape, np.int64)
            for i in range(len(rs)):
                jl[i] = np.searchsorted(key[lo[i] : hi[i]], q[i] + (ef > 0), "left") + lo[i]
            frac = np.where((np.diff(jl, axis=1) > 0) & (frac < MIN_SHOWN), np.float32(MIN_SHOWN), frac)
        covers = has[:, :-1] & ((st[:, :-1] + du[:, :-1] - edges[None, :-1]) > ef[None, :-1])
        pick = np.where(covers, jm[:, :-1], np.minimum(j[:, :-1], e - 1))
        names = np.where(frac > 0, sl.name[pick], -1).astype(np.int32)
        return frac, names, self.colours(names)
