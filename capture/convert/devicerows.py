"""One device's side of the streaming capture: its tracks, and its finished commands as rows.

Device records are what a real driver's ring buffers hold: op and DMA slices in device
ticks, converted to the host timebase through the running clock estimate
(:mod:`.clocktrack`). Per-op hardware counters join each op's argument set; sampled
counters, queue depth and idle truth come from :mod:`.windows`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from accelview.model import TraceBuilder, TrackKind

from ..sim.device.command import Command
from ..sim.device.opcounters import CostColumns, counter_columns
from .batch import TraceBatch
from .clocktrack import ClockTracker
from .graphrows import add_graph_slices
from .summaries import CounterWindows, IdleTruth

# a shape's row (DeviceRows._shape_row): unit track, limiter's string id, arguments, cost constants
_TRACK, _LIMITER, _ARGS, _CONSTS = range(4)
_COST_FIELDS = ("launch_ns", "compute_ns", "memory_ns", "floor_ns", "ideal_ns", "clock_hz", "dram_read_bytes",
                "dram_write_bytes", "useful_bytes", "latency_bound", "flops")

if TYPE_CHECKING:
    from ..protocol.config import CaptureConfig
    from ..sim.device.costs import OpCost
    from ..sim.runtime.simulator import Device


class DeviceRows:
    """Tracks and per-drain conversion of one device's records."""

    def __init__(self, meta: TraceBuilder, dev: Device, clock_id: int, start_ns: int, seed: int,
                 config: CaptureConfig) -> None:
        self.dev, self.index, self.clock_id, self.config, self.meta = dev, dev.index, clock_id, config, meta
        self.clock = ClockTracker(dev.clock, start_ns, np.random.default_rng([seed, 2, dev.index]))
        d = dev.index
        self.top = meta.add_track(f"device {d} ({dev.spec.name})", TrackKind.DEVICE, parent=-1, device=d,
                                  clock=clock_id)
        self.units = {u: meta.add_track(u, TrackKind.EXEC_UNIT, parent=self.top, device=d, clock=clock_id)
                      for u in ("matrix", "vector")}
        self.dmas = [meta.add_track(f"DMA {i}", TrackKind.DMA_ENGINE, parent=self.top, device=d, clock=clock_id)
                     for i in range(dev.spec.pcie.dma_engines)]
        self.pcie = {x: meta.add_track(f"PCIe {x.upper()}", TrackKind.PCIE, parent=self.top, device=d,
                                       clock=clock_id) for x in ("h2d", "d2h")}
        self.counter_tracks: dict[str, int] = {}
        self.windows = CounterWindows(dev.spec, start_ns, config.counter_period_ns)
        self.idle = IdleTruth()
        self.dropped = 0
        self._shapes: dict[int, tuple[Any, ...]] = {}  # op shape number → what its ops share (_shape_row)

    def unit_track(self, unit: str) -> int:
        """The track of an execution unit (the collective unit's appears on first use)."""
        if unit not in self.units:
            self.units[unit] = self.meta.add_track(unit, TrackKind.EXEC_UNIT, parent=self.top, device=self.index,
                                                   clock=self.clock_id)
        return self.units[unit]

    def add_slices(self, batch: TraceBatch, cmds: Sequence[Command], sub_of: Callable[[int, int, int], int],
                   flow: Callable[[int, Any, str], None], local_to_global: int) -> None:
        """Slices, instants and in-drain flows of finished commands; ``sub_of(device, cid, chunk)``
        gives the global id of their submission (or -1), ``flow(src, dst, name)`` takes global ids
        (``dst`` an int, or an array of them for a graph replay's nodes)."""
        cfg = self.config
        ring = cfg.ring_records
        records = np.cumsum([c.records for c in cmds])
        if len(cmds) and records[-1] > ring:  # the ring overflowed between two drains: the newest records are lost
            keep = int(np.searchsorted(records, ring, side="right"))  # whole commands only
            for c in cmds[keep:]:
                sub_of(self.index, c.cid, int(c.args.get("chunk", -1)))
            self.dropped += int(records[-1]) - (int(records[keep - 1]) if keep else 0)
            cmds = cmds[:keep]
        if not cmds:
            return
        to_ref = self.clock.to_ref
        starts = to_ref(np.array([c.start_ns for c in cmds])).tolist()
        ends = to_ref(np.array([c.end_ns for c in cmds])).tolist()
        pcie_on, truth_on = cfg.on("pcie"), cfg.on("truth")
        ops_i = [i for i, c in enumerate(cmds) if c.kind == "op" and c.cost is not None]
        if ops_i:  # the bulk of a capture: in columns, what depends on an op's shape looked up once a shape
            self._add_ops(batch, [cmds[i] for i in ops_i], [starts[i] for i in ops_i], [ends[i] for i in ops_i],
                          sub_of, flow, local_to_global, truth_on)
        others = [i for i, c in enumerate(cmds) if not c.runs_ops]
        dstarts = to_ref(np.array([_or0(cmds[i].data_start_ns) for i in others])).tolist()
        dends = to_ref(np.array([_or0(cmds[i].data_end_ns) for i in others])).tolist()
        data = dict(zip(others, zip(dstarts, dends, strict=True), strict=True))
        replays = [c for c in cmds if c.kind == "graph" and c.graph is not None]
        for c, local in zip(replays, add_graph_slices(batch, replays, self.unit_track, self.clock.to_ref, truth_on),
                            strict=True):
            sub = sub_of(self.index, c.cid, -1)
            if sub >= 0:
                flow(sub, local_to_global + local, "execute")
        for i, c in enumerate(cmds):
            if c.kind == "op" and c.cost is not None:
                continue
            if c.kind == "graph" and c.graph is not None:
                continue
            s, e = starts[i], ends[i]
            if c.kind == "copy":
                job = c.job
                args = dict(c.args, direction=c.direction, engine=c.engine)
                if job is not None:
                    args.update(descriptors=job.descriptors, tlps=job.data_tlps, wire_bytes=job.data_wire_bytes)
                sid = batch.add_slice(self.dmas[c.engine], s, e - s, c.name, "copy", correlation=c.cid, args=args)
                if pcie_on and c.direction in self.pcie and not math.isnan(c.data_start_ns):
                    ds, de = data[i]
                    pid = batch.add_slice(self.pcie[c.direction], ds, de - ds, c.name, "pcie",
                                          correlation=c.cid, args={"bytes": job.nbytes if job else 0})
                    flow(local_to_global + sid, local_to_global + pid, "transfer")
                sub = sub_of(self.index, c.cid, int(c.args.get("chunk", -1)))
                if sub >= 0:
                    flow(sub, local_to_global + sid, "execute")
            else:
                batch.add_instant(self.top, s, "event recorded" if c.kind == "record" else "event waited", "sync",
                                  args={"stream": c.stream})
                sub_of(self.index, c.cid, int(c.args.get("chunk", -1)))

    def _add_ops(self, batch: TraceBatch, ops: list[Command], starts: list[float], ends: list[float],
                 sub_of: Callable[[int, int, int], int], flow: Callable[[int, Any, str], None],
                 local_to_global: int, truth_on: bool) -> None:
        """Op slices (host times ``starts``/``ends``), their argument sets, counters, truth and flows."""
        costs = [c.cost for c in ops]
        known, row_of = self._shapes, self._shape_row
        rows = [known.get(c.shape) or row_of(c) for c in costs]  # type: ignore[union-attr]
        made: dict[tuple[int, int], int] = {}  # (id of an op's argument dict, shape) → its set
        sets = []
        for c, cost, row in zip(ops, costs, rows, strict=True):
            key = (id(c.args), cost.shape)  # type: ignore[union-attr]
            set_id = made.get(key)
            if set_id is None:
                set_id = made[key] = batch.add_args({**c.args, **row[_ARGS]})
            sets.append(set_id)
        first = batch.add_slice_rows([r[_TRACK] for r in rows], starts, list(map(operator.sub, ends, starts)),
                                     [c.name for c in ops], "op", [c.cid for c in ops], sets)
        consts = np.array([r[_CONSTS] for r in rows], dtype=np.float64).reshape(-1, len(_COST_FIELDS)).T
        cols = dict(zip(_COST_FIELDS, consts, strict=True))
        columns = CostColumns(cols["launch_ns"], cols["compute_ns"], cols["memory_ns"], cols["floor_ns"],
                              np.array([c.jitter for c in costs]), cols["ideal_ns"], cols["clock_hz"],  # type: ignore[union-attr]
                              cols["dram_read_bytes"].astype(np.int64), cols["dram_write_bytes"].astype(np.int64),
                              cols["useful_bytes"], cols["latency_bound"] != 0, cols["flops"])
        batch.add_op_counters(first + np.arange(len(ops)),
                              counter_columns(columns, np.array([c.end_ns - c.start_ns for c in ops])))
        if truth_on:
            batch.truth_ops.extend((first + j, r[_LIMITER]) for j, r in enumerate(rows))
        index = self.index
        found = [(sub, local_to_global + first + j) for j, sub in enumerate(sub_of(index, c.cid, -1) for c in ops)
                 if sub >= 0]
        if found:
            src, dst = np.array(found, dtype=np.int64).reshape(-1, 2).T
            flow(src, dst, "execute")

    def _shape_row(self, cost: OpCost) -> tuple[Any, ...]:
        """What an op's slice and counters take from its cost that all ops of its shape share
        (kept per shape number; an op costed outside the runtime's cache has none)."""
        work = cost.work
        row = (self.unit_track(work.unit), self.meta.strings.intern(cost.limiter),
               {"bytes_read": cost.bytes_read, "bytes_written": cost.bytes_written, "dtype": work.dtype},
               (cost.launch_ns, cost.compute_ns, cost.memory_ns, cost.floor_ns, cost.ideal_ns, cost.clock_hz,
                cost.dram_read_bytes, cost.dram_write_bytes, work.bytes_total, cost.limiter == "latency", work.flops))
        if cost.shape >= 0:
            self._shapes[cost.shape] = row
        return row

    def add_counters(self, b: TraceBuilder, cmds: Sequence[Command], horizon: float,
                     end_ns: float | None) -> np.ndarray:
        """Sampled counters of the windows now complete; returns the windows' starts (true host ns)."""
        at, series = self.windows.emit(cmds, horizon, end_ns)
        if not len(at):
            return at
        ts = self.clock.to_ref(at)
        for s in series:
            track = self.counter_tracks.get(s.name)
            if track is None:
                track = self.meta.add_counter_track(f"device {self.index} {s.name}", s.unit, s.block, s.description,
                                                    parent=self.top, device=self.index, clock=self.clock_id)
                self.counter_tracks[s.name] = track
            b.add_counters(track, ts, s.values)
        return at

    def add_idle_truth(self, b: TraceBuilder, cmds: Sequence[Command], waits: Sequence[tuple[int, int]],
                       horizon: float) -> None:
        """Idle intervals now final, with their true cause."""
        gaps = self.idle.gaps([c for c in cmds if c.runs_ops], waits, horizon)
        if not gaps:
            return
        g0 = self.clock.to_ref(np.array([g[0] for g in gaps]))
        g1 = self.clock.to_ref(np.array([g[1] for g in gaps]))
        causes = np.array([b.strings.intern(g[2]) for g in gaps], dtype=np.int32)
        keep = g1 > g0
        b.add_rows("truth_idle", {"track": np.full(int(keep.sum()), self.top, np.int32), "start_ns": g0[keep],
                                  "end_ns": g1[keep], "cause": causes[keep]})


def _or0(t: float) -> float:
    """A time, or 0 for a phase the command never had (NaN)."""
    return 0.0 if math.isnan(t) else t
