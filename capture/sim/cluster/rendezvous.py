"""Where a collective's participants meet: each participant's command arrives on its device's
collective unit; once the last has arrived the transfers are booked on the links and every
participant's command learns its end.

A participant arrives when its device reaches the collective (its stream's earlier work done,
its collective unit free, the kernel launched). The transfers start at the last arrival (later
when a link they need is busy: contention) and take the collective's planned duration; every
participant ends then. A participant's time between its own arrival and the last one is *skew*
(waiting for the others), the time from the last arrival to the end is *transfer*.

:class:`Rendezvous` is one collective (or send/recv) issued op by op; :class:`ReplayRendezvous`
one replay of a graph captured on every participant, whose collective nodes meet in order.
A device's engine does not run past a collective it holds until that collective is resolved
(:meth:`Rendezvous.resolve` runs the other participants' engines up to their arrival).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .algorithms import Plan
from .ledger import CollectiveTruth, Ledger, LinkTransfers
from .links import KEEP, Link, common_start
from .timebase import ClockModel, is_identity
from .topology import Rank, Topology

if TYPE_CHECKING:
    from ..device.command import Command
    from ..runtime.simulator import Device


class Meeting:
    """What both kinds of rendezvous share: the participants' devices and commands, and running
    the others' engines until they arrive."""

    def __init__(self, fabric: Fabric, devices: Sequence[Device]) -> None:
        self.fabric, self.devices = fabric, list(devices)
        self.cmds: list[Command | None] = [None] * len(devices)
        self.starts = [math.nan] * len(devices)  # raw host ns on each participant's host
        self.resolved = False
        self._resolving = False
        self._index: dict[int, int] = {}

    def join(self, i: int, cmd: Command) -> None:
        """Participant ``i`` has submitted ``cmd``."""
        self.cmds[i] = cmd
        self._index[id(cmd)] = i
        cmd.rendezvous = self

    def arrive(self, cmd: Command, t: float) -> None:
        """``cmd`` started on its device at ``t`` (its host's raw ns); the last arrival resolves."""
        self.starts[self._index[id(cmd)]] = t
        if not any(math.isnan(s) for s in self.starts):
            self.resolved = True
            self.complete()

    def complete(self) -> None:  # pragma: no cover - every kind of meeting defines it
        """Compute every participant's end once all have arrived."""
        raise NotImplementedError

    def resolve(self) -> bool:
        """Run the other participants' engines until they arrive; False when one has not been
        submitted yet (or is itself held by a collective that cannot resolve)."""
        if self.resolved:
            return True
        if self._resolving:
            return False
        self._resolving = True
        try:
            for dev, cmd, start in zip(self.devices, self.cmds, self.starts, strict=True):
                if cmd is None:
                    return False
                if math.isnan(start) and not dev.engine.run_to_start(cmd):
                    return False
        finally:
            self._resolving = False
        return self.resolved


class Fabric:
    """The links of a cluster (``topology``) with the transfers booked on them, and the truth of
    every collective run over them."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.ledger = Ledger()  # every collective booked: its truth and its plan
        self._by_link: tuple[int, list[LinkTransfers]] | None = None
        self._per_link: dict[int, tuple[Sequence[NodeCollective], int, list[tuple[Link, np.ndarray]]]] = {}

    @property
    def truth(self) -> list[CollectiveTruth]:
        """Every collective's truth, in the order booked."""
        return self.ledger.truth()

    def run(self, plan: Plan, arrivals: Sequence[float], name: str, kind: str, algorithm: str, nbytes: int,
            ranks: tuple[Rank, ...]) -> float:
        """Book ``plan`` from the last of ``arrivals`` (true ns), or later when its links are busy;
        returns its end (true ns)."""
        last = max(arrivals)
        start = common_start(plan.links, last, plan.duration_ns) if plan.links else last
        return self.book_at(plan, start, arrivals, name, kind, algorithm, nbytes, ranks)

    def book_at(self, plan: Plan, start: float, arrivals: Sequence[float], name: str, kind: str, algorithm: str,
                nbytes: int, ranks: tuple[Rank, ...]) -> float:
        """Book ``plan``'s links from ``start`` (free then) and keep its truth; returns its end."""
        end = start + plan.duration_ns
        for link in plan.links:
            starts = link.starts
            if (starts and start < starts[-1]) or len(starts) >= 2 * KEEP:
                link.book(start, end)
            else:  # after everything booked on it (Link.book's usual case, inline: many links per collective)
                starts.append(start)
                link.ends.append(end)
        self.ledger.add(CollectiveTruth(len(self.ledger), name, kind, algorithm, nbytes, ranks, tuple(arrivals),
                                        start, end), plan)
        return end

    def book_in_order(self, nodes: Sequence[NodeCollective], starts: np.ndarray, ends: np.ndarray,
                      arrivals: np.ndarray, ranks: tuple[Rank, ...]) -> None:
        """Book collectives one after the other on links free from the first ``starts`` on (what
        :meth:`book_at` does for each, at once); ``arrivals``: a row per collective."""
        for link, rows in self._rows_per_link(nodes):
            link.starts += starts[rows].tolist()
            link.ends += ends[rows].tolist()
            if len(link.starts) > 2 * KEEP:
                del link.starts[:-KEEP], link.ends[:-KEEP]
        self.ledger.add_bulk(nodes, starts, ends, arrivals, ranks)

    def _rows_per_link(self, nodes: Sequence[NodeCollective]) -> list[tuple[Link, np.ndarray]]:
        """Per link the nodes' rows that cross it, in node order: worked out once per graph (a
        graph replays hundreds of times; a node crosses a ring's every link)."""
        got = self._per_link.get(id(nodes))
        if got is None or got[0] is not nodes or got[1] != len(nodes):
            rows: dict[int, tuple[Link, list[int]]] = {}
            for i, n in enumerate(nodes):
                for link in n.plan.links:
                    rows.setdefault(id(link), (link, []))[1].append(i)
            got = (nodes, len(nodes), [(link, np.array(ix, dtype=np.int64)) for link, ix in rows.values()])
            self._per_link[id(nodes)] = got  # keeps ``nodes`` alive, so its id names it alone
        return got[2]

    def link_transfers(self) -> list[LinkTransfers]:
        """Every link that carried something, in the topology's order, with its transfers as
        columns sorted by start (one per collective that crossed it)."""
        if self._by_link is None or self._by_link[0] != len(self.ledger):
            self._by_link = (len(self.ledger), self.ledger.link_transfers(self.topology))
        return self._by_link[1]


class Rendezvous(Meeting):
    """One collective issued op by op: one command per participant on its collective unit."""

    def __init__(self, fabric: Fabric, devices: Sequence[Device], ranks: tuple[Rank, ...], plan: Plan, name: str,
                 kind: str, algorithm: str, nbytes: int) -> None:
        super().__init__(fabric, devices)
        self.ranks, self.plan, self.name = ranks, plan, name
        self.kind, self.algorithm, self.nbytes = kind, algorithm, nbytes

    def complete(self) -> None:
        """Every participant ends when the transfers after the last arrival end."""
        arrivals = [dev.sim.clock_model.to_true(s + (c.cost.launch_ns if c.cost else 0.0))
                    for dev, c, s in zip(self.devices, self.cmds, self.starts, strict=True)]
        end = self.fabric.run(self.plan, arrivals, self.name, self.kind, self.algorithm, self.nbytes, self.ranks)
        for dev, cmd in zip(self.devices, self.cmds, strict=True):
            dev.engine.settled(cmd, dev.sim.clock_model.to_raw(end))


@dataclass(frozen=True)
class NodeCollective:
    """A collective node of a graph captured on every participant: its place and what it does."""

    node: tuple[int, ...]  # its index in each participant's graph
    name: str
    kind: str
    algorithm: str
    nbytes: int
    plan: Plan


class ReplayRendezvous(Meeting):
    """One replay of a graph on every participant: each replay arrives when it starts; then its
    collective nodes meet in order, each participant's node taking from its own arrival to the
    collective's end, and every later node moving by what that changed."""

    def __init__(self, fabric: Fabric, devices: Sequence[Device], ranks: tuple[Rank, ...],
                 nodes: Sequence[NodeCollective], links: Sequence[Link]) -> None:
        super().__init__(fabric, devices)
        self.ranks, self.nodes, self.links = ranks, nodes, links  # links: every node's, once

    def complete(self) -> None:
        """Every participant's node times, collective by collective."""
        runs = [c.graph for c in self.cmds]
        clocks = [dev.sim.clock_model for dev in self.devices]
        starts = np.array(self.starts)
        bodies = np.array([r.body for r in runs])  # a copy: a replay without jitter shares its layout's
        launch = np.array([r.launch for r in runs])
        before = np.add.accumulate(bodies + launch, axis=1) - bodies  # where each body begins, unshifted
        t0 = float(starts.min())
        if _identity(clocks) and all(not x.ends or x.ends[-1] <= t0 for x in self.links):
            self._closed_form(starts, bodies, before)
        else:
            self._node_by_node(clocks, starts, bodies, before)
        ends_off = np.add.accumulate(bodies + launch, axis=1)
        for dev, cmd, run, body, off in zip(self.devices, self.cmds, runs, bodies, ends_off, strict=True):
            run.body, run.end_off = body, off
            dev.engine.settled(cmd, cmd.start_ns + float(off[-1]))

    def _closed_form(self, starts: np.ndarray, bodies: np.ndarray, before: np.ndarray) -> None:
        """Nothing else uses the links from the replays' start on (on one timebase): each
        collective starts at its last arrival, every participant leaves it at its end, so the
        ends are a cumulative sum over the collectives of the slowest participant's compute
        before each plus its duration; ``bodies`` of the collective nodes are set in place."""
        rows = np.arange(len(starts))[:, None]
        nodes = np.array([n.node for n in self.nodes]).T  # (participants, collectives)
        arrive_off = before[rows, nodes]
        seg = arrive_off.copy()
        seg[:, 1:] -= arrive_off[:, :-1] + bodies[rows, nodes[:, :-1]]  # compute since the previous one's end
        dur = np.array([n.plan.duration_ns for n in self.nodes])
        first = float((starts + seg[:, 0]).max())
        ends = first + np.cumsum(np.concatenate([[dur[0]], seg[:, 1:].max(axis=0) + dur[1:]]))
        base = np.concatenate([starts[:, None], np.broadcast_to(ends[:-1], (len(starts), len(ends) - 1))], axis=1)
        arrivals = base + seg
        bodies[rows, nodes] = ends[None, :] - arrivals
        self.fabric.book_in_order(self.nodes, ends - dur, ends, np.ascontiguousarray(arrivals.T), self.ranks)

    def _node_by_node(self, clocks: Sequence[ClockModel], starts: np.ndarray, bodies: np.ndarray,
                      before: np.ndarray) -> None:
        """The general case: collective by collective, through each host's clock and the links' bookings."""
        shift = np.zeros(len(starts))
        rows = np.arange(len(starts))
        for n in self.nodes:
            j = np.array(n.node)
            arrive = starts + before[rows, j] + shift
            same = _identity(clocks)
            true = arrive.tolist() if same else [c.to_true(a) for c, a in zip(clocks, arrive.tolist(), strict=True)]
            end = self.fabric.run(n.plan, true, n.name, n.kind, n.algorithm, n.nbytes, self.ranks)
            ends = np.full(len(starts), end) if same else np.array([c.to_raw(end) for c in clocks])
            new = ends - arrive
            shift += new - bodies[rows, j]
            bodies[rows, j] = new


def _identity(clocks: Sequence[object]) -> bool:
    return all(is_identity(c) for c in clocks)
