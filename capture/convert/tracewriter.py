"""Turn a finished simulated session into a ``Trace``: tracks, slices, flows, counters, truth.

What a real driver and device would report goes into the trace's tables: host API calls and
staging memcpy's (host clock), driver submissions, device op / DMA / PCIe slices and sampled
counters (device timestamps converted to the host timebase through the clock estimate made
from sync samples). What only the simulator knows goes into truth: each op's true limiter,
each device idle interval's true cause, and each device clock's true parameters.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from accelview.model import Trace, TraceBuilder, TrackKind
from accelview.model.schema import OP_COUNTER_COLUMNS

from ..sim.device.opcounters import counter_columns
from ..sim.device.replay import UNITS
from ..sim.device.window_sums import window_edges
from . import counter_rows as sampled
from .batch import TraceBatch
from .clocksync import ONE_WAY_JITTER_NS, estimate, take_samples, true_alignment
from .clusterrows import (
    add_collective_truth,
    add_communication_idle,
    add_link_rows,
    compute_runs,
    host_links,
    link_counters,
)
from .deviceslices import DeviceTracks, Flow, OpShapes, add_records
from .graphrows import replay_counters
from .hostslices import add_calls, add_submissions
from .hoststep import stepped
from .hostsync import add_host_sync, cluster_clock
from .offload import Offload
from .records import DeviceRecords, records_of
from .replays import ReplayColumns
from .session import session_metadata
from .summaries import IdleTruth, add_idle_rows

if TYPE_CHECKING:
    from ..sim.cluster.rendezvous import LinkTransfers
    from ..sim.runtime.simulator import Device, Simulator

HOST_NAME = "sim-host"
SYNC_PERIOD_NS = 1_000_000  # a device's counter read every ms (at most 2,000 reads a run, spread over it)
CLUSTER_SYNC_PERIOD_NS = 100_000  # a cluster host's: every 100 µs, so a short run has reads enough


def build_trace(sim: Simulator) -> Trace:
    """The capture of a finished session (call ``sim.finish()`` first)."""
    b = TraceBuilder()
    batch = TraceBatch(b)
    b.metadata.update(session_metadata(sim))
    b.add_clock("host monotonic", reference=True)
    name = sim.host_name or HOST_NAME  # a host of a cluster: host0 …
    host = b.add_track(name, TrackKind.HOST, host=name)
    proc = b.add_track("python (simulated)", TrackKind.PROCESS, parent=host, host=name)
    thread = b.add_track("main thread", TrackKind.HOST_THREAD, parent=proc, host=name)
    api = b.add_track("runtime API", TrackKind.RUNTIME_API, parent=thread, host=name)
    end = max([sim.clock.now, *(c.end_ns for d in sim.devices for c in d.engine.finished)])
    edges = window_edges(sim.clock.start_ns, end, sim.counter_period_ns)
    # What the sampled counters and the ops' counters need (clock estimates, replays as
    # columns), then those columns themselves, by a helper on a second core (.offload) while
    # this one makes the other rows, builds, and only then takes them.
    rng = np.random.default_rng([sim.seed, 2])
    model = cluster_clock(sim)  # a cluster's host reads its devices' counters as often as every 100 µs
    jitter, period = (model.read_jitter_ns, CLUSTER_SYNC_PERIOD_NS) if model is not None else (ONE_WAY_JITTER_NS,
                                                                                               SYNC_PERIOD_NS)
    clocks = [_DeviceClock(dev, edges, sim.clock.start_ns, rng, jitter, period) for dev in sim.devices]
    subs = sim.log.submissions
    tracks = sampled.plan(sim, list(dict.fromkeys((s.device, s.stream) for s in subs)))
    prepared: dict[str, list] = {}  # the records, made after the fork: the helper makes its own
    links = host_links(sim)  # a host of a cluster: its links' transfers (their counters by the helper too)
    helper = _offload(sim, prepared, edges, clocks, tracks, links)
    recs = prepared["recs"] = [records_of(dev.engine.finished) for dev in sim.devices]  # the one adapter
    replays = prepared["replays"] = [_replays(r) for r in recs]
    try:
        log = sim.log
        first, cids = add_calls(batch, log.call_ints, log.call_objects, api, thread, log.ranges, log.memcpys)
        api_ids = {cid: first + i for i, cid in enumerate(cids) if cid > 0}
        queues: dict[tuple[int, int], int] = {}

        def queue(device: int, stream: int) -> int:
            track = queues[(device, stream)] = b.add_track(f"device {device} queue {stream}", TrackKind.DRIVER_QUEUE,
                                                           parent=proc, host=name, device=device)
            return track

        first = add_submissions(batch, log.submission_ints, log.submission_names, queue, api_ids, batch.flows, 0)
        sub_ids = {(s.device, s.cid, s.chunk): first + i for i, s in enumerate(subs)}
        track_ids, nodes, tops, clock_ids = [], [], [], []
        for dev, r, clock, columns in zip(sim.devices, recs, clocks, replays, strict=True):
            top, clock_id, local = _device(b, batch, sim, dev, r, sub_ids, clock, columns)
            nodes.append(local)
            tops.append(top)
            clock_ids.append(clock_id)
            for t in tracks:
                if t.device == dev.index:
                    track_ids.append(_counter_track(b, t, top, clock_id, queues, name))
        batch.flush()
        add_host_sync(b, sim, sim.clock.start_ns, float(edges[-1]))
        if links:
            to_refs = [c.to_ref for c in clocks]
            track_ids += add_link_rows(b, sim, links, host, tops, clock_ids, to_refs)
            add_collective_truth(b, sim, tops, to_refs)
        trace = b.build(source="simulator")
        made = helper.result()
    finally:
        helper.close()  # after an error above: the helper's columns are not wanted
    counted = [(d, local) for d, local in enumerate(nodes) if len(local)]
    if counted:  # rows in the order of their slices in the capture, as the helper wrote them
        parts = [{"slice": batch.slice_ids(local)[made[f"device {d} order"]],
                  **{c: made[f"device {d} {c}"] for c, _ in OP_COUNTER_COLUMNS}} for d, local in counted]
        b.add_rows_after_build(trace, "op_counters", parts[0] if len(parts) == 1 else {
            c: np.concatenate([p[c] for p in parts]) for c in parts[0]})
    # in track order, each track's samples in time order (window starts, through monotonic clock maps)
    b.add_rows_after_build(trace, "counters", {"track": np.repeat(np.array(track_ids, dtype=np.int32), len(edges) - 1),
                                               "ts_ns": made["ts_ns"], "value": made["value"]})
    return stepped(trace, b, model) if model is not None else trace  # a cluster host's clock may have stepped


def _counter_track(b: TraceBuilder, t: sampled.CounterTrack, top: int, clock: int,
                   queues: dict[tuple[int, int], int], host: str) -> int:
    """The track of a sampled counter: under its device, on its clock; a queue's depth under
    its queue, on the host's clock."""
    if t.stream >= 0:
        return b.add_counter_track(t.name, t.unit, t.block, t.description, queues[(t.device, t.stream)], host,
                                   t.device)
    return b.add_counter_track(t.name, t.unit, t.block, t.description, top, "", t.device, clock)


def _offload(sim: Simulator, prepared: dict[str, list], edges: np.ndarray, clocks: list[_DeviceClock],
             tracks: list[sampled.CounterTrack], links: list[LinkTransfers]) -> Offload:
    """The columns a helper makes: the sampled counters' samples (then the ``links``' byte
    counters', on tracks made after the others), and per device with ops the counters of its ops
    and its replays' nodes (``device D <counter>``, see :func:`_op_rows`). Forked first, the helper
    makes the devices' records itself (``prepared`` is still empty there)."""
    base = len(tracks) * (len(edges) - 1)
    rows = base + len(links) * (len(edges) - 1)
    shapes: dict[str, tuple[Any, int]] = {"ts_ns": (np.int64, rows), "value": (np.float64, rows)}
    for d, dev in enumerate(sim.devices):
        n = _counted_rows(dev.engine.finished)
        if n:
            shapes.update({f"device {d} {c}": (dtype, n) for c, dtype in OP_COUNTER_COLUMNS})
            shapes[f"device {d} order"] = (np.int64, n)

    def make(out: dict[str, np.ndarray]) -> None:
        if "recs" not in prepared:
            prepared["recs"] = [records_of(dev.engine.finished) for dev in sim.devices]
            prepared["replays"] = [_replays(r) for r in prepared["recs"]]
        recs, replays = prepared["recs"], prepared["replays"]
        for d, columns in enumerate(replays):
            if f"device {d} order" in out:
                _op_rows(recs[d], columns, {k[len(f"device {d} "):]: v for k, v in out.items()
                                           if k.startswith(f"device {d} ")})
        sampled.compute(sim, recs, edges, [c.to_ref for c in clocks], replays, tracks, out["ts_ns"][:base],
                        out["value"][:base])
        if links:
            link_counters(sim, links, [c.to_ref for c in clocks], edges, out["ts_ns"][base:], out["value"][base:])

    return Offload(shapes, make)


def _counted_rows(cmds: list[Any]) -> int:
    """How many rows of per-op counters a device's finished commands make: its ops and its
    replays' nodes (counted before its records are made, to size the helper's columns)."""
    return sum(len(c.graph) if c.kind == "graph" else 1 for c in cmds
               if (c.kind == "op" and c.cost is not None) or (c.kind == "graph" and c.graph is not None))


def _op_rows(recs: DeviceRecords, columns: ReplayColumns | None, out: dict[str, np.ndarray]) -> None:
    """The counters of a device's ``ops`` and replay nodes (``columns``) into ``out``'s columns,
    in the order their slices will have in the capture: by unit, then start time (how the
    builder sorts slices that never overlap on a unit's track: one op at a time); ``out["order"]``
    gets each row's place among the ops-then-nodes (as :func:`_device` adds their slices). The
    writer checks that order against the built capture and sorts where it differs."""
    ops = recs.ops
    parts = [counter_columns(recs.cost_columns(), ops.end - ops.start)] if len(ops) else []
    start = [ops.start]
    rank = [np.array([UNITS.index(recs.shapes[k].unit) for k in ops.shape.tolist()], dtype=np.int64)]
    if columns is not None:
        parts.append(replay_counters(columns))
        start.append(columns.start)
        rank.append(columns.units.astype(np.int64))
    order = np.lexsort((np.concatenate(start), np.concatenate(rank)))
    out["order"][:] = order
    for c, _ in OP_COUNTER_COLUMNS:
        np.take(parts[0][c] if len(parts) == 1 else np.concatenate([p[c] for p in parts]), order, out=out[c])


class _DeviceClock:
    """A device's timer as the capture sees it: sync samples taken over the run, the estimate
    made from them, and ``to_ref`` (true host ns → the capture's host timebase via the
    device's ticks and that estimate)."""

    def __init__(self, dev: Device, edges: np.ndarray, start_ns: float, rng: np.random.Generator,
                 jitter_ns: float, period_ns: int) -> None:
        self.clock = dev.clock
        self.samples = take_samples(dev.clock, start_ns, int(edges[-1]), rng, period_ns, jitter_ns=jitter_ns)
        self.estimate = estimate(dev.clock, self.samples)

    def to_ref(self, t: np.ndarray) -> np.ndarray:
        ticks = self.clock.to_ticks(np.rint(np.asarray(t, dtype=np.float64)).astype(np.int64))
        return self.estimate.to_ref(self.clock.ticks_to_device_ns(ticks))


def _replays(recs: DeviceRecords) -> ReplayColumns | None:
    """A device's graph replays as columns (the slices, the counters and the per-op counters
    read them; cost columns are made on first use: by the helper)."""
    graphs = [c for c in recs.rare if c.run is not None]
    if not graphs:
        return None
    return ReplayColumns([c.start_ns for c in graphs], [c.run for c in graphs])


def _device(b: TraceBuilder, batch: TraceBatch, sim: Simulator, dev: Device, recs: DeviceRecords, sub_ids: dict,
            clk: _DeviceClock, columns: ReplayColumns | None) -> tuple[int, int, np.ndarray]:
    """A device's tracks, slices, flows and truth (its sampled counters and its ops' counters
    are made apart, see :func:`_offload`); returns its top track, its clock and the local
    indices of its op slices: its ops', then its replays' nodes' (as :func:`_op_rows` lists them)."""
    samples, est, to_ref = clk.samples, clk.estimate, clk.to_ref
    clock = b.add_clock(f"device {dev.index} timer", False, est.offset_ns, est.drift_ppm, est.error_ns)
    b.add_rows("clock_samples", {"clock": np.full(len(samples.ref_send_ns), clock), "ref_send_ns": samples.ref_send_ns,
                                 "domain_ts": samples.domain_ticks, "ref_recv_ns": samples.ref_recv_ns})
    b.add_truth_clock(clock, *true_alignment(dev.clock))

    d = dev.index
    tracks = DeviceTracks.make(b, d, dev.spec, clock, collective=_uses_collective(recs))
    local = add_records(batch, recs, tracks, to_ref,
                        lambda cid, chunk: sub_ids.get((d, cid, chunk), -1), _flow_to(batch), 0, OpShapes(),
                        counters=False, replays=columns)
    # every gap between ops (no unit busy), with the cause of the op that ends it: the service's rule, at once
    # (with collectives: the compute around them, so that waiting on communication is idle time)
    if tracks.units.get("collective") is None:
        add_idle_rows(b, tracks.top, IdleTruth().gaps(recs.runs(), sim.log.waits, math.inf), to_ref)
    else:  # the compute around the collectives: waiting on communication is idle time
        runs, inner = compute_runs(recs)
        add_idle_rows(b, tracks.top, IdleTruth().gaps(runs, sim.log.waits, math.inf), to_ref)
        add_communication_idle(b, tracks.top, inner, to_ref)
    return tracks.top, clock, local


def _uses_collective(recs: DeviceRecords) -> bool:
    """Whether any op or replay node ran on the collective unit."""
    return (any(recs.shapes[k].unit == "collective" for k in set(recs.ops.shape.tolist()))
            or any("collective" in r.run.units_used for r in recs.rare if r.run is not None))


def _flow_to(batch: TraceBatch) -> Flow:
    """A flow callback that adds to ``batch`` (flow ids are its local indices)."""

    def flow(src: Any, dst: Any, name: str) -> None:
        if isinstance(dst, np.ndarray):
            batch.add_flow_columns(src, dst, name)
        else:
            batch.add_flow(src, dst, name)

    return flow
