"""A large simulated fleet, written one capture per host, with known faults planted in it.

    from accelview.capture.sim.cluster.fleet import FleetPlan, write_fleet

    truth = write_fleet(FleetPlan.random(hosts=64, devices=8, seed=0), "fleet/")
    # fleet/host0.h5 … fleet/host63.h5, and fleet/fleet-truth.json: what was planted

Every host runs data-parallel steps on every device: its input arrives over the network from
the same device of the next host, its neighbour device's activations over chip-to-chip, then
a graph of forward and backward GEMMs, then one all-reduce of the gradients over every device
of the fleet (a tree: ~2 transfers per device, so a fleet of hundreds of devices stays cheap
to simulate), and every host waits for its devices. Planted, on hosts drawn from the seed:

- ``slow-device``: one device runs an extra kernel of ``delay_us`` each step (its own compute);
- ``slow-host``: one host thread is busy ``delay_us`` before it launches its step (host);
- ``slow-network-link``: one host's network interfaces receive slowly enough that its input
  arrives ``delay_us`` late (network);
- ``slow-c2c-link``: one device's chip-to-chip port receives slowly enough that its
  neighbour's activations arrive ``delay_us`` late (its link);
- ``clock-step``: one host's clock steps forward (NTP) halfway through the run.

A transfer keeps the collective units of both its ends busy (as a communication kernel does on
both GPUs), so a slow link holds back its sender too: the truth names it (``peer``: the host
and device that send over the link). Each straggler has its own delay (largest first, in the
order above), so they rank apart; the plants and their peers are on hosts of their own while
there are hosts enough, the stepped clock on a host no straggler touches. The
The
hosts are simulated together (their collectives meet), then each host's capture is built,
written and dropped before the next: memory holds the simulation and one capture.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..runtime.simulator import Device
from .cluster import Cluster

TRUTH_FILE = "fleet-truth.json"
STRAGGLERS = ("slow-device", "slow-host", "slow-network-link", "slow-c2c-link")
CAUSES = {"slow-device": "compute", "slow-host": "host", "slow-network-link": "network", "slow-c2c-link": "c2c"}


@dataclass(frozen=True)
class Plant:
    """One planted fault: its kind, where (``device`` None: the whole host), how much."""

    kind: str
    host: int
    device: int | None
    delay_us: float = 0.0  # a straggler's lateness per step
    jump_us: float = 0.0  # a clock step's size
    peer: tuple[int, int | None] | None = None  # a slow link's sending end (host, device; None: every device)

    def as_json(self) -> dict[str, Any]:
        """The plant as the truth file states it (hosts by name)."""
        out: dict[str, Any] = {"kind": self.kind, "host": f"host{self.host}", "device": self.device}
        if self.kind in CAUSES:
            out.update(cause=CAUSES[self.kind], delay_us=self.delay_us)
        else:
            out["jump_us"] = self.jump_us
        if self.peer is not None:
            out["peer"] = {"host": f"host{self.peer[0]}", "device": self.peer[1]}
        return out

    def hosts(self) -> set[int]:
        """The hosts this plant makes late (a slow link's two ends)."""
        return {self.host} | ({self.peer[0]} if self.peer is not None else set())


@dataclass(frozen=True)
class FleetPlan:
    """A fleet's shape, its workload's sizes, and its plants."""

    hosts: int
    devices: int
    seed: int = 0
    steps: int = 4
    plants: tuple[Plant, ...] = field(default=())
    tokens: int = 2048
    hidden: int = 2048
    layers: int = 2
    input_kb: float = 512.0  # per device per step, over the network
    activations_kb: float = 1024.0  # per device per step, over chip-to-chip
    grad_mb: float = 2.0
    drift_ppm: float = 30.0
    jitter_ns: float = 150.0
    counter_period_ns: int = 50_000

    @classmethod
    def random(cls, hosts: int, devices: int, seed: int = 0, delay_us: float = 400.0, jump_us: float = 1000.0,
               **sizes: Any) -> FleetPlan:
        """Every kind of plant on hosts drawn from ``seed`` (distinct while there are hosts enough;
        never host0, the fleet's reference clock, for the step): stragglers late by ``delay_us``,
        ¾ of it, ½ and ⅜ (a chip-to-chip plant needs two devices a host)."""
        if hosts < 2 or devices < 1:
            raise ValueError(f"a fleet needs at least 2 hosts of 1 device, got {hosts} x {devices}")
        rng = np.random.default_rng([seed, 24])
        free = [int(h) for h in rng.permutation(np.arange(1, hosts))]
        used: set[int] = set()
        plants = []
        kinds = [k for k in STRAGGLERS if k != "slow-c2c-link" or devices > 1]
        for kind, share in zip(kinds, (1.0, 0.75, 0.5, 0.375), strict=False):
            delay = round(delay_us * share, 1)
            if kind == "slow-network-link":  # its input comes from the same device of the next host
                h = _pick(free, used | {0}, lambda h: (h + 1) % hosts)
                plant = Plant(kind, h, None, delay, peer=((h + 1) % hosts, None))
            elif kind == "slow-c2c-link":  # its activations come from the previous device of its host
                d, h = int(rng.integers(devices)), _pick(free, used)
                plant = Plant(kind, h, d, delay, peer=(h, (d - 1) % devices))
            else:
                plant = Plant(kind, _pick(free, used), int(rng.integers(devices)) if kind == "slow-device" else None,
                              delay)
            used.update(plant.hosts())
            plants.append(plant)
        plants.append(Plant("clock-step", _pick(free, used), None, jump_us=jump_us))
        return cls(hosts, devices, seed, plants=tuple(plants), **sizes)

    def plant(self, kind: str) -> Plant | None:
        """The plant of ``kind`` (None: none)."""
        return next((p for p in self.plants if p.kind == kind), None)


def _pick(free: list[int], used: set[int], peer: Any = None) -> int:
    """The first host of ``free`` that neither it nor its ``peer(host)`` is in ``used``; the first
    of ``free`` when there is none (a small fleet: plants share hosts)."""
    for h in free:
        if h not in used and (peer is None or peer(h) not in used):
            return h
    return free[0]


def simulate(plan: FleetPlan) -> Cluster:
    """Run ``plan``'s fleet to the end (its captures not built yet)."""
    from ..workloads import new_cluster, step_host_clock

    cluster = new_cluster(plan.hosts, plan.devices, seed=plan.seed, counter_period_ns=plan.counter_period_ns,
                          drift_ppm=plan.drift_ppm, jitter_ns=plan.jitter_ns)
    devs = cluster.devices()
    inputs, acts = max(1, int(plan.input_kb * 1e3)), max(1, int(plan.activations_kb * 1e3))
    _slow_links(cluster, plan, inputs, acts)
    slow_dev, slow_host = plan.plant("slow-device"), plan.plant("slow-host")
    graphs = {id(d): _step_graph(d, plan, slow_dev.delay_us * 1e3 if slow_dev is not None and
                                 (d.sim.host_index, d.index) == (slow_dev.host, slow_dev.device) else 0.0)
              for d in devs}
    feeds = _feeds(cluster, inputs, acts)
    comm = cluster.communicator(devs, algorithm="tree")
    for step in range(plan.steps):
        with cluster.annotate(f"step {step}"):
            for feed, streams, nbytes, name in feeds:
                feed.send(0, 1, nbytes, streams=streams, name=name)
            for sim in cluster.hosts:
                if slow_host is not None and sim.host_index == slow_host.host:
                    sim.host_work("data loading", slow_host.delay_us * 1e3)
                for dev in sim.devices:
                    graphs[id(dev)].launch()
            comm.all_reduce(max(1, int(plan.grad_mb * 1e6)), name="gradients all_reduce")
            cluster.synchronize()
    cluster.finish()
    step = plan.plant("clock-step")
    if step is not None:
        step_host_clock(cluster, step.host, step.jump_us, 0.5)
    return cluster


def write_fleet(plan: FleetPlan, out: str | Path, overwrite: bool = False) -> dict[str, Any]:
    """Simulate ``plan`` and write ``out``/host0.h5 … (one host's capture built, written and
    dropped at a time) and ``out``/fleet-truth.json; returns the truth."""
    from accelview.model.store.writer import write_capture

    from ...convert.tracewriter import build_trace

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = [f"host{h}.h5" for h in range(plan.hosts)]
    for f in [*files, TRUTH_FILE]:
        if (out / f).exists() and not overwrite:
            raise ValueError(f"{out / f}: already exists")
    cluster = simulate(plan)
    events = 0
    for sim, f in zip(cluster.hosts, files, strict=True):
        trace = build_trace(sim)
        events += len(trace.slices)
        write_capture(trace, out / f, overwrite=overwrite)
        del trace
    truth = fleet_truth(plan, cluster, files, events)
    (out / TRUTH_FILE).write_text(json.dumps(truth, indent=1) + "\n")
    return truth


def fleet_truth(plan: FleetPlan, cluster: Cluster, files: list[str], slices: int) -> dict[str, Any]:
    """What was planted and where, as JSON: the stragglers from the latest, and the stepped clock
    with the raw reading of its host at which it stepped."""
    plants = []
    for p in plan.plants:
        row = p.as_json()
        if p.kind == "clock-step":
            steps = cluster.host(p.host).clock_model.steps  # type: ignore[attr-defined]
            row["at_raw_ns"] = int(steps[0][0]) if steps else None
        plants.append(row)
    sizes = {k: v for k, v in asdict(plan).items() if k not in ("plants", "hosts", "devices", "seed")}
    return {"hosts": plan.hosts, "devices": plan.devices, "seed": plan.seed, "files": files, "slices": slices,
            "workload": sizes, "planted": plants,
            "stragglers": [r for r in plants if r["kind"] in CAUSES],
            "late_hosts": sorted({f"host{h}" for p in plan.plants if p.kind in CAUSES for h in p.hosts()},
                                 key=lambda n: int(n[4:])),
            "clock_steps": [r for r in plants if r["kind"] == "clock-step"]}


def _step_graph(dev: Device, plan: FleetPlan, extra_ns: float) -> Any:
    """A device's forward and backward pass as one graph, with an extra kernel of about
    ``extra_ns`` on a slow device."""
    with dev.graph("train step") as g:
        for layer in range(plan.layers):
            dev.launch("gemm", name=f"forward.{layer}", m=plan.tokens, n=plan.hidden, k=plan.hidden)
        if extra_ns > 0:
            _, terms = dev.cost_of("elementwise", {"elements": 1 << 24})
            per = max(terms.memory_ns, terms.compute_ns, 1.0) / (1 << 24)
            dev.launch("elementwise", name="extra work", elements=max(1, int(extra_ns / per)))
        for layer in reversed(range(plan.layers)):
            dev.launch("gemm", name=f"backward.{layer}", m=plan.tokens, n=2 * plan.hidden, k=plan.hidden)
    return g


def _feeds(cluster: Cluster, inputs: int, acts: int) -> list[tuple[Any, list[Any], int, str]]:
    """Each device's inputs as (communicator of sender and receiver, their streams, bytes, name): over
    the network from the same device of the next host, over chip-to-chip from the previous
    device of its host; sent on a stream of the sender's own, received on the receiver's default."""
    out = []
    side = {id(d): d.stream() for d in cluster.devices()}
    hosts = cluster.hosts
    for sim in hosts:
        for dev in sim.devices:
            src = hosts[(sim.host_index + 1) % len(hosts)].devices[dev.index]
            out.append((cluster.communicator([src, dev]), [side[id(src)], dev.default_stream], inputs, "input"))
            if len(sim.devices) > 1:
                near = sim.devices[(dev.index - 1) % len(sim.devices)]
                out.append((cluster.communicator([near, dev]), [side[id(near)], dev.default_stream], acts,
                            "activations"))
    return out


def _slow_links(cluster: Cluster, plan: FleetPlan, inputs: int, acts: int) -> None:
    """The planted slow links' receive bandwidth: low enough that what they bring each step takes
    the plant's delay longer (before any path over them is taken)."""
    topo = cluster.fabric.topology
    net, c2c = plan.plant("slow-network-link"), plan.plant("slow-c2c-link")
    if net is not None:
        for (h, _, x), link in topo.net.items():
            if h == net.host and x == "rx":
                link.bandwidth = inputs / (inputs / link.bandwidth + net.delay_us * 1e3)
    if c2c is not None:
        link = topo.c2c[(c2c.host, c2c.device, "rx")]
        link.bandwidth = acts / (acts / link.bandwidth + c2c.delay_us * 1e3)
