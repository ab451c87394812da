"""One simulated clock: what it reads at each true instant.

A clock reads ``offset_ns + true_ns × (1 + drift_ppm·1e-6)`` in ns, quantised down to its
tick, between steps. A :class:`Step` at true time ``at_ns`` adds ``jump_ns`` to everything read
from then on: an NTP step of a host clock, or a device counter reset (a jump that brings the
reading back to zero, :meth:`SimClock.with_reset`). ``jitter_ns`` is how much reading this
clock from elsewhere varies: the mean of the exponential extra delay each way of a sync
exchange that reads it (an MMIO read over PCIe, a PTP message through a NIC).

True time is the simulation's own timebase (0 at the capture start); nothing outside the
simulator ever sees it. Readings are exact int64 arithmetic apart from the drift term, which
is rounded from float64 on true times of a capture's size (exact to well under 1 ns).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..device.clock import DeviceClock


@dataclass(frozen=True)
class Step:
    """From true time ``at_ns`` on, the clock reads ``jump_ns`` more than before."""

    at_ns: int
    jump_ns: int


@dataclass(frozen=True)
class TrueSegment:
    """A stretch of true time ``[start_ns, end_ns)`` over which a clock reads
    ``offset_ns + true × (1 + drift_ppm·1e-6)``."""

    start_ns: float
    end_ns: float
    offset_ns: float
    drift_ppm: float


@dataclass(frozen=True)
class SimClock:
    """A clock domain's true parameters (see the module docstring)."""

    offset_ns: int
    drift_ppm: float
    jitter_ns: float = 0.0
    steps: tuple[Step, ...] = field(default=())
    tick_ns: int = 1

    def __post_init__(self) -> None:
        if abs(self.drift_ppm) >= 1000:
            raise ValueError(f"drift_ppm must be within ±1000, got {self.drift_ppm}")
        if self.tick_ns < 1 or self.jitter_ns < 0:
            raise ValueError("tick_ns must be ≥ 1 and jitter_ns ≥ 0")
        if list(self.steps) != sorted(self.steps, key=lambda s: s.at_ns):
            raise ValueError("steps must be in time order")

    @classmethod
    def of_device(cls, device: DeviceClock, host: SimClock, jitter_ns: float = 0.0) -> SimClock:
        """The clock of a device whose counter runs as ``device`` says against ``host``'s
        clock (the single-host simulator's :class:`DeviceClock`), on the true timebase. It
        counts ns at the device's tick, and shares none of the host's later steps: a
        device counter runs on its own oscillator."""
        if host.steps:
            raise ValueError("derive device clocks from a host clock without steps")
        scale = 1.0 + device.drift_ppm * 1e-6
        offset = host.offset_ns * scale + device.offset_ns - device.ref_host_ns * device.drift_ppm * 1e-6
        drift = ((1.0 + host.drift_ppm * 1e-6) * scale - 1.0) * 1e6
        return cls(round(offset), drift, jitter_ns, (), max(1, round(device.tick_ns)))

    def with_step(self, at_ns: int, jump_ns: int) -> SimClock:
        """This clock with one more step (an NTP step)."""
        steps = tuple(sorted((*self.steps, Step(int(at_ns), int(jump_ns))), key=lambda s: s.at_ns))
        return SimClock(self.offset_ns, self.drift_ppm, self.jitter_ns, steps, self.tick_ns)

    def with_reset(self, at_ns: int) -> SimClock:
        """This clock with its counter reset to zero at true time ``at_ns``."""
        return self.with_step(at_ns, -int(self.read(np.array([at_ns]))[0]))

    def read(self, true_ns: np.ndarray) -> np.ndarray:
        """What the clock reads (int64 ns, on its tick) at each true instant (vectorised)."""
        t = np.asarray(true_ns)
        t_int = np.rint(t).astype(np.int64) if t.dtype.kind == "f" else t.astype(np.int64)
        out = t_int + self.offset_ns + np.rint(t.astype(np.float64) * (self.drift_ppm * 1e-6)).astype(np.int64)
        for s in self.steps:
            out = out + np.where(t_int >= s.at_ns, s.jump_ns, 0)
        if self.tick_ns > 1:
            out = out - np.mod(out, self.tick_ns)
        return out

    def segments(self, end_ns: float = np.inf) -> list[TrueSegment]:
        """The clock's linear pieces over true time ``[0, end_ns)``, split at its steps."""
        edges = [0.0, *(float(s.at_ns) for s in self.steps if 0 < s.at_ns < end_ns), float(end_ns)]
        out, offset = [], float(self.offset_ns) + sum(s.jump_ns for s in self.steps if s.at_ns <= 0)
        for i in range(len(edges) - 1):
            if i:
                offset += sum(s.jump_ns for s in self.steps if s.at_ns == edges[i])
            out.append(TrueSegment(edges[i], edges[i + 1], offset, self.drift_ppm))
        return out
