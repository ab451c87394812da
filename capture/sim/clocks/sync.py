"""Sync samples as a real system takes them, from simulated clocks.

- :func:`pcie_read_samples`: the host notes its clock, reads the device's timestamp counter
  over PCIe (an MMIO read: request one way, completion back), notes its clock again. Each way
  takes ``path_ns`` plus an exponential extra delay with the device clock's ``jitter_ns`` as
  mean (the host thread preempted, the link busy); the request and the completion differ by
  a fixed ``asymmetry_ns`` (where in the read the device latches its counter).
- :func:`ptp_exchange`: PTP's delay request-response between a master and a slave host over
  the network: t1 master sends, t2 slave receives, t3 slave answers, t4 master receives. Each
  way takes the path's base delay plus exponential queueing with mean ``queue_ns``; the two
  directions' base delays differ by a fixed ``asymmetry_ns`` per path (unobservable from the
  exchange itself, so it is the path's stated bound that goes into the error bars).

Both return :class:`accelview.model.align.Brackets` (parent time before, domain time,
parent time after): a PTP exchange becomes one with t4 less the slave's residence time
t3 − t2, which the slave reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from accelview.model.align import Brackets

from .simclock import SimClock

PCIE_PATH_NS = 400.0  # one way of an MMIO read (REFERENCE.md: PCIe round trips near 1 µs)
PCIE_ASYMMETRY_BOUND_NS = 100.0  # PCIe PTM between separate clocks: ±100 ns (REFERENCE.md)


@dataclass(frozen=True)
class NetworkPath:
    """One host-to-host path: base one-way delay, its fixed direction asymmetry (forward minus
    backward, within ±``asymmetry_bound_ns``), and the mean exponential queueing delay."""

    base_ns: float = 3000.0
    asymmetry_ns: float = 0.0
    asymmetry_bound_ns: float = 400.0
    queue_ns: float = 2000.0

    @classmethod
    def random(cls, rng: np.random.Generator, base_ns: float = 3000.0, asymmetry_bound_ns: float = 400.0,
               queue_ns: float = 2000.0) -> NetworkPath:
        """A path whose asymmetry is drawn uniformly within its stated bound."""
        return cls(base_ns, float(rng.uniform(-asymmetry_bound_ns, asymmetry_bound_ns)), asymmetry_bound_ns, queue_ns)


def _grid(t0_ns: int, t1_ns: int, period_ns: int, rng: np.random.Generator) -> np.ndarray:
    """True send instants every ``period_ns`` over [t0, t1) from a random phase, each shifted by
    up to a tenth of the period (a sampler staggers its reads of different clocks: together
    they then place a step of the host's clock finer than one period)."""
    phase = int(rng.integers(0, max(1, period_ns)))
    start = np.arange(int(t0_ns) + phase, int(t1_ns), int(period_ns), dtype=np.int64)
    return start + rng.integers(0, max(1, period_ns // 10), len(start))


def pcie_read_samples(host: SimClock, device: SimClock, t0_ns: int, t1_ns: int, rng: np.random.Generator,
                      period_ns: int = 1_000_000, path_ns: float = PCIE_PATH_NS,
                      asymmetry_ns: float = 0.0) -> Brackets:
    """Host↔device samples every ``period_ns`` of true time over [t0, t1)."""
    send = _grid(t0_ns, t1_ns, period_ns, rng)
    out = path_ns + asymmetry_ns / 2 + rng.exponential(device.jitter_ns or 1e-9, len(send))
    back = path_ns - asymmetry_ns / 2 + rng.exponential(device.jitter_ns or 1e-9, len(send))
    read_at = send + np.rint(out).astype(np.int64)
    recv = read_at + np.rint(back).astype(np.int64)
    return Brackets(host.read(send), device.read(read_at), host.read(recv))


def ptp_exchange(master: SimClock, slave: SimClock, t0_ns: int, t1_ns: int, rng: np.random.Generator,
                 period_ns: int = 62_500_000, path: NetworkPath | None = None,
                 residence_ns: float = 2000.0) -> Brackets:
    """Two-way exchanges every ``period_ns`` (PTP's 16 per second by default) over [t0, t1),
    as brackets of the slave's clock against the master's."""
    p = path or NetworkPath()
    t1 = _grid(t0_ns, t1_ns, period_ns, rng)
    fwd = p.base_ns + p.asymmetry_ns / 2 + rng.exponential(p.queue_ns or 1e-9, len(t1))
    bwd = p.base_ns - p.asymmetry_ns / 2 + rng.exponential(p.queue_ns or 1e-9, len(t1))
    t2 = t1 + np.rint(fwd).astype(np.int64)
    t3 = t2 + np.rint(residence_ns + rng.exponential(residence_ns / 4 or 1e-9, len(t1))).astype(np.int64)
    t4 = t3 + np.rint(bwd).astype(np.int64)
    s2, s3 = slave.read(t2), slave.read(t3)
    return Brackets(master.read(t1), s2, master.read(t4) - (s3 - s2))
