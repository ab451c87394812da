"""Per-op hardware counters, computed for many ops at once.

What a real device reports for each dispatched op: elapsed, dispatch, active and busy
cycles, stall cycles by reason, FLOPs, DRAM bytes and burst efficiency. The body's cycles
that are not busy (FLOPs at the unit's peak) are stall cycles: the limiter's term takes
its excess over the busy time; with a latency limiter the floor's excess over the larger
of compute/memory is ``latency`` and the rest goes to whichever of those was larger. Time
an op lost to HBM contention (its actual duration beyond its standalone one) adds memory
stall cycles. Busy + stalls == active and dispatch + active == elapsed (± 1 cycle).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .costs import OpCost

STALL_REASONS = ("memory", "pipeline", "latency")
INT_COUNTERS = ("elapsed_cycles", "dispatch_cycles", "active_cycles", "busy_cycles", "hbm_read_bytes",
                "hbm_write_bytes", *(f"stall_{r}_cycles" for r in STALL_REASONS))
REAL_COUNTERS = ("flops", "burst_efficiency")


@dataclass(frozen=True)
class CostColumns:
    """The cost terms of many ops as columns (what :func:`counter_columns` needs of each)."""

    launch_ns: np.ndarray
    compute_ns: np.ndarray
    memory_ns: np.ndarray
    floor_ns: np.ndarray
    jitter: np.ndarray
    ideal_ns: np.ndarray
    clock_hz: np.ndarray
    dram_read_bytes: np.ndarray  # int64
    dram_write_bytes: np.ndarray  # int64
    useful_bytes: np.ndarray  # the shapes' bytes read + written
    latency_bound: np.ndarray  # bool: the limiter is the latency floor
    flops: np.ndarray

    @classmethod
    def of(cls, costs: Sequence[OpCost]) -> CostColumns:
        """Columns of ``costs`` (read in one pass over them)."""
        rows = [(c.launch_ns, c.compute_ns, c.memory_ns, c.floor_ns, c.jitter, c.ideal_ns, c.clock_hz,
                 c.work.bytes_total, c.work.flops) for c in costs]
        real = np.array(rows, dtype=np.float64).reshape(-1, 9).T.copy()
        dram = np.array([(c.dram_read_bytes, c.dram_write_bytes) for c in costs], dtype=np.int64)
        dram = dram.reshape(-1, 2).T.copy()
        latency = np.array([c.limiter == "latency" for c in costs], dtype=bool)
        return cls(*real[:7], dram[0], dram[1], real[7], latency, real[8])

    def with_rows(self, index: np.ndarray, rows: CostColumns) -> CostColumns:
        """A copy with the rows at ``index`` replaced by ``rows``."""
        out = []
        for f in fields(self):
            col = getattr(self, f.name).copy()
            col[index] = getattr(rows, f.name)
            out.append(col)
        return CostColumns(*out)

    def take(self, index: np.ndarray) -> CostColumns:
        """The rows at ``index`` (fancy indexing of every column)."""
        return CostColumns(*(getattr(self, f.name)[index] for f in fields(self)))

    def __len__(self) -> int:
        return len(self.launch_ns)


def counter_columns(costs: Sequence[OpCost] | CostColumns, actual_ns: np.ndarray | None = None
                    ) -> dict[str, np.ndarray]:
    """Counters of each op in ``costs`` as columns; ``actual_ns`` the ops' real durations
    (default: their standalone durations)."""
    c = costs if isinstance(costs, CostColumns) else CostColumns.of(costs)
    n = len(c)
    # Few temporaries, worked on in place: tens of thousands of ops make each one 0.6 MB of
    # fresh memory, and page faults cost more than the arithmetic.
    launch, compute, memory, floor = c.launch_ns, c.compute_ns, c.memory_ns, c.floor_ns
    jitter, ideal, f = c.jitter, c.ideal_ns, c.clock_hz * 1e-9
    dram_r, dram_w, useful, latency = c.dram_read_bytes, c.dram_write_bytes, c.useful_bytes, c.latency_bound
    inner = np.maximum(compute, memory)
    body = np.maximum(inner, floor)
    body *= jitter
    inner *= jitter
    busy = ideal * jitter
    np.minimum(busy, body, out=busy)
    other = ~latency
    stalls = np.zeros((3, n))  # memory, pipeline, latency
    # latency-floored ops: the floor's excess over the larger of compute/memory is latency stall,
    # what compute/memory exceeds the busy time goes to the larger of them; others: body - busy
    np.maximum(inner, busy, out=stalls[2])
    np.subtract(body, stalls[2], out=stalls[2])
    np.copyto(stalls[2], 0.0, where=other)
    rest = np.subtract(inner, busy, out=inner)
    np.maximum(0.0, rest, out=rest)
    np.subtract(body, busy, out=stalls[0])
    np.copyto(rest, stalls[0], where=other)
    memory_major = memory >= compute
    stalls[0] = 0.0
    np.copyto(stalls[0], rest, where=memory_major)
    np.copyto(stalls[1], rest, where=~memory_major)
    biggest = np.argmax(stalls, axis=0)  # first of memory, pipeline, latency on ties
    duration = np.add(launch, body, out=rest)
    lost = None
    if actual_ns is not None:  # time lost to HBM contention: memory stalls
        lost = np.maximum(0.0, np.asarray(actual_ns) - duration)
        lost *= f
        np.rint(lost, out=lost)
    cycles = {"elapsed_cycles": duration, "dispatch_cycles": launch * f, "active_cycles": body, "busy_cycles": busy}
    for k, v in cycles.items():
        if k != "dispatch_cycles":
            v *= f
        np.rint(v, out=v)
    stalls *= f
    stall_cycles = np.rint(stalls, out=stalls)
    drift = np.subtract(cycles["active_cycles"], cycles["busy_cycles"])
    drift -= stall_cycles.sum(axis=0)
    stall_cycles[biggest, np.arange(n)] += drift
    if lost is not None:
        stall_cycles[0] += lost
        cycles["elapsed_cycles"] += lost
        cycles["active_cycles"] += lost
    out = {k: v.astype(np.int64) for k, v in cycles.items()}
    out.update({f"stall_{r}_cycles": stall_cycles[i].astype(np.int64) for i, r in enumerate(STALL_REASONS)})
    dram = (dram_r + dram_w).astype(np.float64)
    out.update(flops=c.flops, hbm_read_bytes=dram_r, hbm_write_bytes=dram_w,
               burst_efficiency=np.divide(useful, dram, out=np.ones(n), where=dram > 0))
    return out
