"""Level of detail of counter series: min and max per pixel bucket, so zoomed-out counters
keep their spikes instead of showing a subsample, with work bounded by the pixels on screen:
``CounterLOD`` keeps min/max blocks of 8^k samples and draws a wide view from blocks.
Pure numpy."""

from __future__ import annotations

import numpy as np

FACTOR = 8


def _reduce(bts: np.ndarray, bmin: np.ndarray, bmax: np.ndarray, edges: np.ndarray,
            held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per bucket between ``edges``: min/max of the held value and of the samples (or blocks,
    by their start time) inside it."""
    idx = np.searchsorted(bts, edges, "left")
    lo, hi = held.copy(), held.copy()
    a, b = int(idx[0]), int(idx[-1])
    if b > a:
        # A NaN sentinel keeps every start a valid index; fmin/fmax ignore it.
        starts = idx[:-1] - a
        mins = np.fmin.reduceat(np.append(bmin[a:b].astype(np.float64), np.nan), starts)
        maxs = np.fmax.reduceat(np.append(bmax[a:b].astype(np.float64), np.nan), starts)
        nonempty = idx[1:] > idx[:-1]
        lo = np.where(nonempty, np.fmin(lo, mins), lo)
        hi = np.where(nonempty, np.fmax(hi, maxs), hi)
    return lo, hi


def _edges(t0: float, ns_per_px: float, width: int, origin: int) -> np.ndarray:
    e = t0 + np.arange(width + 1, dtype=np.float64) * ns_per_px
    return np.floor(e).astype(np.int64) + np.int64(origin)  # ``t0`` is an offset from ``origin``


def _held(ts: np.ndarray, values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    prev = np.searchsorted(ts, edges[:-1], "left") - 1
    return np.where(prev >= 0, values[np.maximum(prev, 0)], np.nan).astype(np.float64)


def counter_minmax(
    ts: np.ndarray, values: np.ndarray, t0: float, ns_per_px: float, width: int, origin: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of a step-function counter in each of ``width`` pixel buckets from ``t0``.

    A bucket's range includes the value held from the previous sample, so flat stretches
    draw as lines and spikes narrower than a pixel survive. NaN where no sample precedes."""
    edges = _edges(t0, ns_per_px, width, origin)
    return _reduce(ts, values, values, edges, _held(ts, values, edges))


class CounterLOD:
    """One counter series with min/max blocks of 8, 64, 512… samples built on demand."""

    def __init__(self, ts: np.ndarray, values: np.ndarray) -> None:
        self.ts, self.values = ts, values
        self._levels: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def _level(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if k not in self._levels:
            at = np.arange(0, len(self.ts), FACTOR**k)
            v = self.values.astype(np.float64)
            self._levels[k] = (self.ts[at], np.minimum.reduceat(v, at), np.maximum.reduceat(v, at))
        return self._levels[k]

    def minmax(self, t0: float, ns_per_px: float, width: int, origin: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``counter_minmax`` of the series; when the view holds many more samples than
        pixels it reduces blocks (each at least 4 per pixel) instead of samples."""
        edges = _edges(t0, ns_per_px, width, origin)
        held = _held(self.ts, self.values, edges)
        a, b = np.searchsorted(self.ts, edges[[0, -1]], "left")
        n = int(b - a)
        if n <= FACTOR * width or not len(self.ts):
            return _reduce(self.ts, self.values, self.values, edges, held)
        k = max(int(np.log(n / (4 * width)) / np.log(FACTOR)), 1)
        bts, bmin, bmax = self._level(k)
        return _reduce(bts, bmin, bmax, edges, held)


def band_pixels(lo: np.ndarray, hi: np.ndarray, vmax: float, height: int, rgb: int) -> np.ndarray:
    """A counter strip as (height, width) 0xAARRGGBB pixels, row 0 at the top: each column
    filled from the baseline to its max translucent and from its min to its max solid, so a
    spike one pixel wide stays visible; empty where the column has no value (NaN)."""
    rows = np.arange(height, dtype=np.float32)[:, None]
    ok = np.isfinite(hi)
    top = np.where(ok, height - 1 - np.nan_to_num(hi) / vmax * (height - 1), height)
    bottom = np.where(ok, height - 1 - np.nan_to_num(lo) / vmax * (height - 1), height)
    band = (rows >= np.floor(top)[None, :]) & (rows <= np.ceil(bottom)[None, :])
    area = rows >= top[None, :]
    out = np.zeros((height, len(hi)), np.uint32)
    out[area] = (0x55 << 24) | (rgb & 0xFFFFFF)
    out[band] = (0xFF << 24) | (rgb & 0xFFFFFF)
    return out
