"""Collective algorithms as rounds of transfers, and how long they take on a topology.

A collective over ``p`` ranks (in communicator order) of a buffer of ``nbytes`` is a list of
rounds; in a round every edge (sender, receiver) moves its bytes at once, and the round ends
when the slowest edge has: its path's latency plus its bytes at the path's bandwidth divided
by the number of the round's edges that share the busiest link of the path. The classic costs
follow (α: latency, β: bandwidth, S: bytes):

==========================  =========================================  ==========================
collective                  ring                                       tree
==========================  =========================================  ==========================
all-reduce                  2(p−1) rounds of S/p: 2(p−1)(α + S/(pβ))   binomial reduce + broadcast:
                                                                       2⌈log₂p⌉(α + S/β)
all-gather (S: output)      p−1 rounds of S/p                          recursive doubling: round i
                                                                       moves 2^i·S/p
reduce-scatter (S: input)   p−1 rounds of S/p                          recursive halving: round i
                                                                       moves S/2^(i+1)
send/recv                   one edge, α + S/β                          the same
==========================  =========================================  ==========================
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .links import Link
from .topology import Rank, Topology

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "send_recv")
ALGORITHMS = ("ring", "tree")
Edge = tuple[int, int]  # (sender, receiver) as indices into the ranks


@dataclass(frozen=True)
class Round:
    """Edges that move ``nbytes`` each at once, ``repeat`` times in a row."""

    edges: tuple[Edge, ...]
    nbytes: int
    repeat: int = 1


def rounds(kind: str, algorithm: str, p: int, nbytes: int) -> list[Round]:
    """The rounds of collective ``kind`` with ``algorithm`` over ``p`` ranks and ``nbytes``."""
    if kind not in KINDS:
        raise ValueError(f"unknown collective {kind!r}; known: {', '.join(KINDS)}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
    if kind == "send_recv":
        if p != 2:
            raise ValueError(f"{kind} takes exactly 2 ranks, got {p}")
        return [Round(((0, 1),), nbytes)]
    if p == 1:
        return []
    chunk = math.ceil(nbytes / p)
    if algorithm == "ring":
        ring = tuple((i, (i + 1) % p) for i in range(p))
        return [Round(ring, chunk, 2 * (p - 1) if kind == "all_reduce" else p - 1)]
    levels = math.ceil(math.log2(p))
    if kind == "all_reduce":
        up = [Round(tuple((r, r - (1 << i)) for r in range(p) if r % (2 << i) == 1 << i), nbytes)
              for i in range(levels)]
        return up + [Round(tuple((b, a) for a, b in r.edges), nbytes) for r in reversed(up)]
    if kind == "all_gather":
        return [Round(_pairs(p, 1 << i), chunk << i) for i in range(levels)]
    return [Round(_pairs(p, 1 << (levels - 1 - i)), math.ceil(nbytes / (2 << i))) for i in range(levels)]


def _pairs(p: int, distance: int) -> tuple[Edge, ...]:
    """Both directions between each rank and its partner at ``distance`` (rank XOR distance)."""
    return tuple((r, r ^ distance) for r in range(p) if (r ^ distance) < p)


@dataclass(frozen=True)
class Plan:
    """How long a collective's transfers take when its links are free, which links it uses and
    how many bytes cross each."""

    duration_ns: float
    links: tuple[Link, ...]
    link_bytes: tuple[int, ...]


def plan(topology: Topology, kind: str, algorithm: str, ranks: Sequence[Rank], nbytes: int) -> Plan:
    """The duration and links of collective ``kind`` over ``ranks`` ((host, device) each)."""
    total, used, moved = 0.0, {}, Counter()
    for rnd in rounds(kind, algorithm, len(ranks), nbytes):
        paths = [topology.path(ranks[a], ranks[b]) for a, b in rnd.edges]
        share = Counter(id(x) for p in paths for x in p.links)
        worst = max(p.latency_ns + rnd.nbytes / min(x.bandwidth / share[id(x)] for x in p.links) for p in paths)
        total += worst * rnd.repeat
        for p in paths:
            for x in p.links:
                used[id(x)] = x
                moved[id(x)] += rnd.nbytes * rnd.repeat
    return Plan(total, tuple(used.values()), tuple(moved[k] for k in used))
