"""Data-parallel replicas, one of them slow: every device computes on its own input, then all
devices of all hosts all-reduce their gradients; one device (or a whole host) is late.

What to look for: the all-reduce is a barrier, so every replica's step takes as long as the
slowest one's; the slow one arrives last at every all-reduce and the others wait (skew). The
phases of every replica look equally long: the culprit shows only in who arrives last. ``cause``
says what makes it late: ``compute`` (an extra kernel), ``host`` (its host thread is busy before
it launches the step), ``pcie`` (its input copy over PCIe is larger) or ``network`` (its input
arrives over the network and is larger). ``slow_device`` -1 makes every device of ``slow_host`` slow.

    accelview profile --workload dp-straggler --param hosts=4 --param devices=8 -o run/
"""

from __future__ import annotations

from accelview.capture.sim.cluster.cluster import Cluster
from accelview.capture.sim.cluster.communicator import Communicator
from accelview.capture.sim.runtime.graph import Graph
from accelview.capture.sim.runtime.simulator import Device, Stream

CAUSES = ("compute", "host", "pcie", "network")


def run(cluster: Cluster, steps: int = 6, slow_host: int = 1, slow_device: int = 1, delay_us: float = 300.0,
        cause: str = "compute", hidden: int = 4096, tokens: int = 8192, layers: int = 4,
        grad_mb: float = 64.0, input_kb: float = 256.0) -> None:
    """``steps`` data-parallel steps: input in (a PCIe copy, or for ``cause=network`` a receive
    from the same device of the next host), one replay of a graph of ``layers`` forward and
    backward GEMMs of ``tokens`` × ``hidden``, an all-reduce of ``grad_mb`` MB of gradients over
    every device, then every host waits for its devices (the next step's input depends on it)."""
    hosts, devices = len(cluster.hosts), len(cluster.hosts[0].devices)
    if cause not in CAUSES:
        raise ValueError(f"dp-straggler: cause must be one of {', '.join(CAUSES)}, got {cause!r}")
    if not 0 <= slow_host < hosts:
        raise ValueError(f"dp-straggler: slow_host {slow_host} is not a host of {hosts}")
    if not -1 <= slow_device < devices:
        raise ValueError(f"dp-straggler: slow_device {slow_device} is not a device of {devices} (or -1: all)")
    delay_ns = delay_us * 1000.0
    devs = cluster.devices()
    slow = {id(d) for d in devs if d.sim.host_index == slow_host and slow_device in (-1, d.index)}
    comm = cluster.communicator(devs)
    inputs = max(1, int(input_kb * 1e3))
    feeds = _network_feeds(cluster) if cause == "network" else []
    graphs = {id(d): _step_graph(d, layers, tokens, hidden, delay_ns if cause == "compute" and id(d) in slow else 0)
              for d in devs}
    if cause == "pcie":
        staged = {id(d): d.sim.host_buffer(inputs + int(delay_ns * _pcie_bytes_per_ns(d)), "int8") for d in devs}
        landing = {id(d): d.alloc(staged[id(d)].nbytes, "int8") for d in devs}
    for step in range(steps):
        with cluster.annotate(f"step {step}"):
            for dst, feed, streams in feeds:  # every device's input over the network; the slow ones' is larger
                extra = int(delay_ns * feed.fabric.topology.path(*feed.ranks).bandwidth) if id(dst) in slow else 0
                feed.send(0, 1, inputs + extra, streams=streams, name="input")
            # the slow host thread prepares the slow devices' work last, after a delay of its own
            order = sorted(devs, key=lambda d: (d.sim.host_index, cause == "host" and id(d) in slow, d.index))
            busy: set[int] = set()
            for dev in order:
                if cause == "host" and id(dev) in slow and dev.sim.host_index not in busy:
                    dev.sim.host_work("data loading", delay_ns)
                    busy.add(dev.sim.host_index)
                if cause == "pcie":
                    nbytes = inputs + (int(delay_ns * _pcie_bytes_per_ns(dev)) if id(dev) in slow else 0)
                    dev.copy(landing[id(dev)], staged[id(dev)], stream=dev.default_stream, nbytes=nbytes)
                graphs[id(dev)].launch()
            comm.all_reduce(max(1, int(grad_mb * 1e6)), name="gradients all_reduce")
            cluster.synchronize()


def _step_graph(dev: Device, layers: int, tokens: int, hidden: int, extra_ns: float) -> Graph:
    """A device's forward and backward pass as one graph; ``extra_ns``: an extra kernel of about
    that long (a slow replica's own compute)."""
    with dev.graph("train step") as g:
        for layer in range(layers):
            dev.launch("gemm", name=f"forward.{layer}", m=tokens, n=hidden, k=hidden)
        if extra_ns > 0:
            dev.launch("elementwise", name="extra work", elements=_elements_for(dev, extra_ns))
        for layer in reversed(range(layers)):
            dev.launch("gemm", name=f"backward.{layer}", m=tokens, n=2 * hidden, k=hidden)
    return g


def _network_feeds(cluster: Cluster) -> list[tuple[Device, Communicator, list[Stream]]]:
    """For every device, a communicator that brings it its input: from the same device of the
    next host (from the next device of its host when there is one host), sent on a stream of the
    sender's own (its compute does not wait for it), received on the receiver's default stream."""
    out = []
    hosts = cluster.hosts
    side = {id(d): d.stream() for d in cluster.devices()}
    for sim in hosts:
        for dev in sim.devices:
            if len(hosts) > 1:
                src = hosts[(sim.host_index + 1) % len(hosts)].devices[dev.index]
            else:
                src = sim.devices[(dev.index + 1) % len(sim.devices)]
            if src is not dev:
                out.append((dev, cluster.communicator([src, dev]), [side[id(src)], dev.default_stream]))
    return out


def _pcie_bytes_per_ns(dev: Device) -> float:
    return dev.engine.bandwidth["h2d"]


def _elements_for(dev: Device, ns: float) -> int:
    """Elements of a memory-bound elementwise op that takes about ``ns`` on ``dev``."""
    _, terms = dev.cost_of("elementwise", {"elements": 1 << 24})
    per = max(terms.memory_ns, terms.compute_ns, 1.0) / (1 << 24)
    return max(1, int(ns / per))


if __name__ == "__main__":
    run(Cluster(hosts=2, devices=4))
