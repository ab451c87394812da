"""A finished session's sampled counters as the rows of one counters table.

The counters table of a simulated capture is all sampled: per device, the eleven series of
:mod:`.devcounters` (busy, HBM, PCIe ...) and each driver queue's depth, one sample per
counter period (the llm benchmark's 0.94 s at 10 us: 1.1M rows). :func:`plan` lists the
tracks in the order the capture makes them, :func:`compute` writes their samples; they depend
on the finished session only, so the trace writer has a forked helper compute them
(:mod:`.offload`) while it makes the other rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..sim.device.window_sums import level_at
from .devcounters import SERIES, device_counters
from .records import DeviceRecords
from .replays import ReplayColumns

if TYPE_CHECKING:
    from ..sim.runtime.simulator import Simulator

ToRef = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class CounterTrack:
    """One sampled counter track: a device counter (``stream`` -1) or a queue's depth."""

    device: int
    stream: int
    name: str
    unit: str
    block: str
    description: str


def plan(sim: Simulator, queues: Sequence[tuple[int, int]]) -> list[CounterTrack]:
    """The sampled counter tracks of ``sim`` in the order the capture makes them: per device its
    series, then the depth of each of its ``queues`` ((device, stream), in order of first use)."""
    out = []
    for dev in sim.devices:
        d = dev.index
        out += [CounterTrack(d, -1, f"device {d} {name}", unit, block, text) for name, unit, block, text in SERIES]
        out += [CounterTrack(d, s, f"device {d} queue {s} depth", "entries", "driver",
                             "commands submitted and not finished") for qd, s in queues if qd == d]
    return out


def compute(sim: Simulator, recs: Sequence[DeviceRecords], edges: np.ndarray, to_ref: Sequence[ToRef],
            replays: Sequence[ReplayColumns | None],
            tracks: Sequence[CounterTrack], ts: np.ndarray, value: np.ndarray) -> None:
    """Write the samples of ``tracks`` (from :func:`plan`) into ``ts`` and ``value``, track after
    track, one per window between ``edges`` (true host ns). Device counters are stamped at their
    windows' starts converted by the device's ``to_ref`` (its clock as the capture estimates
    it), queue depths at the starts themselves (the driver's host clock)."""
    n = len(edges) - 1
    starts = edges[:-1]
    at = 0
    for dev in sim.devices:
        d = dev.index
        mine = [t for t in tracks if t.device == d]
        if not mine:
            continue
        r = recs[d]
        if any(t.stream < 0 for t in mine):
            k = len(SERIES)
            device_counters(dev.spec, r, edges, replays[d], value[at:at + k * n].reshape(k, n))
            stamps = ts[at:at + k * n].reshape(k, n)
            stamps[0] = to_ref[d](starts)  # float times truncated, as the builder's add_counters does
            stamps[1:] = stamps[0]
            at += k * n
        for t in mine:
            if t.stream >= 0:
                assert r.queued is not None
                stream, submit, end = r.queued
                mine_q = stream == t.stream
                ts[at:at + n] = starts
                value[at:at + n] = level_at(submit[mine_q], end[mine_q], starts)
                at += n
