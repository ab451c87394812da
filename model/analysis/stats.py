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
_DUR_BITS = 40  # durations below 2^40 ns (18 min) pack with a group id into one int64 sort key


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


_FEW_GROUPS = 4096  # up to this many groups, percentiles come from one partition per group


def group_percentiles(group: np.ndarray, dur: np.ndarray, qs: tuple[float, ...]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """(distinct groups ascending, each duration's row in them, count, total, percentiles per
    q) of durations by group id.

    Percentiles interpolate linearly between order statistics (numpy's default method). With
    few groups the durations are bucketed by group (a radix sort) and each group partitioned
    around the ranks needed, linear time; with many, one sort of a packed (group, duration) key
    when both fit, else a lexsort."""
    group = np.asarray(group)
    dur = dur.astype(np.int64, copy=False)
    if not len(dur):
        e = np.empty(0, np.int64)
        return e, e, e, e, [np.empty(0) for _ in qs]
    if group.min() >= 0 and group.max() < 1 << 24:
        present = np.bincount(group)
        groups = np.flatnonzero(present)
        count = present[groups]
        lut = np.zeros(len(present), np.int64)
        lut[groups] = np.arange(len(groups))
        dense = lut[group]
    else:
        groups, dense, count = np.unique(group, return_inverse=True, return_counts=True)
    first = np.concatenate(([0], np.cumsum(count)[:-1]))
    lo_rank = [np.floor(q * (count - 1)).astype(np.int64) for q in qs]
    if len(groups) <= _FEW_GROUPS:
        d = dur[np.argsort(dense.astype(np.uint16 if len(groups) < 1 << 16 else np.int64), kind="stable")]
        for f, c in zip(first.tolist(), count.tolist(), strict=True):
            ks = sorted({min(int(np.floor(q * (c - 1))) + k, c - 1) for q in qs for k in (0, 1)})
            d[f:f + c] = np.partition(d[f:f + c], ks)
    elif dur.min() >= 0 and dur.max() < 1 << _DUR_BITS and len(groups) < 1 << (62 - _DUR_BITS):
        d = np.sort((dense << _DUR_BITS) | dur) & ((1 << _DUR_BITS) - 1)
    else:
        d = dur[np.lexsort((dur, dense))]
    totals = np.add.reduceat(d, first)
    out = []
    for q, lo in zip(qs, lo_rank, strict=True):
        pos = q * (count - 1)
        a, b = d[first + lo], d[first + np.minimum(lo + 1, count - 1)]
        out.append(a + (b - a) * (pos - lo))
    return groups, dense, count, totals, out


def op_stats(trace: Trace, ids: np.ndarray | None = None) -> list[OpStat]:
    """Per-name statistics of the given slices (default: device work), largest total first."""
    if ids is None:
        ids = slices_of_kinds(trace, DEVICE_WORK)
    if len(ids) == 0:
        return []
    names, _, count, totals, (p50, p95, p99) = group_percentiles(trace.slices.name[ids], trace.slices.dur_ns[ids],
                                                              (0.5, 0.95, 0.99))
    grand = max(int(totals.sum()), 1)
    out = [
        OpStat(trace.strings[int(n)], int(c), int(t), float(t / c), float(a), float(b), float(d), float(t / grand))
        for n, c, t, a, b, d in zip(names, count, totals, p50, p95, p99, strict=True)
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
