"""A device's tracks, and its finished commands as rows (DMA and PCIe slices, sync instants, op
and replay-node slices with arguments, truth, counters and flows): the one conversion the whole
run and the capture service share, so their rows agree by construction."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from accelview.model import TraceBuilder, TrackKind

from ..sim.device.opcounters import counter_columns
from ..sim.device.specs import DeviceSpec
from .batch import TraceBatch
from .graphrows import add_graph_slices
from .records import DeviceRecords, OpShape
from .replays import ReplayColumns

ToRef = Callable[[np.ndarray], np.ndarray]
# flow(src, dst, name): ids in the caller's space (a slice's local index + base); dst one, or an array
Flow = Callable[[int, Any, str], None]


@dataclass
class DeviceTracks:
    """One device's tracks: its own, its execution units' (a unit not made yet is made on first
    use, after the others), its DMA engines' and its PCIe directions'."""

    b: TraceBuilder
    device: int
    top: int
    clock: int
    units: dict[str, int]
    dmas: list[int]
    pcie: dict[str, int]

    @classmethod
    def make(cls, b: TraceBuilder, device: int, spec: DeviceSpec, clock: int, collective: bool = False
             ) -> DeviceTracks:
        """The tracks of ``device`` on ``clock``, in the capture's order: the device, matrix,
        vector (and ``collective`` now, when the caller knows it is used), DMA engines, PCIe."""
        top = b.add_track(f"device {device} ({spec.name})", TrackKind.DEVICE, parent=-1, device=device, clock=clock)
        units = {u: b.add_track(u, TrackKind.EXEC_UNIT, parent=top, device=device, clock=clock)
                 for u in ("matrix", "vector", *(("collective",) if collective else ()))}
        dmas = [b.add_track(f"DMA {i}", TrackKind.DMA_ENGINE, parent=top, device=device, clock=clock)
                for i in range(spec.pcie.dma_engines)]
        pcie = {x: b.add_track(f"PCIe {x.upper()}", TrackKind.PCIE, parent=top, device=device, clock=clock)
                for x in ("h2d", "d2h")}
        return cls(b, device, top, clock, units, dmas, pcie)

    def unit(self, name: str) -> int:
        """The track of an execution unit."""
        track = self.units.get(name)
        if track is None:
            track = self.units[name] = self.b.add_track(name, TrackKind.EXEC_UNIT, parent=self.top,
                                                        device=self.device, clock=self.clock)
        return track


@dataclass(frozen=True, slots=True)
class _Shape:
    """What an op's slice and counters take from its shape, with the track of its unit."""

    track: int
    shape: OpShape


class OpShapes:
    """The :class:`_Shape` of each op shape key seen (an op costed outside the runtime's cache,
    a negative key, gets one of its own each time)."""

    def __init__(self) -> None:
        self._known: dict[int, _Shape] = {}

    def of(self, key: int, shapes: dict[int, OpShape], unit: Callable[[str], int]) -> _Shape:
        """The shape row of ``key`` (made on first sight of it)."""
        row = self._known.get(key)
        if row is None:
            shape = shapes[key]
            row = _Shape(unit(shape.unit), shape)
            if key >= 0:
                self._known[key] = row
        return row


def add_records(batch: TraceBatch, recs: DeviceRecords, tracks: DeviceTracks, to_ref: ToRef,
                sub_of: Callable[[int, int], int], flow: Flow, base: int, shapes: OpShapes, *, pcie: bool = True,
                truth: bool = True, counters: bool = True, replays: ReplayColumns | None = None) -> np.ndarray:
    """Rows of a device's finished records: copies and instants in finishing order, then ops, then
    replay nodes (``sub_of(cid, chunk)``: a submission's flow id, -1 none; a slice's flow id is its
    local index + ``base``). Returns the local indices of the op slices, then of the nodes."""
    graphs = [r for r in recs.rare if r.run is not None]
    rare = [r for r in recs.rare if r.run is None]
    # the rare commands' times as Python numbers (a numpy scalar per field costs more than the row)
    starts = to_ref(np.array([r.start_ns for r in rare])).tolist()
    ends = to_ref(np.array([r.end_ns for r in rare])).tolist()
    data_starts = to_ref(np.array([_or0(r.data_start_ns) for r in rare])).tolist()
    data_ends = to_ref(np.array([_or0(r.data_end_ns) for r in rare])).tolist()
    for c, s, e, ds, de in zip(rare, starts, ends, data_starts, data_ends, strict=True):
        kind = c.kind
        s, e = int(s), int(e)
        sub = sub_of(c.cid, int(c.args.get("chunk", -1)))
        if kind != "copy":
            batch.add_instant(tracks.top, s, "event recorded" if kind == "record" else "event waited", "sync",
                              args={"stream": c.stream})
            continue
        job = c.job
        args = dict(c.args, direction=c.direction, engine=c.engine)
        if job is not None:
            args.update(descriptors=job.descriptors, tlps=job.data_tlps, wire_bytes=job.data_wire_bytes)
        sid = batch.add_slice(tracks.dmas[c.engine], s, e - s, c.name, "copy", correlation=c.cid, args=args)
        if pcie and c.direction in tracks.pcie and not math.isnan(c.data_start_ns):
            ds, de = int(ds), int(de)
            pid = batch.add_slice(tracks.pcie[c.direction], ds, de - ds, c.name, "pcie", correlation=c.cid,
                                  args={"bytes": job.nbytes if job else 0})
            flow(base + sid, base + pid, "transfer")
        if sub >= 0:
            flow(sub, base + sid, "execute")
    local = [_add_ops(batch, recs, tracks, to_ref, sub_of, flow, base, shapes, truth, counters)]
    if graphs:
        nodes = add_graph_slices(batch, graphs, tracks.unit, to_ref, truth, replays, counters=counters)
        subs = np.array([sub_of(c.cid, -1) for c in graphs], dtype=np.int64)
        linked = subs >= 0
        if linked.any():  # one chunk of flows for all replays
            flow(np.repeat(subs[linked], [len(n) for n, ok in zip(nodes, linked.tolist(), strict=True) if ok]),
                 base + np.concatenate([n for n, ok in zip(nodes, linked.tolist(), strict=True) if ok]), "execute")
        local += nodes
    return np.concatenate(local)


def _add_ops(batch: TraceBatch, recs: DeviceRecords, tracks: DeviceTracks, to_ref: ToRef,
             sub_of: Callable[[int, int], int], flow: Flow, base: int, shapes: OpShapes, truth: bool,
             counters: bool) -> np.ndarray:
    """Op slices with their argument sets (one per argument dict and shape), truth, counters and
    flows, as column chunks; returns their local indices."""
    ops = recs.ops
    if not len(ops):
        return np.empty(0, np.int64)
    unit, table = tracks.unit, recs.shapes
    rows = [shapes.of(k, table, unit) for k in ops.shape.tolist()]
    made: dict[tuple[int, int], int] = {}  # (id of an op's argument dict, its shape row) → its set
    sets = []
    add_args = batch.add_args
    for a, row in zip(ops.args, rows, strict=True):
        key = (id(a), id(row))  # both live as long as the call: their ids are theirs
        set_id = made.get(key)
        if set_id is None:
            set_id = made[key] = add_args({**a, **row.shape.args})
        sets.append(set_id)
    s, e = to_ref(ops.start).astype(np.int64), to_ref(ops.end).astype(np.int64)
    intern = batch.intern
    first = batch.add_slice_columns(np.array([r.track for r in rows], dtype=np.int32), s, e - s,
                                    np.array([intern(x) for x in ops.name], dtype=np.int32), "op", ops.cid,
                                    np.array(sets, dtype=np.int32))
    local = first + np.arange(len(ops))
    if counters:
        batch.add_op_counters(local, counter_columns(recs.cost_columns(), ops.end - ops.start))
    if truth:
        batch.add_truth_op_columns(local, np.array([intern(r.shape.limiter) for r in rows], dtype=np.int64))
    subs = np.array([sub_of(cid, -1) for cid in ops.cid.tolist()], dtype=np.int64)
    linked = subs >= 0
    if linked.any():
        flow(subs[linked], base + local[linked], "execute")
    return local


def _or0(t: float) -> float:
    """A time, or 0 for a phase the command never had (NaN)."""
    return 0.0 if math.isnan(t) else t
