"""Level of detail of counter series: min and max per pixel bucket, so zoomed-out counters
keep their spikes instead of showing a subsample. Pure numpy."""

from __future__ import annotations

import numpy as np


def counter_minmax(
    ts: np.ndarray, values: np.ndarray, t0: float, ns_per_px: float, width: int, origin: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Min and max of a step-function counter in each of ``width`` pixel buckets from ``t0``.

    A bucket's range includes the value held from the previous sample, so flat stretches
    draw as lines and spikes narrower than a pixel survive. NaN where no sample precedes."""
    edges = (t0 + np.arange(width + 1, dtype=np.float64) * ns_per_px)
    e = np.floor(edges).astype(np.int64) + np.int64(origin)  # ``t0`` is an offset from ``origin``
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
