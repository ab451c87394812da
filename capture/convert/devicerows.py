"""One device's side of the streaming capture: what it keeps from drain to drain (its tracks,
running clock estimate, counter windows, idle truth and dropped records); its rows are made by
:mod:`.deviceslices`, as the whole run's are."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from accelview.model import TraceBuilder

from .batch import TraceBatch
from .clocktrack import ClockTracker
from .deviceslices import DeviceTracks, OpShapes, add_records
from .records import DeviceRecords
from .summaries import CounterWindows, IdleTruth, add_idle_rows

if TYPE_CHECKING:
    from ..protocol.config import CaptureConfig
    from ..sim.runtime.simulator import Device


class DeviceRows:
    """Tracks and per-drain conversion of one device's records."""

    def __init__(self, meta: TraceBuilder, dev: Device, clock_id: int, start_ns: int, seed: int,
                 config: CaptureConfig) -> None:
        self.dev, self.index, self.clock_id, self.config, self.meta = dev, dev.index, clock_id, config, meta
        self.clock = ClockTracker(dev.clock, start_ns, np.random.default_rng([seed, 2, dev.index]))
        self.tracks = DeviceTracks.make(meta, dev.index, dev.spec, clock_id)  # the collective unit's on first use
        self.top = self.tracks.top
        self.shapes = OpShapes()
        self.counter_tracks: dict[str, int] = {}
        self.windows = CounterWindows(dev.spec, start_ns, config.counter_period_ns)
        self.idle = IdleTruth()
        self.dropped = 0

    def add_slices(self, batch: TraceBatch, recs: DeviceRecords, sub_of: Callable[[int, int, int], int],
                   flow: Callable[[int, Any, str], None], local_to_global: int) -> None:
        """Slices, instants and in-drain flows of finished commands; ``sub_of(device, cid, chunk)``
        gives the global id of their submission (or -1), ``flow(src, dst, name)`` takes global ids
        (``dst`` an int, or an array of them)."""
        cfg = self.config
        ring = cfg.ring_records
        records = np.cumsum(recs.record_counts())
        if len(recs) and records[-1] > ring:  # the ring overflowed between two drains: the newest records are lost
            keep = int(np.searchsorted(records, ring, side="right"))  # whole commands only
            lost = recs.ops.take(recs.ops.seq >= keep)
            for cid, a in zip(lost.cid.tolist(), lost.args, strict=True):
                sub_of(self.index, cid, int(a.get("chunk", -1)))
            for c in recs.rare:
                if c.seq >= keep:
                    sub_of(self.index, c.cid, int(c.args.get("chunk", -1)))
            self.dropped += int(records[-1]) - (int(records[keep - 1]) if keep else 0)
            recs = recs.head(keep)
        if not len(recs):
            return
        index = self.index
        add_records(batch, recs, self.tracks, self.clock.to_ref, lambda cid, chunk: sub_of(index, cid, chunk), flow,
                    local_to_global, self.shapes, pcie=cfg.on("pcie"), truth=cfg.on("truth"), counters=True)

    def add_counters(self, b: TraceBuilder, recs: DeviceRecords, horizon: float,
                     end_ns: float | None) -> np.ndarray:
        """Sampled counters of the windows now complete; returns the windows' starts (true host ns)."""
        at, series = self.windows.emit(recs, horizon, end_ns)
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

    def add_idle_truth(self, b: TraceBuilder, recs: DeviceRecords, waits: Sequence[tuple[int, int]],
                       horizon: float) -> None:
        """Idle intervals now final, with their true cause."""
        add_idle_rows(b, self.top, self.idle.gaps(recs.runs(), waits, horizon),
                      self.clock.to_ref)


