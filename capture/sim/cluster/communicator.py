"""The API of collectives: a communicator over some devices of one host or of many.

::

    comm = sim.communicator()                        # every device of this host (or cluster.communicator())
    comm.all_reduce(16 << 20)                        # bytes, or a DeviceBuffer (or one per participant)
    comm.all_gather(buf, algorithm="tree", streams=[s0, s1])
    comm.send(0, 1, 4 << 20)                         # participant 0 sends, participant 1 receives
    with comm.graph("decode") as g:                  # captured on every participant at once
        for dev in comm.devices:
            dev.launch("gemm", m=1, n=4096, k=4096)
        comm.all_reduce(8192)
    g.launch(kv_len=513)                             # one replay per participant; their collectives meet

A call issues one command per participant (one API call on each participant's host thread, as a
group call does) on its stream (default: the device's default stream), so events recorded after it
and waits before it order it like any other work. Each command runs on its device's collective
unit; see :mod:`.rendezvous` for when it ends.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from ..device.costs import cost
from ..runtime.buffers import DeviceBuffer
from .algorithms import ALGORITHMS, Plan, plan
from .links import Link
from .rendezvous import Fabric, NodeCollective, Rendezvous, ReplayRendezvous
from .topology import Rank

if TYPE_CHECKING:
    from ..runtime.graph import Graph
    from ..runtime.simulator import Device, Stream

Buffer = int | DeviceBuffer | Sequence[DeviceBuffer]


class Communicator:
    """Collectives over ``devices`` (in rank order) with ``algorithm`` ('ring' or 'tree') by default."""

    def __init__(self, fabric: Fabric, devices: Sequence[Device], algorithm: str = "ring") -> None:
        if not devices:
            raise ValueError("a communicator needs at least one device")
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
        self.fabric, self.devices, self.algorithm = fabric, list(devices), algorithm
        self.ranks: tuple[Rank, ...] = tuple((d.sim.host_index, d.index) for d in devices)
        if len(set(self.ranks)) != len(self.ranks):
            raise ValueError("a communicator's devices must be distinct")
        self._plans: dict[tuple, Plan] = {}
        self._capture: CommGraph | None = None

    def all_reduce(self, buf: Buffer, algorithm: str | None = None, streams: Sequence[Stream] | None = None,
                   name: str | None = None) -> None:
        """Sum ``buf`` (bytes, or buffers) over every participant."""
        self._collective("all_reduce", buf, algorithm, streams, name)

    def all_gather(self, buf: Buffer, algorithm: str | None = None, streams: Sequence[Stream] | None = None,
                   name: str | None = None) -> None:
        """Gather every participant's part into ``buf`` (its size: the whole output) on every one."""
        self._collective("all_gather", buf, algorithm, streams, name)

    def reduce_scatter(self, buf: Buffer, algorithm: str | None = None, streams: Sequence[Stream] | None = None,
                       name: str | None = None) -> None:
        """Sum ``buf`` (its size: the whole input) and leave each participant its part."""
        self._collective("reduce_scatter", buf, algorithm, streams, name)

    def send(self, src: int, dst: int, buf: Buffer, streams: Sequence[Stream] | None = None,
             name: str | None = None) -> None:
        """Participant ``src`` sends ``buf`` to participant ``dst`` (a send on one, the matching
        receive on the other)."""
        if self._capture is not None:
            raise ValueError("send inside a communicator's graph capture is not supported: capture collectives")
        for r in (src, dst):
            if not 0 <= r < len(self.devices):
                raise ValueError(f"no participant {r}: this communicator has {len(self.devices)}")
        if src == dst:
            raise ValueError(f"send: source and destination are both participant {src}")
        nbytes = _nbytes(buf)
        devs = [self.devices[src], self.devices[dst]]
        ranks = (self.ranks[src], self.ranks[dst])
        p = self._plan("send_recv", "ring", ranks, nbytes)
        rv = Rendezvous(self.fabric, devs, ranks, p, name or "send/recv", "send_recv", "ring", nbytes)
        peers = [f"host{h}/device{d}" for h, d in reversed(ranks)]  # each side names the other
        for i, (dev, op) in enumerate(zip(devs, ("send", "recv"), strict=True)):
            rv.join(i, self._submit(dev, op, name or op, {"nbytes": nbytes, "ranks": 2, "algorithm": "ring",
                                                          "peer": peers[i]}, _stream(streams, i, dev), rv))

    @contextmanager
    def graph(self, name: str = "graph") -> Iterator[CommGraph]:
        """Capture, on every participant at once, the launches and collectives made inside the
        block into one graph per device; ``launch()`` then replays them all."""
        if self._capture is not None:
            raise RuntimeError(f"already capturing graph {self._capture.name!r} on this communicator")
        with ExitStack() as stack:
            graphs = [stack.enter_context(dev.graph(name)) for dev in self.devices]
            self._capture = CommGraph(self, name, graphs)
            try:
                yield self._capture
            finally:
                self._capture = None

    # -- internals -----------------------------------------------------------------------------
    def _collective(self, kind: str, buf: Buffer, algorithm: str | None, streams: Sequence[Stream] | None,
                    name: str | None) -> None:
        algorithm = algorithm or self.algorithm
        nbytes = _nbytes(buf)
        p = self._plan(kind, algorithm, self.ranks, nbytes)
        dims = {"nbytes": nbytes, "ranks": len(self.devices), "algorithm": algorithm}
        label = name or kind
        if self._capture is not None:
            if streams is not None:
                raise ValueError(f"{kind} inside a graph capture: the streams are chosen when the graph is launched")
            self._capture.add(label, kind, dims, algorithm, nbytes, p)
            return
        rv = Rendezvous(self.fabric, self.devices, self.ranks, p, label, kind, algorithm, nbytes)
        for i, dev in enumerate(self.devices):
            rv.join(i, self._submit(dev, kind, label, dims, _stream(streams, i, dev), rv))

    def _plan(self, kind: str, algorithm: str, ranks: tuple[Rank, ...], nbytes: int) -> Plan:
        key = (kind, algorithm, ranks, nbytes)
        got = self._plans.get(key)
        if got is None:
            if len(self._plans) > 4096:
                self._plans.clear()
            got = self._plans[key] = plan(self.fabric.topology, kind, algorithm, ranks, nbytes)
        return got

    @staticmethod
    def _submit(dev: Device, op: str, name: str, dims: dict[str, Any], stream: Stream, rv: Rendezvous) -> Any:
        work, terms, args = dev._cached(op, dims)
        return dev.submit("op", stream, name, dev.spec.host.launch_api_ns, api_name=f"{op} {name}"
                          if name != op else op, cost=cost(dev.spec, work, None, terms), args=args, rendezvous=rv)


class CommGraph:
    """A graph captured on every participant of a communicator (see :meth:`Communicator.graph`)."""

    def __init__(self, comm: Communicator, name: str, graphs: list[Graph]) -> None:
        self.comm, self.name, self.graphs = comm, name, graphs
        self.nodes: list[NodeCollective] = []
        self._links: tuple[int, list[Link]] | None = None  # every node's links, once (for how many nodes)

    def add(self, label: str, kind: str, dims: dict[str, Any], algorithm: str, nbytes: int, p: Plan) -> None:
        """A collective node on every participant's graph (called while capturing)."""
        for g in self.graphs:
            g.add(label, kind, dims, {})
        self.nodes.append(NodeCollective(tuple(len(g) - 1 for g in self.graphs), label, kind, algorithm, nbytes, p))

    def launch(self, streams: Sequence[Stream] | None = None, **updates: Any) -> None:
        """Replay every participant's graph (one API call on each); ``updates`` as ``Graph.launch``."""
        if not self.nodes:  # nothing to meet over: plain replays
            for i, (dev, g) in enumerate(zip(self.comm.devices, self.graphs, strict=True)):
                dev.launch_graph(g, _stream(streams, i, dev), updates)
            return
        if self._links is None or self._links[0] != len(self.nodes):
            self._links = (len(self.nodes), list({id(x): x for n in self.nodes for x in n.plan.links}.values()))
        rv = ReplayRendezvous(self.comm.fabric, self.comm.devices, self.comm.ranks, self.nodes, self._links[1])
        for i, (dev, g) in enumerate(zip(self.comm.devices, self.graphs, strict=True)):
            rv.join(i, dev.launch_graph(g, _stream(streams, i, dev), updates, rendezvous=rv))


def _nbytes(buf: Buffer) -> int:
    if isinstance(buf, DeviceBuffer):
        return buf.nbytes
    if isinstance(buf, int) and not isinstance(buf, bool):
        if buf <= 0:
            raise ValueError(f"a collective needs a positive size, got {buf}")
        return buf
    sizes = {b.nbytes for b in buf}
    if len(sizes) != 1:
        raise ValueError(f"a collective's buffers must all have the same size, got {sorted(sizes)}")
    return sizes.pop()


def _stream(streams: Sequence[Stream] | None, i: int, dev: Device) -> Stream:
    if streams is None:
        return dev.default_stream
    s = streams[i]
    if s.device is not dev:
        raise ValueError(f"stream {i} belongs to {s.device!r}, not to participant {i} ({dev!r})")
    return s
