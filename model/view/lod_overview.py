"""The overview strip's data: how busy the whole run is at each pixel of a strip as wide as the
timeline, one row per side of the run (host, transfers, device), so the minimap shows where the
work is. One O(slices) pass of bincounts over the top-level slices at a fine resolution, built
with the other indexes in the loading thread and resampled per strip width: a warm frame
costs a lookup, less than one lane. Pure numpy."""

from __future__ import annotations

import numpy as np

from ..schema import TrackKind
from ..trace import Trace

FINE = 16384  # buckets of the whole-trace profile that strips of any width are resampled from

# The overview's rows: which track kinds each one sums (a kind not named goes to "host").
GROUPS: tuple[tuple[str, tuple[TrackKind, ...]], ...] = (
    ("host", ()),
    ("transfers", (TrackKind.PCIE, TrackKind.DMA_ENGINE, TrackKind.NETWORK_LINK)),
    ("device", (TrackKind.DEVICE, TrackKind.EXEC_UNIT, TrackKind.GPU_STREAM)),
)


def track_groups(trace: Trace) -> np.ndarray:
    """The overview row (index into ``GROUPS``) of every track."""
    kind = trace.tracks.kind.astype(np.int64)
    out = np.zeros(len(kind), np.int64)
    for g, (_, kinds) in enumerate(GROUPS):
        if kinds:
            out[np.isin(kind, [int(k) for k in kinds])] = g
    return out


def overview_busy(trace: Trace, origin: int, span: float, width: int) -> tuple[list[str], np.ndarray]:
    """(row names, busy) where busy[g, i] is the mean busy fraction, over row g's tracks that
    have slices, of bucket i of ``width`` equal buckets of [0, span) ns from ``origin``: the
    exact overlap of every depth-0 slice with each bucket. Rows without tracks are left out."""
    width = max(int(width), 1)
    sl = trace.slices
    if not len(sl) or span <= 0:
        return [], np.zeros((0, width))
    top = sl.depth == 0
    tracks = sl.track[top].astype(np.int64)
    groups = track_groups(trace)
    g = groups[tracks]
    s = np.clip((sl.start_ns[top] - origin).astype(np.float64), 0, span)
    e = np.clip(s + sl.dur_ns[top].astype(np.float64), 0, span)
    p = span / width
    n = len(GROUPS) * width
    bs = g * width + np.minimum((s / p).astype(np.int64), width - 1)
    be = g * width + np.minimum((e / p).astype(np.int64), width - 1)
    x0 = (bs % width) * p
    same = bs == be
    # A slice inside one bucket adds its length there; one crossing buckets adds its head to
    # the first, its tail to the last and a whole bucket to each one between (a difference
    # array of counts), all in bincounts, never a Python loop over slices.
    busy = np.zeros(n, np.float64)
    busy += np.bincount(bs[same], weights=(e - s)[same], minlength=n)
    c = ~same
    busy += np.bincount(bs[c], weights=(x0[c] + p - s[c]), minlength=n)
    busy += np.bincount(be[c], weights=(e[c] - (be[c] % width) * p), minlength=n)
    steps = np.bincount(bs[c] + 1, minlength=n + 1) - np.bincount(be[c], minlength=n + 1)
    busy += np.cumsum(steps)[:n] * p
    has = np.flatnonzero(np.bincount(tracks, minlength=len(groups)))
    lanes = np.bincount(groups[has], minlength=len(GROUPS))
    keep = np.flatnonzero(lanes > 0)
    frac = busy.reshape(len(GROUPS), width)[keep] / p / lanes[keep, None]
    return [GROUPS[i][0] for i in keep.tolist()], np.clip(frac, 0, 1)


def resample(busy: np.ndarray, width: int) -> np.ndarray:
    """Rows of busy fractions over equal buckets resampled to ``width`` equal buckets of the
    same span: the mean over each new bucket, through the cumulative busy time (exact where
    edges meet, linear within a fine bucket elsewhere)."""
    n = busy.shape[1]
    cum = np.concatenate((np.zeros((len(busy), 1)), np.cumsum(busy, axis=1)), axis=1)
    at = np.linspace(0, n, max(int(width), 1) + 1)
    out = np.stack([np.diff(np.interp(at, np.arange(n + 1), c)) for c in cum]) if len(busy) else busy
    return np.clip(out * max(int(width), 1) / n, 0, 1) if len(busy) else np.zeros((0, max(int(width), 1)))


class OverviewCache:
    """``TraceLOD``'s overview: the whole trace's busy profile at ``FINE`` buckets, built once
    (by ``prepare`` in the loading thread), then resampled to the strip's width per resize."""

    trace: Trace
    origin: int
    _fine: tuple[float, float, list[str], np.ndarray] | None = None
    _overview: tuple[float, float, int, list[str], np.ndarray] | None = None

    def overview(self, lo: float, hi: float, width: int) -> tuple[list[str], np.ndarray]:
        """(row names, busy fraction per row and pixel) of a ``width``-pixel strip over
        [lo, hi) ns from ``origin`` (see ``overview_busy``); cached: only a resize resamples."""
        hit = self._overview
        if hit is None or hit[:3] != (lo, hi, width):
            fine = self._fine
            if fine is None or fine[:2] != (lo, hi):
                names, busy = overview_busy(self.trace, self.origin + int(lo), hi - lo, FINE)
                fine = self._fine = (lo, hi, names, busy)
            hit = self._overview = (lo, hi, width, fine[2], resample(fine[3], width))
        return hit[3], hit[4]
