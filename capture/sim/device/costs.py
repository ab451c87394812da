"""Op cost model: duration, true limiter and per-op hardware counters.

For an op's :class:`~.ops.OpWork` on a device::

    body     = max(compute, memory, floor) x jitter
    duration = timing.op_launch_ns + body

- ``compute = flops / (unit peak x utilisation)``. Matrix ops: utilisation is
  ``matrix_efficiency`` x tile quantisation of M and N (a small M uses row tiles of
  ``matrix_tile_m_min``) x K-pipeline fill
  ``k / (k + k_pipeline_depth)`` x wave quantisation over the engines; small GEMMs split K
  across idle engines (split-K) before they pay for empty waves. Vector ops:
  ``vector_efficiency`` x the fraction of vector units they keep busy.
- ``memory`` = reads and writes at the access pattern's HBM efficiency (:mod:`.hbm`),
  scaled down when too few engines are active to saturate HBM.
- ``floor = timing.op_latency_floor_ns``: no op body is shorter.
- jitter: ``1 + N(0, timing.jitter)`` clipped to 3 sigma, from the caller's generator;
  no generator, no jitter.

The limiter is whichever of the three terms is largest: the truth the analysis is
measured against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from . import hbm
from .frozen import quick_init
from .opcounters import REAL_COUNTERS, counter_columns
from .ops import OpWork, op_work
from .specs import DeviceSpec

Limiter = Literal["compute", "memory", "latency"]


@quick_init
@dataclass(frozen=True, slots=True)
class OpCost:
    """One op's cost on one device; times in nanoseconds, counters as the hardware reports them."""

    work: OpWork
    launch_ns: float
    compute_ns: float
    memory_ns: float
    floor_ns: float
    jitter: float
    limiter: Limiter
    utilisation: float  # fraction of the unit's peak the compute term runs at
    dram_read_bytes: int
    dram_write_bytes: int
    ideal_ns: float = 0.0  # the FLOPs at 100% of the unit's peak
    clock_hz: float = 1e9  # core clock the cycle counters count
    # the runtime's number of the cached shape the cost was made from (-1: none); costs of one
    # shape differ only in jitter, so a tracer sends a shape's cost once and then its number
    shape: int = field(default=-1, compare=False)

    @property
    def counters(self) -> dict[str, int | float]:
        """Per-op hardware counters (see :mod:`.opcounters`), computed at each use."""
        cols = counter_columns([self])
        return {k: (float(v[0]) if k in REAL_COUNTERS else int(v[0])) for k, v in cols.items()}

    @property
    def body_ns(self) -> float:
        """Time after dispatch: the largest of compute, memory and floor, jittered."""
        return max(self.compute_ns, self.memory_ns, self.floor_ns) * self.jitter

    @property
    def duration_ns(self) -> float:
        """Launch cost plus body."""
        return self.launch_ns + self.body_ns

    @property
    def flops(self) -> float:
        """Floating-point operations of the op."""
        return self.work.flops

    @property
    def bytes_read(self) -> int:
        """Useful bytes read (what the shapes say)."""
        return self.work.bytes_read

    @property
    def bytes_written(self) -> int:
        """Useful bytes written."""
        return self.work.bytes_written

    @property
    def unit(self) -> str:
        """The kind of execution unit that runs the op."""
        return self.work.unit


def matrix_utilisation(spec: DeviceSpec, gemm_shape: tuple[int, int, int, int]) -> tuple[float, float]:
    """(utilisation of the matrix engines' peak, fraction of engines active) for a GEMM shape."""
    c = spec.compute
    batch, m, n, k = gemm_shape
    tn = c.matrix_tile_n
    # small M: the engines fall back to narrower row tiles (multiples of the minimum)
    tm = c.matrix_tile_m if m >= c.matrix_tile_m else math.ceil(m / c.matrix_tile_m_min) * c.matrix_tile_m_min
    tiles_m, tiles_n = math.ceil(m / tm), math.ceil(n / tn)
    quant = (m / (tiles_m * tm)) * (n / (tiles_n * tn))
    tiles = batch * tiles_m * tiles_n
    split_k = max(1, min(c.matrix_engines // tiles, k // 256)) if tiles < c.matrix_engines else 1
    k_per = k / split_k
    pipe = k_per / (k_per + c.k_pipeline_depth)
    items = tiles * split_k
    waves = math.ceil(items / c.matrix_engines)
    wave_eff = items / (waves * c.matrix_engines)
    return c.matrix_efficiency * quant * pipe * wave_eff, min(1.0, items / c.matrix_engines)


def _compute(spec: DeviceSpec, work: OpWork) -> tuple[float, float, float, float]:
    """(compute ns, utilisation, active fraction, ideal ns at 100% of peak)."""
    if work.unit == "matrix" and work.gemm is not None:
        peak = spec.matrix_flops(work.dtype)
        util, active = matrix_utilisation(spec, work.gemm)
    else:
        peak = spec.vector_flops(work.dtype)
        active = min(1.0, work.work_items / spec.compute.vector_units)
        util = spec.compute.vector_efficiency * active
    ideal = work.flops / peak * 1e9
    return (ideal / util if work.flops else 0.0), util, active, ideal


def _jitter(spec: DeviceSpec, rng: np.random.Generator | None) -> float:
    sigma = spec.timing.jitter
    if rng is None or sigma <= 0:
        return 1.0
    return 1.0 + min(3 * sigma, max(-3 * sigma, sigma * float(rng.standard_normal())))


@quick_init
@dataclass(frozen=True, slots=True)
class CostTerms:
    """The jitter-free part of an op's cost (what a cache may keep per shape)."""

    compute_ns: float
    memory_ns: float
    floor_ns: float
    utilisation: float
    ideal_ns: float
    limiter: Limiter
    dram_read_bytes: int
    dram_write_bytes: int
    shape: int = -1  # the number a cache of terms gave them (see OpCost.shape)


def cost_terms(spec: DeviceSpec, work: OpWork, shape: int = -1) -> CostTerms:
    """Compute, memory and floor terms of ``work`` on ``spec``, and the limiter among them;
    ``shape``: the number a cache keeps them under."""
    compute_ns, util, active, ideal_ns = _compute(spec, work)
    memory_ns = hbm.memory_time_ns(spec, work.bytes_read, work.read_pattern, active) + hbm.memory_time_ns(
        spec, work.bytes_written, work.write_pattern, active)
    floor_ns = spec.timing.op_latency_floor_ns
    terms = {"compute": compute_ns, "memory": memory_ns, "latency": floor_ns}
    limiter: Limiter = max(terms, key=terms.__getitem__)  # type: ignore[assignment]
    return CostTerms(compute_ns, memory_ns, floor_ns, util, ideal_ns, limiter,
                     hbm.dram_bytes(work.bytes_read, spec, work.read_pattern),
                     hbm.dram_bytes(work.bytes_written, spec, work.write_pattern), shape)


def cost(spec: DeviceSpec, work: OpWork, rng: np.random.Generator | None = None,
         terms: CostTerms | None = None) -> OpCost:
    """Cost of ``work`` on ``spec``; ``rng`` adds the spec's jitter (None: deterministic, no jitter).
    ``terms`` may come from a cache of :func:`cost_terms` for the same work and spec."""
    t = terms or cost_terms(spec, work)
    return OpCost(work, spec.timing.op_launch_ns, t.compute_ns, t.memory_ns, t.floor_ns, _jitter(spec, rng),
                  t.limiter, t.utilisation, t.dram_read_bytes, t.dram_write_bytes, t.ideal_ns, spec.clock_hz,
                  t.shape)


def op_cost(spec: DeviceSpec, op: str, rng: np.random.Generator | None = None, **shapes: Any) -> OpCost:
    """Cost of op kind ``op`` with ``shapes`` (see :func:`.ops.op_work`)."""
    return cost(spec, op_work(op, **shapes), rng)
