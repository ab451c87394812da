"""Which slices a graph shows: a time range, the phase a slice is in, or the whole capture,
capped so a graph stays drawable."""

from __future__ import annotations

import numpy as np
from accelview.model.schema import TrackKind

from .dag import GraphContext

MAX_NODES = 20_000


def phase_of(ctx: GraphContext, slice_id: int) -> tuple[int, int] | None:
    """(start, end) of the top-level annotation on a host thread (a phase: "prefill",
    "decode 3", a training step) the slice starts in, or None."""
    sl = ctx.trace.slices
    kinds = ctx.trace.tracks.kind[sl.track]
    t = int(sl.start_ns[slice_id])
    top = np.flatnonzero((kinds == TrackKind.HOST_THREAD) & (sl.depth == 0) & (sl.start_ns <= t) & (ctx.end >= t)
                         & (sl.dur_ns > 0))
    if not len(top):
        return None
    i = int(top[np.argmin(sl.dur_ns[top])])
    return int(sl.start_ns[i]), int(ctx.end[i])


def capped(ctx: GraphContext, ids: np.ndarray, limit: int = MAX_NODES) -> tuple[np.ndarray, bool]:
    """The first ``limit`` of ``ids`` by start, and whether any were left out."""
    if len(ids) <= limit:
        return ids, False
    o = np.lexsort((ids, ctx.start[ids]))
    return np.sort(ids[o[:limit]]), True
