"""What a host of a cluster adds to its capture: its chip-to-chip and network link lanes with
their transfers and byte counters, each collective's per-participant truth, and device busy
runs that leave out collectives (so that waiting on communication shows as idle time).

A host without links in use (every single-device session) adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from accelview.model import TraceBuilder, TrackKind

from ..sim.cluster.timebase import IdentityClock
from ..sim.device.replay import UNITS
from .records import DeviceRecords

if TYPE_CHECKING:
    from ..sim.cluster.links import Link
    from ..sim.runtime.simulator import Simulator

ToRef = Callable[[np.ndarray], np.ndarray]
_COLLECTIVE = UNITS.index("collective")


def host_links(sim: Simulator) -> list[Link]:
    """The links of ``sim``'s host that carried a transfer: its devices' chip-to-chip ports, then
    its network interface."""
    if sim.fabric is None:
        return []
    h = sim.host_index
    return [x for x in sim.fabric.topology.links() if x.host == h and x.transfers]


def _raw(sim: Simulator) -> ToRef:
    """True ns → ``sim``'s host raw ns, over arrays."""
    model = sim.clock_model
    if type(model) is IdentityClock:
        return lambda t: np.asarray(t, dtype=np.float64)
    return lambda t: np.array([model.to_raw(x) for x in np.asarray(t, dtype=np.float64).tolist()])


def add_link_rows(b: TraceBuilder, sim: Simulator, host_track: int, device_tops: Sequence[int],
                  device_clocks: Sequence[int], to_refs: Sequence[ToRef], edges: np.ndarray) -> None:
    """A lane per link of this host that carried something (a device's ports under the device, on
    its clock; the network interface under the host), its transfers as slices and a counter of the
    bytes it moved per window of ``edges`` (true ns)."""
    raw = _raw(sim)
    intern = b.strings.intern
    arg_sets: dict[int, int] = {}
    for link in host_links(sim):
        on_device = link.device >= 0
        parent = device_tops[link.device] if on_device else host_track
        clock = device_clocks[link.device] if on_device else -1
        to_ref = (lambda t, f=to_refs[link.device]: f(raw(t))) if on_device else raw
        track = b.add_track(link.name, TrackKind.NETWORK_LINK, parent=parent, host=sim.host_name,
                            device=link.device, clock=clock)
        starts, ends, nbytes, names = (list(x) for x in zip(*sorted(link.transfers), strict=True))
        t0 = np.rint(to_ref(np.array(starts))).astype(np.int64)
        t1 = np.maximum(np.rint(to_ref(np.array(ends))).astype(np.int64), t0)
        args = np.array([arg_sets[n] if n in arg_sets else arg_sets.setdefault(n, b.add_args({"bytes": n}))
                         for n in nbytes], dtype=np.int64)
        b.add_slices(track, t0, t1 - t0, np.array([intern(n.rsplit(" #", 1)[0]) for n in names], dtype=np.int32),
                     intern(link.kind), -1, args)
        counter = b.add_counter_track(f"{link.name} bytes", "B", link.kind,
                                      f"bytes the {link.kind} link moved in each window (one direction)", parent,
                                      sim.host_name if not on_device else "", link.device, clock)
        values = window_bytes(np.array(starts), np.array(ends), np.array(nbytes, dtype=np.float64), edges)
        ts = np.rint(to_ref(edges[:-1])).astype(np.int64)
        b.add_rows("counters", {"track": np.full(len(ts), counter, np.int32), "ts_ns": ts, "value": values})


def window_bytes(starts: np.ndarray, ends: np.ndarray, nbytes: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bytes moved in each window [edges[k], edges[k+1]) by transfers that do not overlap (one
    link's, sorted by start), each moving ``nbytes`` evenly over [start, end)."""
    done = np.concatenate([[0.0], np.cumsum(nbytes)])  # bytes of the transfers before each one
    i = np.searchsorted(starts, edges, side="right") - 1  # the last transfer begun by each edge
    k = np.maximum(i, 0)
    span = ends[k] - starts[k]
    part = np.where(span > 0, np.clip((edges - starts[k]) / np.where(span > 0, span, 1.0), 0.0, 1.0), 1.0)
    moved = np.where(i >= 0, done[k] + nbytes[k] * part, 0.0)
    return np.diff(moved)


def add_collective_truth(b: TraceBuilder, sim: Simulator, device_tops: Sequence[int], to_refs: Sequence[ToRef]) -> None:
    """``truth_collectives`` rows: for every collective, each participant on this host's arrival,
    the last participant's arrival and the end (in the participant's device timebase)."""
    if sim.fabric is None:
        return
    h, raw = sim.host_index, _raw(sim)
    picked: list[tuple[int, int, str, float, float, float]] = []  # (seq, device, name, arrival, last, end)
    for t in sim.fabric.truth:
        last = t.last_arrival_ns
        picked += [(t.seq, dev, t.name, a, last, t.end_ns) for (host, dev), a in zip(t.ranks, t.arrivals, strict=True)
                   if host == h]
    if not picked:
        return
    dev = np.array([p[1] for p in picked])
    times = raw(np.array([p[3:] for p in picked], dtype=np.float64).reshape(-1))
    times = times.reshape(-1, 3)
    ref = np.empty_like(times)
    for d in np.unique(dev).tolist():
        rows = np.flatnonzero(dev == d)
        ref[rows] = to_refs[d](times[rows].reshape(-1)).reshape(-1, 3)
    ref = np.rint(ref).astype(np.int64)
    intern = b.strings.intern
    b.add_rows("truth_collectives", {
        "collective": np.array([p[0] for p in picked], dtype=np.int64),
        "track": np.array(device_tops, dtype=np.int32)[dev],
        "name": np.array([intern(p[2]) for p in picked], dtype=np.int32),
        "arrival_ns": ref[:, 0], "last_arrival_ns": ref[:, 1], "end_ns": ref[:, 2]})


def compute_runs(recs: DeviceRecords) -> list[tuple[float, float, str]]:
    """(start, end, cause) of a device's compute: its ops and replays' node runs, without the
    collectives; a run right after a collective has the cause ``communication``."""
    o = recs.ops
    units = np.array([UNITS.index(recs.shapes[k].unit) for k in o.shape.tolist()], dtype=np.int64)
    keep = np.flatnonzero(units != _COLLECTIVE).tolist()
    items = [(int(o.seq[i]), float(o.start[i]), float(o.end[i]), o.cause[i]) for i in keep]
    for r in recs.rare:
        if r.run is None:
            continue
        coll = r.run.layout.units == _COLLECTIVE
        if not coll.any():
            items.append((r.seq, r.start_ns, r.end_ns, r.cause))
            continue
        ends = r.start_ns + r.run.end_off
        begins = np.concatenate([[r.start_ns], ends[:-1]])
        cause, first = r.cause, None
        for j, is_coll in enumerate(coll.tolist()):
            if is_coll:
                if first is not None:
                    items.append((r.seq, float(begins[first]), float(ends[j - 1]), cause))
                first, cause = None, "communication"
            elif first is None:
                first = j
        if first is not None:
            items.append((r.seq, float(begins[first]), float(ends[-1]), cause))
    items.sort(key=lambda x: (x[0], x[1]))
    return [x[1:] for x in items]
