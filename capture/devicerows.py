"""One device's side of the streaming capture: its tracks, and its finished commands as rows.

Device records are what a real driver's ring buffers hold: op and DMA slices in device
ticks, converted to the host timebase through the running clock estimate
(:mod:`.clocktrack`). Per-op hardware counters join each op's argument set; sampled
counters, queue depth and idle truth come from :mod:`.windows`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from accelview.model import TraceBuilder, TrackKind

from .clocktrack import ClockTracker
from .sim.batch import TraceBatch
from .sim.engine import Command
from .sim.graphrows import add_graph_slices
from .sim.opcounters import counter_columns
from .windows import CounterWindows, IdleTruth

if TYPE_CHECKING:
    from .config import CaptureConfig
    from .sim.runtime import Device


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
        dstarts = to_ref(np.array([0.0 if math.isnan(c.data_start_ns) else c.data_start_ns for c in cmds])).tolist()
        dends = to_ref(np.array([0.0 if math.isnan(c.data_end_ns) else c.data_end_ns for c in cmds])).tolist()
        pcie_on, truth_on = cfg.on("pcie"), cfg.on("truth")
        ops_i = [i for i, c in enumerate(cmds) if c.kind == "op" and c.cost is not None]
        if ops_i:  # the bulk of a capture: in columns
            ops = [cmds[i] for i in ops_i]
            costs = [c.cost for c in ops if c.cost is not None]
            add_args = batch.add_args
            sets = [add_args({**c.args, "bytes_read": c.cost.bytes_read, "bytes_written": c.cost.bytes_written,
                              "dtype": c.cost.work.dtype}) for c in ops if c.cost is not None]
            first = batch.add_slice_rows([self.unit_track(c.unit) for c in costs],
                                         [starts[i] for i in ops_i], [ends[i] - starts[i] for i in ops_i],
                                         [c.name for c in ops], "op", [c.cid for c in ops], sets)
            batch.add_op_counters(first + np.arange(len(ops)),
                                  counter_columns(costs, np.array([c.end_ns - c.start_ns for c in ops])))
            if truth_on:
                intern = batch.intern
                batch.truth_ops.extend((first + j, intern(c.limiter)) for j, c in enumerate(costs))
            for j, c in enumerate(ops):
                sub = sub_of(self.index, c.cid, -1)
                if sub >= 0:
                    flow(sub, local_to_global + first + j, "execute")
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
                    pid = batch.add_slice(self.pcie[c.direction], dstarts[i], dends[i] - dstarts[i], c.name, "pcie",
                                          correlation=c.cid, args={"bytes": job.nbytes if job else 0})
                    flow(local_to_global + sid, local_to_global + pid, "transfer")
                sub = sub_of(self.index, c.cid, int(c.args.get("chunk", -1)))
                if sub >= 0:
                    flow(sub, local_to_global + sid, "execute")
            else:
                batch.add_instant(self.top, s, "event recorded" if c.kind == "record" else "event waited", "sync",
                                  args={"stream": c.stream})
                sub_of(self.index, c.cid, int(c.args.get("chunk", -1)))

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
