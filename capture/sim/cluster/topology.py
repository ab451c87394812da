"""The links of a cluster: every device's chip-to-chip port (one link each way, to the host's
switch) and every host's network interface (one each way, to the network), and the path a
transfer between two devices takes over them.

Within a host a transfer leaves its device's ``c2c tx`` port and enters the other's ``c2c rx``
(through a non-blocking switch, as NVLink/NVSwitch or a torus of chip-to-chip links behaves for
the patterns collectives use). Between hosts it leaves through a network interface of its host
and enters one of the other host's: device ``d`` uses interface ``d % nics`` (``nics`` 0: one
per device, "rail-optimised" as in DGX-class servers; 1: every device of a host shares one, so
traffic of several devices leaving a host at once contends for it). Latency is per hop,
bandwidth that of the slowest link on the path.
"""

from __future__ import annotations

from dataclasses import dataclass

from .links import Link

Rank = tuple[int, int]  # (host, device)


@dataclass(frozen=True)
class LinkSpec:
    """Bandwidth (GB/s per direction) and latency (ns per hop) of the two kinds of link. The
    defaults are of an NVLink-4 port (450 GB/s each way, sub-µs) and a 400 Gb/s NIC (50 GB/s,
    a few µs through the switches)."""

    c2c_gb_per_s: float = 450.0
    c2c_latency_ns: float = 800.0
    net_gb_per_s: float = 50.0
    net_latency_ns: float = 3000.0
    nics: int = 0  # network interfaces per host; 0: one per device

    def __post_init__(self) -> None:
        if self.nics < 0:
            raise ValueError(f"nics must be 0 (one per device) or more, got {self.nics}")
        for name in ("c2c_gb_per_s", "c2c_latency_ns", "net_gb_per_s", "net_latency_ns"):
            value = getattr(self, name)
            if not value >= 0 or (name.endswith("gb_per_s") and value == 0):
                raise ValueError(f"{name} must be positive, got {value}")


@dataclass(frozen=True, slots=True)
class Path:
    """The links a transfer crosses, with its latency and its bottleneck bandwidth (bytes/ns)."""

    links: tuple[Link, ...]
    latency_ns: float
    bandwidth: float


class Topology:
    """The links of ``hosts`` hosts of ``devices`` devices each."""

    def __init__(self, hosts: int, devices: int, spec: LinkSpec = LinkSpec()) -> None:
        if hosts < 1 or devices < 1:
            raise ValueError(f"a cluster needs at least one host and one device, got {hosts} x {devices}")
        self.hosts, self.devices, self.spec = hosts, devices, spec
        self.c2c = {(h, d, x): Link(f"C2C {x.upper()}", "c2c", h, d, x, spec.c2c_gb_per_s, spec.c2c_latency_ns)
                    for h in range(hosts) for d in range(devices) for x in ("tx", "rx")}
        self.nics = spec.nics or devices
        self.net = {(h, n, x): Link(f"NIC {n} {x.upper()}", "network", h, -1, x, spec.net_gb_per_s,
                                    spec.net_latency_ns) for h in range(hosts) for n in range(self.nics)
                    for x in ("tx", "rx")}
        self._paths: dict[tuple[Rank, Rank], Path] = {}

    def path(self, src: Rank, dst: Rank) -> Path:
        """The path from device ``src`` to device ``dst`` (both (host, device))."""
        key = (src, dst)
        p = self._paths.get(key)
        if p is None:
            if src == dst:
                raise ValueError(f"a transfer needs two devices, got {src} twice")
            if src[0] == dst[0]:
                links = (self.c2c[(*src, "tx")], self.c2c[(*dst, "rx")])
            else:
                links = (self.net[(src[0], src[1] % self.nics, "tx")], self.net[(dst[0], dst[1] % self.nics, "rx")])
            p = self._paths[key] = Path(links, max(x.latency_ns for x in links), min(x.bandwidth for x in links))
        return p

    def links(self) -> list[Link]:
        """Every link, chip-to-chip ports first."""
        return [*self.c2c.values(), *self.net.values()]
