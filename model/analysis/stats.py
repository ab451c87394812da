"""Statistics: per op name (count, total, mean, percentiles, share), per lane utilisation and
idle gaps, and how much compute overlapped transfers. Vectorised over the slices table."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from accelview.model.schema import TrackKind
from accelview.model.trace import Trace

from . import intervals as iv

DEVICE_WORK = (TrackKind.EXEC_UNIT, TrackKind.GPU_STREAM)
TRANSFERS = (TrackKind.PCIE, TrackKind.DMA_ENGINE)


@dataclass(frozen=True)
class OpStat:
    """Durations of all slices of one name."""

    name: str
    count: int
    total_ns: int
    mean_ns: float
    p50_ns: float
    p95_ns: float
    p99_ns: float
    share: float  # of the summed duration of all slices considered


def slices_of_kinds(trace: Trace, kinds: Iterable[TrackKind]) -> np.ndarray:
    """Ids of the slices on tracks of the given kinds."""
    tracks = np.flatnonzero(np.isin(trace.tracks.kind, [int(k) for k in kinds]))
    # Slices are sorted by track: each track's slices are one contiguous block of rows.
    lo = np.searchsorted(trace.slices.track, tracks, "left")
    hi = np.searchsorted(trace.slices.track, tracks, "right")
    if not len(tracks):
        return np.empty(0, np.int64)
    return np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in zip(lo, hi, strict=True)])


def op_stats(trace: Trace, ids: np.ndarray | None = None) -> list[OpStat]:
    """Per-name statistics of the given slices (default: device work), largest total first."""
    if ids is None:
        ids = slices_of_kinds(trace, DEVICE_WORK)
    if len(ids) == 0:
        return []
    names = trace.slices.name[ids]
    dur = trace.slices.dur_ns[ids]
    if len(dur) and dur.min() >= 0 and dur.max() < 1 << 40:  # one sort on a packed (name, duration) key
        o = np.argsort((names.astype(np.int64) << 40) | dur, kind="stable")
    else:
        o = np.lexsort((dur, names))
    names, dur = names[o], dur[o]
    first = np.flatnonzero(np.concatenate(([True], names[1:] != names[:-1])))
    count = np.diff(np.concatenate((first, [len(names)])))
    totals = np.add.reduceat(dur, first)
    grand = max(int(dur.sum()), 1)

    def pct(q: float) -> np.ndarray:  # linear interpolation inside each sorted group
        pos = first + q * (count - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, first + count - 1)
        return dur[lo] + (dur[hi] - dur[lo]) * (pos - lo)

    p50, p95, p99 = pct(0.5), pct(0.95), pct(0.99)
    out = [
        OpStat(trace.strings[names[f]], int(c), int(t), float(t / c), float(a), float(b), float(d), float(t / grand))
        for f, c, t, a, b, d in zip(first, count, totals, p50, p95, p99, strict=True)
    ]
    return sorted(out, key=lambda s: -s.total_ns)


def busy_intervals(trace: Trace, track: int) -> tuple[np.ndarray, np.ndarray]:
    """The union of all slices of one track (any depth)."""
    runs = trace.runs.of_track(track)
    if not runs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # The slices of one (track, depth) are sorted and never overlap: a single run is its own union.
    r = np.concatenate([np.arange(b, e) for _, b, e in runs])
    s = trace.slices.start_ns[r]
    return iv.union(s, s + trace.slices.dur_ns[r], presorted=len(runs) == 1)


def lane_utilization(trace: Trace, t0: int, t1: int, kinds: Iterable[TrackKind] = DEVICE_WORK) -> dict[int, float]:
    """Busy fraction of [t0, t1) of each track of the given kinds that has slices."""
    out = {}
    span = max(t1 - t0, 1)
    for track in np.unique(trace.slices.track[slices_of_kinds(trace, kinds)]):
        out[int(track)] = iv.total(*iv.clip(*busy_intervals(trace, int(track)), t0, t1)) / span
    return out


def union_of_kinds(trace: Trace, kinds: Iterable[TrackKind], t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
    """Time in [t0, t1) when any track of the given kinds was busy."""
    ids = slices_of_kinds(trace, kinds)
    s = trace.slices.start_ns[ids]
    return iv.clip(*iv.union(s, s + trace.slices.dur_ns[ids]), t0, t1)


def compute_transfer_overlap(trace: Trace, t0: int, t1: int,
                             work: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, float]:
    """Transfer time, the part of it that overlapped device work (``work``: its union, when
    already known), and that fraction."""
    work = union_of_kinds(trace, DEVICE_WORK, t0, t1) if work is None else iv.clip(*work, t0, t1)
    xfer = union_of_kinds(trace, TRANSFERS, t0, t1)
    both = iv.total(*iv.intersection(work, xfer))
    total = iv.total(*xfer)
    return {"transfer_ns": total, "overlapped_ns": both, "overlap": both / total if total else 0.0,
            "device_busy_ns": iv.total(*work)}
