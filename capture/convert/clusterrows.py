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

from ..sim.cluster.timebase import is_identity
from ..sim.device.replay import UNITS
from .records import DeviceRecords

if TYPE_CHECKING:
    from ..sim.cluster.rendezvous import LinkTransfers
    from ..sim.runtime.simulator import Simulator

ToRef = Callable[[np.ndarray], np.ndarray]
_COLLECTIVE = UNITS.index("collective")


def host_links(sim: Simulator) -> list[LinkTransfers]:
    """The links of ``sim``'s host that carried a transfer, with their transfers: its devices'
    chip-to-chip ports, then its network interfaces."""
    if sim.fabric is None:
        return []
    return [x for x in sim.fabric.link_transfers() if x.link.host == sim.host_index]


def _raw(sim: Simulator) -> ToRef:
    """True ns → ``sim``'s host raw ns, over arrays."""
    model = sim.clock_model
    if is_identity(model):
        return lambda t: np.asarray(t, dtype=np.float64)
    return lambda t: np.array([model.to_raw(x) for x in np.asarray(t, dtype=np.float64).tolist()])


def _link_ref(sim: Simulator, device: int, to_refs: Sequence[ToRef]) -> ToRef:
    """True ns → the capture's timebase of a link's lane: its device's clock (through the host's
    raw time), or the host's for a network interface."""
    raw = _raw(sim)
    return (lambda t: to_refs[device](raw(t))) if device >= 0 else raw


def add_link_rows(b: TraceBuilder, sim: Simulator, links: Sequence[LinkTransfers], host_track: int,
                  device_tops: Sequence[int], device_clocks: Sequence[int], to_refs: Sequence[ToRef]) -> list[int]:
    """A lane per link in ``links`` (a device's ports under the device, on its clock; a network
    interface under the host) with its transfers as slices, and a counter track per link for the
    bytes it moved per window (:func:`link_counters` makes its samples); returns those tracks."""
    intern = b.strings.intern
    counters = []
    for x in links:
        link = x.link
        on_device = link.device >= 0
        parent = device_tops[link.device] if on_device else host_track
        clock = device_clocks[link.device] if on_device else -1
        to_ref = _link_ref(sim, link.device, to_refs)
        track = b.add_track(link.name, TrackKind.NETWORK_LINK, parent=parent, host=sim.host_name,
                            device=link.device, clock=clock)
        t0 = np.rint(to_ref(x.start)).astype(np.int64)
        t1 = np.maximum(np.rint(to_ref(x.end)).astype(np.int64), t0)
        sizes, size_of = np.unique(x.nbytes, return_inverse=True)
        args = np.array([b.add_args({"bytes": int(n)}) for n in sizes.tolist()], dtype=np.int64)[size_of]
        used, name_of = np.unique(x.name, return_inverse=True)
        ids = np.array([intern(x.names[i]) for i in used.tolist()], dtype=np.int32)[name_of]
        b.add_slices(track, t0, t1 - t0, ids, intern(link.kind), -1, args)
        counters.append(b.add_counter_track(f"{link.name} bytes", "B", link.kind,
                                            f"bytes the {link.kind} link moved in each window (one direction)",
                                            parent, sim.host_name if not on_device else "", link.device, clock))
    return counters


def link_counters(sim: Simulator, links: Sequence[LinkTransfers], to_refs: Sequence[ToRef], edges: np.ndarray,
                  ts_ns: np.ndarray, value: np.ndarray) -> None:
    """The samples of :func:`add_link_rows`' counter tracks, link by link, into ``ts_ns`` and
    ``value`` (``len(edges) - 1`` windows each)."""
    n = len(edges) - 1
    model = sim.clock_model  # the windows are the host's (raw time), the transfers on true time
    true_edges = edges if is_identity(model) else np.array([model.to_true(e) for e in edges.tolist()])
    for k, x in enumerate(links):
        value[k * n:(k + 1) * n] = window_bytes(x.start, x.end, x.nbytes.astype(np.float64), true_edges)
        ts_ns[k * n:(k + 1) * n] = np.rint(_link_ref(sim, x.link.device, to_refs)(true_edges[:-1])).astype(np.int64)


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
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("collective", "device", "arrival", "last", "end", "name")}
    for ranks, seqs, names, arrivals, ends in sim.fabric.ledger.parts():  # one communicator's at once
        mine = [i for i, r in enumerate(ranks) if r[0] == h]
        if not mine:
            continue
        last = arrivals.max(axis=1)
        for i in mine:
            cols["collective"].append(seqs)
            cols["device"].append(np.full(len(seqs), ranks[i][1], dtype=np.int64))
            cols["arrival"].append(arrivals[:, i])
            cols["last"].append(last)
            cols["end"].append(ends)
            cols["name"].append(names)
    if not cols["name"]:
        return
    c = {k: np.concatenate(v) for k, v in cols.items()}
    order = np.lexsort((c["device"], c["collective"]))
    c = {k: v[order] for k, v in c.items()}
    times = np.stack([raw(c["arrival"]), raw(c["last"]), raw(c["end"])], axis=1)
    ref = np.empty_like(times)
    for d in np.unique(c["device"]).tolist():
        rows = np.flatnonzero(c["device"] == d)
        ref[rows] = to_refs[d](times[rows].reshape(-1)).reshape(-1, 3)
    ref = np.rint(ref).astype(np.int64)
    b.add_rows("truth_collectives", {
        "collective": c["collective"], "track": np.array(device_tops, dtype=np.int32)[c["device"]],
        "name": _interned_codes(b, c["name"], sim.fabric.ledger.names), "arrival_ns": ref[:, 0],
        "last_arrival_ns": ref[:, 1], "end_ns": ref[:, 2]})


def _interned_codes(b: TraceBuilder, codes: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """String ids of the names ``codes`` stand for (indices into ``names``), interned in order of
    first appearance."""
    used, first = np.unique(codes, return_index=True)
    ids = np.zeros(max(len(names), 1), dtype=np.int32)
    for code in used[np.argsort(first)].tolist():
        ids[code] = b.strings.intern(names[code])
    return ids[codes]


def compute_runs(recs: DeviceRecords) -> tuple[list[tuple[float, float, str]], np.ndarray]:
    """A device's compute around its collectives: (start, end, cause) runs of its ops without the
    collectives and of each replay from its first to its last compute node, and the spans
    ((start, end) rows) inside replays where only collective nodes ran. A run right after a
    collective op has the cause ``communication`` (the engine's)."""
    o = recs.ops
    units = np.array([UNITS.index(recs.shapes[k].unit) for k in o.shape.tolist()], dtype=np.int64)
    keep = units != _COLLECTIVE
    runs = list(zip(o.start[keep].tolist(), o.end[keep].tolist(), [c for c, k in zip(o.cause, keep.tolist(),
                                                                                    strict=True) if k], strict=True))
    inner: list[np.ndarray] = []
    shapes: dict[int, tuple[int, int, np.ndarray, np.ndarray]] = {}
    for r in recs.rare:
        if r.run is None:
            continue
        layout = r.run.layout
        got = shapes.get(id(layout))
        if got is None:
            got = shapes[id(layout)] = _coll_spans(layout.units == _COLLECTIVE)
        first, last, lo, hi = got
        if first < 0:  # collectives only
            continue
        ends = r.run.end_off
        begins = np.concatenate([[0.0], ends[:-1]])  # nodes run back to back
        cause = r.cause if first == 0 else "communication"
        runs.append((r.start_ns + float(begins[first]), r.start_ns + float(ends[last]), cause))
        if len(lo):
            inner.append(np.stack([r.start_ns + begins[lo], r.start_ns + ends[hi]], axis=1))
    return runs, np.concatenate(inner) if inner else np.empty((0, 2))


def add_communication_idle(b: TraceBuilder, track: int, spans: np.ndarray, to_ref: ToRef) -> None:
    """``truth_idle`` rows of cause ``communication`` for ``spans`` (true ns) on a device's ``track``."""
    if not len(spans):
        return
    g0, g1 = to_ref(spans[:, 0]), to_ref(spans[:, 1])
    keep = np.flatnonzero(g1 > g0)
    b.add_rows("truth_idle", {"track": np.full(len(keep), track, np.int32), "start_ns": g0[keep], "end_ns": g1[keep],
                              "cause": np.full(len(keep), b.strings.intern("communication"), np.int32)})


def _coll_spans(coll: np.ndarray) -> tuple[int, int, np.ndarray, np.ndarray]:
    """A replay layout's first and last compute node (-1 when none) and the first and last node of
    each run of collective nodes between them."""
    compute = np.flatnonzero(~coll)
    if not len(compute):
        return -1, -1, np.empty(0, np.int64), np.empty(0, np.int64)
    first, last = int(compute[0]), int(compute[-1])
    inside = np.zeros(len(coll) + 2, dtype=np.int8)
    inside[first + 1:last + 1] = coll[first:last]
    edges = np.diff(inside)
    return first, last, np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
