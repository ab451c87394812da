"""Incremental versions of the simulator's whole-run summaries: sampled counters, queue depth
and idle-time truth, emitted as the run goes.

All three need to know that nothing more can happen before some time. The drain's
*horizon* of a device gives that (:func:`accelview.capture.sim.runtime.drain.horizon`): every
command starting before it has been seen. Each summary keeps the few commands that reach
past what it has emitted and carries them into the next drain, so its memory is bounded by
the work in flight, not by the length of the run.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence

import numpy as np
from accelview.model import TraceBuilder

from ..sim.device.specs import DeviceSpec
from .devcounters import CounterSeries, device_counters
from .records import DeviceRecords, concat


class CounterWindows:
    """Sampled device counters over ``[start + k·period, start + (k+1)·period)``, window by window."""

    def __init__(self, spec: DeviceSpec, start_ns: int, period_ns: int) -> None:
        self.spec, self.start, self.period = spec, int(start_ns), int(period_ns)
        self.done = 0  # windows emitted
        self.carry: DeviceRecords | None = None

    def emit(self, records: DeviceRecords, horizon: float, end_ns: float | None = None
             ) -> tuple[np.ndarray, list[CounterSeries]]:
        """Windows now complete: their start times (true host ns) and the series over them.
        ``end_ns``: the run is over and ends there (emit the last, partial window too)."""
        cmds = concat([records] if self.carry is None else [self.carry, records])
        if end_ns is not None:
            last = max(1, math.ceil((end_ns - self.start) / self.period))
        else:
            last = int((horizon - self.start) // self.period) if horizon < math.inf else self.done
        if last <= self.done:
            self.carry = cmds
            return np.empty(0), []
        edges = self.start + self.period * np.arange(self.done, last + 1, dtype=np.float64)
        series = device_counters(self.spec, cmds, edges)
        self.done = last
        cut = float(edges[-1])
        self.carry = cmds.ending_after(cut)
        return edges[:-1], series


class QueueDepth:
    """Commands submitted and not finished on one driver queue, at each window start."""

    def __init__(self) -> None:
        self.level = 0
        self.ups: list[float] = []
        self.downs: list[float] = []

    def add(self, submits: Sequence[float], ends: Sequence[float]) -> None:
        """Submissions and completions seen in this drain."""
        self.ups.extend(submits)
        self.downs.extend(ends)

    def at(self, times: np.ndarray) -> np.ndarray:
        """The depth at ``times`` (ascending, all before the horizon); forgets what lies before them."""
        if not len(times):
            return np.empty(0)
        ups, downs = np.sort(np.asarray(self.ups)), np.sort(np.asarray(self.downs))
        depth = self.level + np.searchsorted(ups, times, side="right") - np.searchsorted(downs, times, side="right")
        t = float(times[-1])
        self.level += int(np.searchsorted(ups, t, side="right") - np.searchsorted(downs, t, side="right"))
        self.ups = ups[ups > t].tolist()
        self.downs = downs[downs > t].tolist()
        return depth.astype(np.float64)


class IdleTruth:
    """Every gap between a device's ops (no unit busy) with the cause of the op that ends it —
    the same rule as the whole-run writer, applied to ops in start order as they become final."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, float, str]] = []  # (start, end, cause) of ops and replays
        self.busy_until: float | None = None
        self.waits: list[tuple[int, int]] = []

    def gaps(self, ops: Sequence[tuple[float, float, str]], waits: Sequence[tuple[int, int]], horizon: float
             ) -> list[tuple[float, float, str]]:
        """Gaps now final: (start, end, cause) in true host ns."""
        self.pending.extend(ops)
        self.waits.extend(waits)
        ready = sorted((c for c in self.pending if c[0] < horizon), key=lambda c: c[0])
        self.pending = [c for c in self.pending if c[0] >= horizon]
        out: list[tuple[float, float, str]] = []
        waited = wait_cover(self.waits)  # not a scan of every wait per gap: a sync per op made that quadratic
        for start, end, cause in ready:
            if self.busy_until is None:
                self.busy_until = end
                continue
            if start > self.busy_until:
                cause = cause if cause in ("host", "pcie", "sync", "communication") else "sync"
                if cause == "host" and waited(self.busy_until, start):
                    cause = "sync"
                out.append((self.busy_until, start, cause))
            self.busy_until = max(self.busy_until, end)
        if self.busy_until is not None:  # a wait ending before busy_until can never match again
            self.waits = [w for w in self.waits if w[1] >= self.busy_until]
        return out


def add_idle_rows(b: TraceBuilder, track: int, gaps: Sequence[tuple[float, float, str]],
                  to_ref: Callable[[np.ndarray], np.ndarray]) -> None:
    """``truth_idle`` rows of ``gaps`` (true host ns, converted by ``to_ref``) on a device's
    ``track``; a gap the conversion closes is left out (its cause is not interned)."""
    if not gaps:
        return
    g0 = to_ref(np.array([g[0] for g in gaps]))
    g1 = to_ref(np.array([g[1] for g in gaps]))
    keep = np.flatnonzero(g1 > g0)
    if not len(keep):
        return
    causes = [gaps[i][2] for i in keep.tolist()]
    ids = {c: b.strings.intern(c) for c in dict.fromkeys(causes)}  # in order of first appearance
    b.add_rows("truth_idle", {"track": np.full(len(keep), track, np.int32), "start_ns": g0[keep],
                              "end_ns": g1[keep], "cause": np.array([ids[c] for c in causes], dtype=np.int32)})


def wait_cover(waits: Sequence[tuple[int, int]]) -> Callable[[float, float], bool]:
    """``waited(a, b)``: whether the host was blocked in a wait that began by ``b`` and lasted
    until ``a`` or later (a wait covering a gap [a, b) on the device); a binary search a question."""
    if not waits:
        return lambda a, b: False
    w = np.array(waits, dtype=np.float64).reshape(-1, 2)
    order = np.argsort(w[:, 0], kind="stable")
    begins = w[order, 0].tolist()
    latest_end = np.maximum.accumulate(w[order, 1]).tolist()  # of the waits begun so far

    def waited(a: float, b: float) -> bool:
        i = bisect.bisect_right(begins, b) - 1
        return i >= 0 and latest_end[i] >= a

    return waited
