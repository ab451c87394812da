"""A cluster: ``hosts`` hosts of ``devices`` devices each, on one true timeline.

::

    from accelview.capture.sim.cluster.cluster import Cluster

    c = Cluster(hosts=2, devices=4, seed=0)
    comm = c.communicator()                      # every device of every host, host by host
    for dev in c.devices():
        dev.launch("gemm", m=8, n=8192, k=8192)
    comm.all_reduce(64 << 20)
    c.synchronize()
    traces = c.traces()                          # one capture per host, each in its host's raw time

Each host is a :class:`~accelview.capture.sim.Simulator` with its own host thread and clock
(``host_index``, ``host_name`` ``host0`` …, ``clock_model``: the seam to its raw time, see
:mod:`.timebase`); its devices are indexed 0..N-1 as on a real host. All hosts share one
:class:`~.rendezvous.Fabric` (the links and the collectives' truth). A script drives every host
from one thread: each call costs time on its own host's clock, so hosts run side by side.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..device.specs import DeviceSpec
from ..runtime.hostclock import DETERMINISTIC_START_NS
from ..runtime.simulator import Device, Simulator
from .communicator import Communicator
from .rendezvous import Fabric
from .timebase import ClockModel, IdentityClock
from .topology import LinkSpec, Topology

if TYPE_CHECKING:
    from accelview.model import Trace

HOST_SEED_STRIDE = 1_000_003  # host h draws from seed + h * this: its own device clocks and jitter


class Cluster:
    """``hosts`` simulated hosts of ``devices`` devices, their links and collectives."""

    def __init__(self, hosts: int = 1, devices: int = 1, spec: str | DeviceSpec = "gen5x16-141g", seed: int = 0,
                 links: LinkSpec | None = None, counter_period_ns: int = 10_000,
                 clock_models: Sequence[ClockModel] | None = None) -> None:
        self.fabric = Fabric(Topology(hosts, devices, links or LinkSpec()))
        self.hosts: list[Simulator] = []
        if clock_models is not None and len(clock_models) != hosts:
            raise ValueError(f"{len(clock_models)} clock models for {hosts} hosts")
        for h in range(hosts):
            model = clock_models[h] if clock_models is not None else IdentityClock()
            # every host starts at the same true time, each reading it on its own clock
            sim = Simulator(spec, devices, seed + h * HOST_SEED_STRIDE, counter_period_ns=counter_period_ns,
                            host_start_ns=round(model.to_raw(DETERMINISTIC_START_NS)))
            sim.host_index, sim.host_name, sim.fabric, sim.clock_model = h, f"host{h}", self.fabric, model
            self.hosts.append(sim)

    def host(self, index: int) -> Simulator:
        """Host ``index``."""
        if not 0 <= index < len(self.hosts):
            raise ValueError(f"no host {index}: this cluster has {len(self.hosts)}")
        return self.hosts[index]

    def device(self, host: int, index: int) -> Device:
        """Device ``index`` of host ``host``."""
        return self.host(host).device(index)

    def devices(self) -> list[Device]:
        """Every device, host by host."""
        return [d for sim in self.hosts for d in sim.devices]

    def communicator(self, devices: Sequence[Device] | None = None, algorithm: str = "ring") -> Communicator:
        """A communicator over ``devices`` (default: every device, host by host)."""
        return Communicator(self.fabric, list(devices) if devices is not None else self.devices(), algorithm)

    @contextmanager
    def annotate(self, name: str, hosts: Sequence[int] | None = None) -> Iterator[None]:
        """Mark a phase (like ``sim.annotate``) on the host thread of every host in ``hosts``
        (default: all), each on its own clock."""
        sims = [self.host(h) for h in hosts] if hosts is not None else self.hosts
        starts = [sim.clock.enter_call() for sim in sims]
        for sim in sims:
            sim.clock.exit_call()
        try:
            yield
        finally:
            for sim, start in zip(sims, starts, strict=True):
                end = sim.clock.enter_call()
                sim.clock.exit_call()
                sim.log.annotate(start, end, name)

    def synchronize(self) -> None:
        """Every host waits for all of its devices' work."""
        for sim in self.hosts:
            for dev in sim.devices:
                dev.synchronize()

    def finish(self) -> None:
        """Let every device of every host drain its queues."""
        for sim in self.hosts:
            sim.finish()

    def traces(self) -> list[Trace]:
        """One capture per host (``host0`` …), each in its host's raw time."""
        from ...convert.tracewriter import build_trace

        self.finish()
        return [build_trace(sim) for sim in self.hosts]
