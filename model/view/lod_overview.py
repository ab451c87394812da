"""The overview strip's data: how busy the whole run is at each pixel of a strip as wide as the
timeline, one row per side of the run (host, transfers, device), so the minimap shows where the
work is. The strip reuses the lanes' coverage machinery (``CoverageCache._compute``) over every
top-level run at the strip's width, cached per size: a warm frame costs a lookup, less than one
lane. Pure numpy."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..schema import TrackKind
from ..trace import Trace

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


class OverviewCache:
    """``TraceLOD``'s overview: every top-level run's coverage over the whole trace at the
    strip's width, from the same packed key and prefix sums as the lanes' coverage (one binary
    search a pixel edge a run), averaged per side; cached, so only a resize recomputes it."""

    trace: Trace
    origin: int
    _overview: tuple[float, float, int, list[str], np.ndarray] | None = None

    if TYPE_CHECKING:  # CoverageCache's, which TraceLOD mixes in beside this
        def _compute(self, rs: list[int], g0: int, g1: int, p: float) -> tuple[np.ndarray, ...]: ...

    def overview(self, lo: float, hi: float, width: int) -> tuple[list[str], np.ndarray]:
        """(row names, busy fraction per row and pixel) of a ``width``-pixel strip over
        [lo, hi) ns from ``origin``: the rows of ``GROUPS`` that have tracks with slices."""
        hit = self._overview
        if hit is None or hit[:3] != (lo, hi, width):
            hit = self._overview = (lo, hi, width, *self._overview_rows(lo, hi, max(int(width), 1)))
        return hit[3], hit[4]

    def _overview_rows(self, lo: float, hi: float, width: int) -> tuple[list[str], np.ndarray]:
        runs = self.trace.runs
        top = np.flatnonzero(runs.depth == 0)
        if not len(top) or hi <= lo:
            return [], np.zeros((0, width))
        p = (hi - lo) / width
        g0 = round(lo / p)  # lo is 0 (the trace start) in the app: buckets line up exactly
        frac = self._compute(top.tolist(), g0, g0 + width, p)[0].astype(np.float64)
        g = track_groups(self.trace)[runs.track[top]]
        lanes = np.bincount(g, minlength=len(GROUPS))
        keep = np.flatnonzero(lanes > 0)
        busy = np.stack([frac[g == k].mean(axis=0) for k in keep.tolist()])
        return [GROUPS[k][0] for k in keep.tolist()], busy
