"""A finished session's sampled counters as the rows of one counters table, made on a second
core when that is safe.

Most rows of a simulated capture's counters table are sampled: per device, the eleven
series of :mod:`.devcounters` (busy, HBM, PCIe ...) and each driver queue's depth, one
sample per counter period (the llm benchmark's 0.94 s at 10 us: 1.1M rows). They depend on
the finished session only, not on the capture's other rows, so :func:`start` forks a helper
that computes them into shared memory while the trace writer makes the slices, arguments and
flows, and :meth:`Pending.result` takes them at the end. Where forking is not safe
(:func:`~accelview.model.forking.fork_safe`: another thread running, not Linux, one CPU) or
not worth it (a small capture), or the helper fails, the same function runs in this process:
the rows are the same either way (tested).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from accelview.model.forking import fork_safe, release

from .devcounters import SERIES, device_counters
from .graph import ReplayColumns
from .sampling import level_at

if TYPE_CHECKING:
    from .runtime import Simulator

MIN_ROWS = 200_000  # fewer sampled rows than this are made in this process (a fork costs a few ms)
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


def compute(sim: Simulator, edges: np.ndarray, to_ref: Sequence[ToRef], replays: Sequence[ReplayColumns | None],
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
        cmds = dev.engine.finished
        if any(t.stream < 0 for t in mine):
            stamps = to_ref[d](starts)
            series = device_counters(dev.spec, cmds, edges, replays[d])
            for s in series:
                ts[at:at + n] = stamps  # float times truncated, as the builder's add_counters does
                value[at:at + n] = s.values
                at += n
        for t in mine:
            if t.stream >= 0:
                queued = [c for c in cmds if c.stream == t.stream]
                ts[at:at + n] = starts
                value[at:at + n] = level_at(np.array([c.submit_ns for c in queued]),
                                            np.array([c.end_ns for c in queued]), starts)
                at += n


class Pending:
    """Sampled rows being made (by a forked helper, or later here); :meth:`result` gives them."""

    def __init__(self, rows: int, make: Callable[[np.ndarray, np.ndarray], None], fork: bool) -> None:
        self.rows, self._make = rows, make
        self._pid, self._pipe, self._shm = 0, -1, None
        self.forked = fork  # whether a helper process was asked to make the rows
        if fork:
            self._start()

    def _start(self) -> None:
        shm = mmap.mmap(-1, max(1, 16 * self.rows))  # ts then value; shared with the helper, anonymous
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the helper: fill the shared columns, say so, leave without the parent's exit handlers
            ok = b"\0"
            try:
                os.close(r)
                self._make(*self._views(shm))
                ok = b"\1"
            finally:
                try:
                    os.write(w, ok)
                finally:
                    os._exit(0)
        os.close(w)
        self._pid, self._pipe, self._shm = pid, r, shm

    def _views(self, shm: mmap.mmap) -> tuple[np.ndarray, np.ndarray]:
        n = self.rows
        return (np.frombuffer(shm, dtype=np.int64, count=n),
                np.frombuffer(shm, dtype=np.float64, count=n, offset=8 * n))

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows' ``ts_ns`` (int64) and ``value`` (float64) columns; waits for the helper, and
        makes them here when there is none or it failed."""
        if self._pid > 0:
            try:
                ok = os.read(self._pipe, 1) == b"\1"  # b"" when the helper died
            finally:
                os.close(self._pipe)
                release(self._pid)
                self._pid = 0
            if ok and self._shm is not None:
                return self._views(self._shm)
        ts, value = np.empty(self.rows, dtype=np.int64), np.empty(self.rows, dtype=np.float64)
        self._make(ts, value)
        return ts, value


def start(sim: Simulator, edges: np.ndarray, to_ref: Sequence[ToRef], replays: Sequence[ReplayColumns | None],
          tracks: Sequence[CounterTrack], fork: bool | None = None) -> Pending:
    """Begin making the rows of ``tracks`` (see :func:`compute`); ``fork``: whether in a helper
    process (None: when safe and worth it)."""
    rows = len(tracks) * (len(edges) - 1)
    if fork is None:
        fork = rows >= MIN_ROWS and fork_safe()
    return Pending(rows, lambda ts, value: compute(sim, edges, to_ref, replays, tracks, ts, value), fork)
