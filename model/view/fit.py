"""The initial view of a trace: where its activity is, and which groups start collapsed.

Pure numpy; the app's view state asks these when a trace is shown.
"""

from __future__ import annotations

import numpy as np

from ..nesting import slice_ends
from ..schema import TrackKind
from ..trace import Trace

OUTLIER_SHARE = 0.001  # at most this share of slices on each side may be trimmed as lone outliers
SAMPLE = 1_000_000  # above this many slices, the outlier cut is estimated from an even sample
NEAR = 0.10  # slices within this share of the core span beyond it still count as activity
DEVICE_KINDS = (TrackKind.DEVICE, TrackKind.EXEC_UNIT, TrackKind.GPU_STREAM)


def activity_window(trace: Trace) -> tuple[int, int]:
    """(first, last) ns of the trace's activity: its slices on real lanes (not the profiler's own
    window spans, kind OTHER; not instants or counters, which are metadata), less lone slices far
    from the rest. Falls back to ``time_bounds`` when there are no such slices."""
    sl = trace.slices
    if not len(sl):
        return trace.time_bounds()
    other = np.flatnonzero(trace.tracks.kind == TrackKind.OTHER)
    starts, ends = sl.start_ns, slice_ends(sl.start_ns, sl.dur_ns)
    if len(other):
        keep = ~np.isin(sl.track, other)
        if keep.any():
            starts, ends = starts[keep], ends[keep]
    lo, hi = _trimmed(starts, OUTLIER_SHARE), _trimmed(ends, OUTLIER_SHARE, largest=True)
    margin = (hi - lo) * NEAR
    lo = int(starts[starts >= lo - margin].min())  # earliest start near the core
    hi = int(ends[ends <= hi + margin].max())  # latest end near the core
    return lo, max(hi, lo + 1)


def _trimmed(values: np.ndarray, share: float, largest: bool = False) -> int:
    """The value with ``share`` of ``values`` below it (above it: ``largest``): exact up to a
    million values, estimated from an even sample above (a 10M-slice trace opens without a sort)."""
    n = len(values)
    if n > SAMPLE:
        values = values[:: n // SAMPLE]
        n = len(values)
    k = int(n * share)
    if not k:
        return int(values.max() if largest else values.min())
    at = n - 1 - k if largest else k
    return int(np.partition(values, at)[at])


def default_collapsed(trace: Trace) -> set[int]:
    """Process groups to start collapsed: with more than one device (ranks, GPUs), CPU-thread
    processes fold to one summary lane each so every device is on screen, as Perfetto and Nsight
    Systems do; one device and its host fit open, so they stay open."""
    tr = trace.tracks
    kind = tr.kind
    dev = np.isin(kind, DEVICE_KINDS)
    if np.count_nonzero(dev & ~np.isin(tr.parent, np.flatnonzero(dev))) < 2:  # device roots
        return set()
    return {int(t) for t in np.flatnonzero(kind == TrackKind.PROCESS)}
