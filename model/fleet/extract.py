"""One host's capture reduced, where it lies, to what the fleet analysis combines.

``extract_capture(path)`` is the per-capture task of the fleet (a Dask task given only the path):
load the capture, fit its device clocks to its host clock from their PCIe samples (the same
``host_alignment`` + ``launch_corrected`` as ``load_cluster``), move its events onto its host's
own clock, and keep the small extract of :func:`accelview.model.analysis.hostextract.host_extract`
plus what the combine needs besides: the host's index and cluster size, its clock fitted against
host0 from its PTP samples (before the collectives narrow it, which needs every host), and a
cumulative device-busy profile from which the fleet's utilisation lanes are drawn. Busy times are
measured on the host's own clock: they differ from the same durations on host0's clock by the
host's drift (ppm). The extract is cached beside the capture (``cache.cached``).
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from ..align import ClockMap, Segment
from ..analysis.hostextract import host_extract
from ..cluster.inputs import host_index, is_cluster_capture
from ..cluster.retime import retimed
from ..cluster.timebase import host_alignment, launch_corrected
from ..errors import CaptureError
from ..schema import TrackKind
from ..trace import Trace
from .cache import cached

SECTION = "extract-4"  # the sidecar section; a new number when the extract changes
PROFILE_POINTS = 2049  # the busy profile's samples over the capture's span


def extract_capture(path: str) -> dict[str, Any]:
    """The fleet extract of the host capture at ``path`` (JSON-able), cached beside it."""
    return cached(path, SECTION, lambda: extract_fresh(path))


def extract_fresh(path: str) -> dict[str, Any]:
    """The fleet extract of the host capture at ``path``, computed (the cache not consulted);
    a capture that cannot be read, or is not one host's capture of a cluster, raises
    ``CaptureError`` naming it."""
    from ..loader import load_trace

    trace = load_trace(path)
    if not is_cluster_capture(trace):
        raise CaptureError(path, "not a host capture of a cluster (accelview profile of a cluster workload writes "
                                 "those)")
    index = host_index(trace)
    host = f"host{index}"
    align = launch_corrected(host_alignment(trace, host, index), trace)
    local = retimed(trace, align.to_host)
    out = host_extract(local, host)
    cluster = trace.metadata["capture"]["cluster"]
    out.update(path=str(path), index=index, cluster_hosts=int(cluster.get("hosts", 0)),
               host_map=map_json(align.host_map), synced=align.synced,
               profile=busy_profile(local, to_ref=align.host_map.to_ref))
    return out


def map_json(m: ClockMap) -> dict[str, Any]:
    """A clock map as JSON: its segments as [start_ns, end_ns, offset_ns, drift_ppm, error_ns]
    (docs/FORMAT.md's convention: ref = (t − offset) / (1 + drift·1e-6) on [start, end))."""
    return {"segments": [[s.start_ns, s.end_ns, s.offset_ns, s.drift_ppm, s.error_ns] for s in m.segments]}


def map_of(data: dict[str, Any]) -> ClockMap:
    """The clock map of :func:`map_json`'s JSON."""
    return ClockMap(tuple(Segment(int(a), int(z), float(o), float(d), float(e)) for a, z, o, d, e in data["segments"]))


def busy_profile(trace: Trace, points: int = PROFILE_POINTS, to_ref: Any = None) -> dict[str, Any]:
    """How much device time was busy up to each of ``points`` times evenly over the trace's span:
    ``times`` (first, last), ``busy_ns`` (packed by :func:`pack_int64`: cumulative over the
    devices' compute units, each device's busy time counted once however many of its units
    overlap), ``devices``. Collectives
    are left out: a device waiting in an all-reduce for a straggler is not busy, and a lane that
    counted that wait would show every host but the straggler fully busy. ``to_ref`` (a host's
    map to host0) places each interval before the profile is sampled, so the samples lie evenly
    on host0's clock: sampled on the host's own clock and moved afterwards, a clock step's jump
    would fold the samples around it."""
    place = to_ref if to_ref is not None else (lambda t: t)
    t0, t1 = (float(x) for x in place(np.asarray(trace.time_bounds(), dtype=np.float64)))
    at = np.linspace(t0, t1, points)
    total = np.zeros(points)
    tracks, sl = trace.tracks, trace.slices
    unit = tracks.kind[sl.track] == int(TrackKind.EXEC_UNIT)
    compute = unit & (tracks.name[sl.track] != trace.strings.lookup("collective"))
    dev = tracks.device[sl.track]
    devices = np.unique(dev[unit]).tolist()
    for d in devices:
        rows = np.flatnonzero(compute & (dev == d))
        s = sl.start_ns[rows].astype(np.float64)
        start, end = _union(place(s), place(s + sl.dur_ns[rows]))
        before = np.r_[0.0, np.cumsum(end - start)]  # busy before each interval starts
        k = np.searchsorted(start, at, side="right")  # intervals started by each time
        inside = np.where(k > 0, np.clip(at - start[np.maximum(k - 1, 0)], 0, None), 0.0)
        last = np.where(k > 0, end[np.maximum(k - 1, 0)] - start[np.maximum(k - 1, 0)], 0.0)
        total += before[np.maximum(k - 1, 0)] * (k > 0) + np.minimum(inside, last)
    return {"times": [t0, t1], "busy_ns": pack_int64(np.rint(total)), "devices": len(devices)}


def pack_int64(values: np.ndarray) -> str:
    """Integers as base64 of little-endian int64: 11 bytes a value in the client's memory and the
    sidecar, where a JSON list of Python ints costs about 40 (a fleet's client holds every host's)."""
    return base64.b64encode(np.asarray(values, dtype="<i8").tobytes()).decode("ascii")


def unpack_int64(text: str) -> np.ndarray:
    """The integers of :func:`pack_int64` (ValueError for a damaged text)."""
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) % 8:
        raise ValueError("a packed int64 column whose length is not a multiple of 8")
    return np.frombuffer(raw, dtype="<i8").astype(np.int64)


def _union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals [start, end) as sorted disjoint intervals."""
    if not len(start):
        return start, end
    order = np.argsort(start, kind="stable")
    start, end = start[order], np.maximum.accumulate(end[order])
    new = np.r_[True, start[1:] > end[:-1]]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(start) - 1]
    return start[first], end[last]
