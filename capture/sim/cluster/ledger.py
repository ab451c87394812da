"""What the fabric keeps of every collective it booked: its truth (participants' arrivals, start
and end) and the plan whose links carried it, for the capture's truth rows and link counters.

A graph replay books its tens of collectives at once; tp-decode replays hundreds of times, so
the ledger keeps each replay's bookings as columns (one part) rather than one object per
collective, and makes :class:`CollectiveTruth` objects only when asked for them. The capture
reads the columns (:meth:`Ledger.parts`, :meth:`Ledger.link_transfers`), giving the rows, order
and values that one object per collective gave.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .algorithms import Plan
from .links import Link
from .topology import Rank, Topology

if TYPE_CHECKING:
    from .rendezvous import NodeCollective


@dataclass
class CollectiveTruth:
    """What happened to one collective: per participant arrival, and when transfers began and
    ended (true ns)."""

    seq: int
    name: str
    kind: str
    algorithm: str
    nbytes: int
    ranks: tuple[Rank, ...]
    arrivals: tuple[float, ...]
    start_ns: float
    end_ns: float

    @property
    def last_arrival_ns(self) -> float:
        """When the last participant arrived."""
        return max(self.arrivals)


@dataclass
class LinkTransfers:
    """What one link carried: per transfer its start and end (true ns), bytes and name (an index
    into ``names``), sorted by start."""

    link: Link
    start: np.ndarray
    end: np.ndarray
    nbytes: np.ndarray
    name: np.ndarray
    names: list[str]


@dataclass
class _Bulk:
    """Collectives booked together (one replay's nodes), seq ``first`` on, as columns."""

    first: int
    nodes: Sequence[NodeCollective]
    starts: np.ndarray
    ends: np.ndarray
    arrivals: np.ndarray  # (collectives, participants)
    ranks: tuple[Rank, ...]
    plans: np.ndarray  # each node's plan code
    names: np.ndarray  # each node's name code


class Ledger:
    """Every booked collective in booking order (its seq), as objects or per-replay columns."""

    def __init__(self) -> None:
        self._parts: list[CollectiveTruth | _Bulk] = []
        self._plan_of: list[int] = []  # per single booking (a CollectiveTruth part): its plan code
        self._n = 0
        self._plans: list[Plan] = []  # by code, in the order first booked
        self._plan_code: dict[int, int] = {}
        self._names: list[str] = []
        self._name_code: dict[str, int] = {}
        self._codes: dict[int, tuple[Sequence[NodeCollective], int, np.ndarray, np.ndarray]] = {}
        self._truth: list[CollectiveTruth] = []
        self._truth_parts = 0  # parts already made into ``_truth``

    def __len__(self) -> int:
        return self._n

    def _plan(self, p: Plan) -> int:
        code = self._plan_code.get(id(p))
        if code is None:
            code = self._plan_code[id(p)] = len(self._plans)
            self._plans.append(p)  # kept alive: its id names it alone
        return code

    def _name(self, name: str) -> int:
        code = self._name_code.get(name)
        if code is None:
            code = self._name_code[name] = len(self._names)
            self._names.append(name)
        return code

    def add(self, truth: CollectiveTruth, plan: Plan) -> None:
        """One collective booked on its own (its ``seq`` is ``len(self)``)."""
        self._parts.append(truth)
        self._plan_of.append(self._plan(plan))
        self._name(truth.name)
        self._n += 1

    def add_bulk(self, nodes: Sequence[NodeCollective], starts: np.ndarray, ends: np.ndarray,
                 arrivals: np.ndarray, ranks: tuple[Rank, ...]) -> None:
        """A replay's collective ``nodes`` booked together: their starts and ends (true ns) and
        arrivals, one row per node."""
        got = self._codes.get(id(nodes))
        if got is None or got[0] is not nodes or got[1] != len(nodes):
            got = (nodes, len(nodes), np.array([self._plan(n.plan) for n in nodes], dtype=np.int64),
                   np.array([self._name(n.name) for n in nodes], dtype=np.int64))
            self._codes[id(nodes)] = got  # keeps ``nodes`` alive, so its id names it alone
        self._parts.append(_Bulk(self._n, nodes, starts, ends, arrivals, ranks, got[2], got[3]))
        self._n += len(nodes)

    def truth(self) -> list[CollectiveTruth]:
        """Every collective's truth in seq order (made on first use, part by part)."""
        for part in self._parts[self._truth_parts:]:
            if isinstance(part, CollectiveTruth):
                self._truth.append(part)
                continue
            self._truth += [CollectiveTruth(part.first + i, n.name, n.kind, n.algorithm, n.nbytes, part.ranks,
                                            tuple(a), s, e)
                            for i, (n, s, e, a) in enumerate(zip(part.nodes, part.starts.tolist(), part.ends.tolist(),
                                                                 part.arrivals.tolist(), strict=True))]
        self._truth_parts = len(self._parts)
        return self._truth

    @property
    def names(self) -> list[str]:
        """The collectives' names, by the code :meth:`parts` gives them."""
        return self._names

    def parts(self) -> Iterator[tuple[tuple[Rank, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """The collectives in parts of one set of participants: (ranks, seqs, name codes (into
        :attr:`names`), arrivals (collectives × participants), ends), in seq order."""
        for part in self._parts:
            if isinstance(part, CollectiveTruth):
                yield (part.ranks, np.array([part.seq], dtype=np.int64),
                       np.array([self._name_code[part.name]], dtype=np.int64),
                       np.array([part.arrivals], dtype=np.float64), np.array([part.end_ns], dtype=np.float64))
            else:
                yield (part.ranks, part.first + np.arange(len(part.nodes), dtype=np.int64), part.names,
                       part.arrivals, part.ends)

    def _columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(start, end, plan code, name code) of every booking, in seq order."""
        cols: list[tuple[np.ndarray, ...]] = []
        single = iter(self._plan_of)
        for part in self._parts:
            if isinstance(part, CollectiveTruth):
                cols.append((np.array([part.start_ns], dtype=np.float64), np.array([part.end_ns], dtype=np.float64),
                             np.array([next(single)], dtype=np.int64),
                             np.array([self._name_code[part.name]], dtype=np.int64)))
            else:
                cols.append((part.starts, part.ends, part.plans, part.names))
        if not cols:
            return np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64)
        return tuple(np.concatenate(c) for c in zip(*cols, strict=True))  # type: ignore[return-value]

    def link_transfers(self, topology: Topology) -> list[LinkTransfers]:
        """Every link that carried something, in the topology's order, with its transfers as
        columns sorted by start; ties in the order of the plans' first bookings, then of the
        bookings (names indexed in that order too)."""
        start, end, plan, name = self._columns()
        seq = np.arange(len(start), dtype=np.int64)
        codes, first = np.unique(plan, return_index=True)
        rank = np.zeros(len(self._plans), dtype=np.int64)
        rank[codes[np.argsort(first, kind="stable")]] = np.arange(len(codes))
        plan_rank = rank[plan]
        by_group = np.lexsort((seq, plan_rank))
        in_group = name[by_group]
        _, at = np.unique(in_group, return_index=True)
        name_order = in_group[np.sort(at)]
        index = np.zeros(len(self._names), dtype=np.int64)
        index[name_order] = np.arange(len(name_order))
        names = [self._names[c] for c in name_order.tolist()]
        crossing: dict[int, list[tuple[int, int, int]]] = {}  # link → (plan code, its place in the plan, bytes)
        for code in codes.tolist():
            p = self._plans[code]
            for k, (link, moved) in enumerate(zip(p.links, p.link_bytes, strict=True)):
                crossing.setdefault(id(link), []).append((code, k, moved))
        out = []
        for link in topology.links():
            got = crossing.get(id(link))
            if got is None:
                continue
            rows = [np.flatnonzero(plan == code) for code, _, _ in got]
            r = np.concatenate(rows)
            place = np.concatenate([np.full(len(x), k, dtype=np.int64) for x, (_, k, _) in zip(rows, got, strict=True)])
            moved = np.concatenate([np.full(len(x), m, dtype=np.int64) for x, (_, _, m) in zip(rows, got, strict=True)])
            order = np.lexsort((r, place, plan_rank[r], start[r]))
            r = r[order]
            out.append(LinkTransfers(link, start[r], end[r], moved[order], index[name[r]], names))
        return out
