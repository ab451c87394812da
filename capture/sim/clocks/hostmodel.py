"""A host clock of a cluster as the simulator's clock seam (``Simulator.clock_model``): the
host's raw time (what its simulation runs on and its capture is written in) against the
cluster's true time, and the PTP exchanges a real host takes with host0.

The simulation's true time is host0's clock (nothing outside the simulator sees true time, and
host0 is the reference every alignment is stated against): host0's model is the identity, and
host h's is its true map to host0 (:meth:`ClusterClocks.true_map`).

A host clock may step (NTP setting it, :meth:`ClusterHostClock.add_step`): the host's work goes
on regardless, so the simulation runs on the clock without its steps (``to_raw``/``to_true``),
and the steps show only in what the clock reads: :meth:`ClusterHostClock.stamp` moves the
capture's host timestamps (:mod:`accelview.capture.convert.hoststep`), and the PTP exchanges
read the stepped clock.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from accelview.model.align import Brackets, ClockMap, Segment

from .cluster import ClusterClocks, host_name
from .sync import ptp_exchange

PTP_PERIOD_NS = 62_500_000  # PTP's 16 exchanges a second


class ClusterHostClock:
    """Host ``host`` of ``clocks`` (a :class:`~accelview.capture.sim.cluster.timebase.ClockModel`)."""

    def __init__(self, clocks: ClusterClocks, host: int, seed: int) -> None:
        self.clocks, self.host, self.seed = clocks, host, seed
        smooth = replace(clocks, hosts=tuple(replace(c, steps=()) for c in clocks.hosts))
        self._true = smooth.true_map(host_name(host), 1.0).segments[0]
        self._offset, self._scale = self._true.offset_ns, self._true.scale
        self.identity = self._offset == 0.0 and self._scale == 1.0 and not self.steps  # host0: reads true time

    @classmethod
    def for_cluster(cls, hosts: int, devices: int, seed: int, max_drift_ppm: float, jitter_ns: float,
                    asymmetry_bound_ns: float = 400.0) -> list[ClusterHostClock]:
        """One model per host of a cluster whose clocks are drawn from ``seed`` (no steps: add
        them with :meth:`add_step`)."""
        clocks = ClusterClocks.random(hosts, devices, seed, max_drift_ppm=max_drift_ppm, jitter_ns=jitter_ns,
                                      host_steps=0, device_resets=0, asymmetry_bound_ns=asymmetry_bound_ns)
        return [cls(clocks, h, seed) for h in range(hosts)]

    @property
    def steps(self) -> list[tuple[float, int]]:
        """The clock's steps: (unstepped raw reading at which it stepped, jump ns), in order."""
        own = self.clocks.hosts[self.host]
        smooth = replace(own, steps=())
        return [(float(smooth.read(np.array([s.at_ns]))[0]), s.jump_ns) for s in own.steps]

    def add_step(self, true_ns: float, jump_ns: int) -> None:
        """From true time ``true_ns`` on, this host's clock reads ``jump_ns`` more (an NTP step)."""
        if self.host == 0:
            raise ValueError("host0's clock is the cluster's reference: it cannot step")
        ref = self.clocks.hosts[0]
        at = round((true_ns - ref.offset_ns) / (1.0 + ref.drift_ppm * 1e-6))  # on the clocks' own timebase
        hosts = list(self.clocks.hosts)
        hosts[self.host] = hosts[self.host].with_step(at, int(jump_ns))
        self.clocks = replace(self.clocks, hosts=tuple(hosts))

    def stamp(self, raw_ns: np.ndarray) -> np.ndarray:
        """What the stepped clock reads where the unstepped one reads ``raw_ns`` (int64)."""
        raw = np.asarray(raw_ns)
        out = np.rint(raw).astype(np.int64)
        for at, jump in self.steps:
            out += np.where(raw >= at, jump, 0)
        return out

    def to_true(self, raw_ns: float) -> float:
        """True time at which this host's unstepped clock reads ``raw_ns``."""
        return (raw_ns - self._offset) / self._scale

    def to_raw(self, true_ns: float) -> float:
        """What this host's unstepped clock reads at true time ``true_ns``."""
        return self._offset + true_ns * self._scale

    @property
    def read_jitter_ns(self) -> float:
        """Mean extra delay each way of a PCIe read of one of this host's devices' counters."""
        return self.clocks.devices[self.host][0].jitter_ns if self.clocks.devices[self.host] else 0.0

    @property
    def ptp_asymmetry_bound_ns(self) -> float:
        """The stated bound of this host's network path's asymmetry to host0."""
        return self.clocks.paths[self.host].asymmetry_bound_ns

    def ptp_samples(self, t0_true: float, t1_true: float) -> Brackets:
        """PTP exchanges with host0 over [t0, t1) of true time: host0's time before, this host's
        reading (stepped), host0's time after less this host's residence time."""
        rng = np.random.default_rng([self.seed, 29, self.host])
        ref = self.clocks.hosts[0]  # true time is host0's reading: the clocks' own timebase is before it
        t0, t1 = ((t - ref.offset_ns) / (1.0 + ref.drift_ppm * 1e-6) for t in (t0_true, t1_true))
        return ptp_exchange(ref, self.clocks.hosts[self.host], int(t0), int(t1), rng, PTP_PERIOD_NS,
                            self.clocks.paths[self.host])

    def true_alignment(self) -> Segment:
        """This host's unstepped clock's true map to host0's (``ref = (t − offset) / (1 + drift·1e-6)``)."""
        return self._true

    def true_map(self) -> ClockMap:
        """This host's clock's true map to host0's, a segment per stretch between its steps."""
        last = max((s.at_ns for s in self.clocks.hosts[self.host].steps), default=0)
        return self.clocks.true_map(host_name(self.host), last / 1e9 + 1.0)
