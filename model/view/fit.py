"""The initial view of a trace: where its activity is, and which groups start collapsed.

Pure numpy; the app's view state asks these when a trace is shown.
"""

from __future__ import annotations

import numpy as np

from ..nesting import slice_ends
from ..schema import TrackKind
from ..trace import Trace

OUTLIER_SHARE = 0.001  # at most this share of slices on each side may be trimmed as lone outliers
NEAR = 0.10  # slices within this share of the core span beyond it still count as activity
DEVICE_KINDS = (TrackKind.DEVICE, TrackKind.EXEC_UNIT, TrackKind.GPU_STREAM)


def activity_window(trace: Trace) -> tuple[int, int]:
    """(first, last) ns of the trace's activity: its slices on real lanes (not the profiler's own
    window spans, kind OTHER; not instants or counters, which are metadata), less lone slices far
    from the rest. Falls back to ``time_bounds`` when there are no such slices."""
    sl = trace.slices
    if not len(sl):
        return trace.time_bounds()
    kinds = trace.tracks.kind[sl.track]
    keep = kinds != TrackKind.OTHER
    if not keep.any():
        keep = np.ones(len(sl), bool)
    s = np.sort(sl.start_ns[keep])
    e = np.sort(slice_ends(sl.start_ns, sl.dur_ns)[keep])
    n = len(s)
    k = int(n * OUTLIER_SHARE)
    lo, hi = int(s[k]), int(e[n - 1 - k])
    margin = (hi - lo) * NEAR
    lo = int(s[np.searchsorted(s, lo - margin, "left")])  # earliest start near the core
    hi = int(e[np.searchsorted(e, hi + margin, "right") - 1])  # latest end near the core
    return lo, max(hi, lo + 1)


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
