"""HBM: achieved bandwidth as a function of the access pattern.

An access pattern is the kind of walk (``sequential``, ``strided``, ``random``) and the
length of each contiguous run in bytes. Efficiency (achieved / peak bandwidth) is::

    efficiency = efficiency_sequential x burst_utilisation x row_factor

- ``burst_utilisation = run / (ceil(run / burst) x burst)``: DRAM moves whole bursts, so a
  4 B gather fetches 64 B and uses 4 (this is the *burst efficiency* counter);
- ``row_factor``: 1 for sequential streams; strided and random walks open a new DRAM row
  every run, paying activate/precharge, which is amortised over ``page_bytes``: strided
  walks keep bank parallelism (0.6 + 0.4 x fill), random ones lose it too (0.3 + 0.7 x fill),
  where ``fill = min(1, run / page_bytes)``.

So sequential ~0.9 of peak, a 256 B strided walk ~0.6, a 64 B random gather ~0.3 and a 4 B
random gather ~0.02. The constants are ours (no single published figure); the shape follows
DRAM burst and row-buffer behaviour.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from .specs import DeviceSpec

PatternKind = Literal["sequential", "strided", "random"]
_ROW_BASE = {"sequential": 1.0, "strided": 0.6, "random": 0.3}


@dataclass(frozen=True, slots=True)
class AccessPattern:
    """How an op walks HBM: the kind of walk and the contiguous run length in bytes."""

    kind: PatternKind = "sequential"
    run_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        if self.kind not in _ROW_BASE:
            raise ValueError(f"access pattern must be sequential, strided or random, got {self.kind!r}")
        if self.run_bytes <= 0:
            raise ValueError(f"run_bytes must be positive, got {self.run_bytes}")


SEQUENTIAL = AccessPattern()


def burst_utilisation(pattern: AccessPattern, burst_bytes: int) -> float:
    """Fraction of the bytes DRAM moves that the op uses (the burst-efficiency counter)."""
    if pattern.kind == "sequential":
        return 1.0
    run = pattern.run_bytes
    return run / (math.ceil(run / burst_bytes) * burst_bytes)


def row_factor(pattern: AccessPattern, page_bytes: int) -> float:
    """Throughput left after row activations, relative to a sequential stream."""
    base = _ROW_BASE[pattern.kind]
    if pattern.kind == "sequential":
        return 1.0
    fill = min(1.0, pattern.run_bytes / page_bytes)
    return base + (1.0 - base) * fill


def efficiency(spec: DeviceSpec, pattern: AccessPattern) -> float:
    """Achieved / peak HBM bandwidth for useful bytes under ``pattern``."""
    m = spec.memory
    return m.efficiency_sequential * burst_utilisation(pattern, m.burst_bytes) * row_factor(
        pattern, m.page_bytes)


def dram_bytes(useful_bytes: float, spec: DeviceSpec, pattern: AccessPattern) -> int:
    """Bytes DRAM actually moves to deliver ``useful_bytes`` (whole bursts)."""
    return math.ceil(useful_bytes / burst_utilisation(pattern, spec.memory.burst_bytes))


def memory_time_ns(spec: DeviceSpec, useful_bytes: float, pattern: AccessPattern,
                   active_fraction: float = 1.0) -> float:
    """Nanoseconds to move ``useful_bytes`` at the pattern's efficiency.

    ``active_fraction`` is the fraction of the unit's engines the op keeps busy; fewer than
    ``memory.saturation_fraction`` of them cannot keep enough requests in flight to
    saturate HBM, so bandwidth scales down with them.
    """
    if useful_bytes <= 0:
        return 0.0
    reach = min(1.0, max(active_fraction, 1e-9) / spec.memory.saturation_fraction)
    return useful_bytes / (spec.hbm_bytes_per_s * efficiency(spec, pattern) * reach) * 1e9
