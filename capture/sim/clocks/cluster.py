"""The clocks of a cluster of M hosts × N devices, drawn from a seed, their sync samples, and
their true alignment to the reference (host0's clock).

Host clocks drift within ±``max_drift_ppm`` of true time and start within ±``max_offset_ns``
of each other (what NTP leaves); a device's counter runs against its host as the single-host
simulator's :class:`DeviceClock` does (its own offset within ±5 s and drift), and is read
over PCIe with ``jitter_ns`` of read jitter and a fixed request/completion asymmetry within
±``PCIE_ASYMMETRY_BOUND_NS``. ``host_steps`` hosts (never host0, the
reference) take one NTP step somewhere in the middle of the capture; ``device_resets``
devices reset their counter. Every host other than host0 exchanges PTP messages with host0
over its own :class:`NetworkPath` (asymmetry within its stated bound).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from accelview.model.align import Brackets, ClockMap, Segment
from accelview.model.align.segments import OPEN_END, OPEN_START

from ..device.clock import DeviceClock
from .simclock import SimClock
from .sync import PCIE_ASYMMETRY_BOUND_NS, NetworkPath, pcie_read_samples, ptp_exchange

REFERENCE = "host0"


def host_name(h: int) -> str:
    """The clock domain name of host ``h``."""
    return f"host{h}"


def device_name(h: int, d: int) -> str:
    """The clock domain name of device ``d`` of host ``h``."""
    return f"host{h}/device{d}"


@dataclass(frozen=True)
class SyncSet:
    """One domain's sync samples against its parent, with the asymmetry bound to state for them."""

    domain: str
    parent: str
    brackets: Brackets
    asymmetry_ns: float


@dataclass(frozen=True)
class ClusterClocks:
    """Every clock of a cluster, and the network paths of its PTP exchanges."""

    hosts: tuple[SimClock, ...]
    devices: tuple[tuple[SimClock, ...], ...]
    paths: tuple[NetworkPath, ...]  # paths[h]: host h ↔ host0 (paths[0] unused)
    pcie_asymmetry_ns: tuple[tuple[float, ...], ...]  # [h][d]: of device d's reads by host h

    @classmethod
    def random(cls, hosts: int, devices: int, seed: int, seconds: float = 60.0, max_drift_ppm: float = 50.0,
               jitter_ns: float = 2000.0, host_steps: int = 1, device_resets: int = 1,
               max_offset_ns: int = 5_000_000, asymmetry_bound_ns: float = 400.0,
               device_freq_hz: int = 1_000_000_000) -> ClusterClocks:
        """Draw the clocks (see the module docstring) for a capture of ``seconds``."""
        rng = np.random.default_rng([seed, 19])
        end = int(seconds * 1e9)
        host_clocks = [SimClock(int(rng.integers(-max_offset_ns, max_offset_ns + 1)),
                                float(rng.uniform(-max_drift_ppm, max_drift_ppm)), 20.0) for _ in range(hosts)]
        devs = [[SimClock.of_device(DeviceClock.random(device_freq_hz, rng, max_drift_ppm=max_drift_ppm), hc,
                                    jitter_ns) for _ in range(devices)] for hc in host_clocks]
        for h in rng.permutation(np.arange(1, hosts))[:host_steps]:
            jump = int(rng.uniform(50_000, 2_000_000)) * int(rng.choice([-1, 1]))
            host_clocks[h] = host_clocks[h].with_step(int(rng.uniform(0.2, 0.8) * end), jump)
        flat = rng.permutation(hosts * devices)[:device_resets] if devices else []
        for i in flat:
            h, d = divmod(int(i), devices)
            devs[h][d] = devs[h][d].with_reset(int(rng.uniform(0.2, 0.8) * end))
        paths = [NetworkPath()] + [NetworkPath.random(rng, asymmetry_bound_ns=asymmetry_bound_ns)
                                   for _ in range(hosts - 1)]
        asym = rng.uniform(-PCIE_ASYMMETRY_BOUND_NS, PCIE_ASYMMETRY_BOUND_NS, (hosts, devices))
        return cls(tuple(host_clocks), tuple(tuple(d) for d in devs), tuple(paths),
                   tuple(tuple(float(a) for a in row) for row in asym))

    def clock(self, name: str) -> SimClock:
        """The clock of a domain by name (``host1``, ``host1/device3``)."""
        host, _, dev = name.partition("/")
        h = int(host.removeprefix("host"))
        return self.devices[h][int(dev.removeprefix("device"))] if dev else self.hosts[h]

    def domains(self) -> list[tuple[str, str]]:
        """Every (domain, parent) pair: host0 is the reference, devices report to their host."""
        out = [(host_name(h), REFERENCE) for h in range(1, len(self.hosts))]
        out += [(device_name(h, d), host_name(h)) for h in range(len(self.hosts)) for d in range(len(self.devices[h]))]
        return out

    def sync_samples(self, seconds: float, seed: int, pcie_period_ns: int = 1_000_000,
                     ptp_period_ns: int = 62_500_000) -> list[SyncSet]:
        """What a real cluster records over ``seconds``: PCIe reads of every device by its host,
        PTP exchanges of every host with host0."""
        end = int(seconds * 1e9)
        out = []
        for i, (dom, parent) in enumerate(self.domains()):
            rng = np.random.default_rng([seed, 23, i])
            if "/" in dom:
                h, d = (int(x.removeprefix("host").removeprefix("device")) for x in dom.split("/"))
                b = pcie_read_samples(self.clock(parent), self.clock(dom), 0, end, rng, pcie_period_ns,
                                      asymmetry_ns=self.pcie_asymmetry_ns[h][d])
                out.append(SyncSet(dom, parent, b, PCIE_ASYMMETRY_BOUND_NS))
            else:
                path = self.paths[int(dom.removeprefix("host"))]
                b = ptp_exchange(self.clock(parent), self.clock(dom), 0, end, rng, ptp_period_ns, path)
                out.append(SyncSet(dom, parent, b, path.asymmetry_bound_ns))
        return out

    def true_map(self, name: str, seconds: float) -> ClockMap:
        """The domain's true alignment to host0's clock, in the capture's convention (error 0).
        host0 never steps, so ref = o0 + s0·T is one line, and each piece of the domain's clock
        (domain = o + s·T) gives ref = (domain − (o − o0·s/s0)) / (s/s0)."""
        ref = self.hosts[0]
        o0, s0 = float(ref.offset_ns), 1.0 + ref.drift_ppm * 1e-6
        clock = self.clock(name)
        pieces = clock.segments(seconds * 1e9)
        segs = []
        for k, p in enumerate(pieces):
            s = 1.0 + p.drift_ppm * 1e-6
            start = OPEN_START if k == 0 else int(clock.read(np.array([p.start_ns]))[0])
            end = OPEN_END if k == len(pieces) - 1 else int(clock.read(np.array([p.end_ns - 1]))[0]) + 1
            segs.append(Segment(start, end, p.offset_ns - o0 * s / s0, (s / s0 - 1.0) * 1e6, 0.0))
        return ClockMap(tuple(segs))
