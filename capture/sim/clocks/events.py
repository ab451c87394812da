"""Causal pairs of events on a cluster's clocks, for checking an alignment against causality.

Each pair is a cause and its effect in true time, stamped by the clocks that would stamp them
in a real capture:

- ``launch``: a host launches work on one of its devices (host clock), the device completes
  it at least ``LAUNCH_MIN_NS`` later (device clock);
- ``send``: one host sends to another (sender's clock), the receiver gets it at least
  ``NET_MIN_NS`` later (receiver's clock);
- ``collective``: every device of every host arrives at a collective (its own clock), and it
  ends on each participant after the last arrival (each participant's clock).

The true times come along so that a benchmark can place each domain's events in record order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cluster import ClusterClocks, device_name, host_name

LAUNCH_MIN_NS = 3_000
NET_MIN_NS = 2_000
COLLECTIVE_MIN_NS = 5_000


@dataclass(frozen=True)
class EventPairs:
    """``kind`` pairs: cause on ``cause_domain`` at ``cause_true``, effect on ``effect_domain`` at
    ``effect_true`` (true ns), read as ``cause_ns`` / ``effect_ns`` by their clocks."""

    kind: str
    cause_domain: str
    effect_domain: str
    cause_true: np.ndarray
    effect_true: np.ndarray
    cause_ns: np.ndarray
    effect_ns: np.ndarray


@dataclass(frozen=True)
class Collectives:
    """Collectives as rows, participants (``domains``) as columns: true and clock-read times of
    each participant's arrival and of the collective's end on it."""

    domains: list[str]
    arrival_true: np.ndarray
    end_true: np.ndarray
    arrival_ns: np.ndarray
    end_ns: np.ndarray


def _pairs(clocks: ClusterClocks, kind: str, cause: str, effect: str, t0: np.ndarray, gap: np.ndarray) -> EventPairs:
    t1 = t0 + gap.astype(np.int64)
    return EventPairs(kind, cause, effect, t0, t1, clocks.clock(cause).read(t0), clocks.clock(effect).read(t1))


def causal_events(clocks: ClusterClocks, seconds: float, seed: int, launches_per_device: int = 5000,
                  sends: int = 20000, collectives: int = 500) -> tuple[list[EventPairs], Collectives]:
    """Launch→completion pairs on every device, send→receive pairs between random host pairs, and
    collectives over every device of the cluster, spread over ``seconds``."""
    rng = np.random.default_rng([seed, 29])
    end = int(seconds * 1e9) - 10_000_000
    hosts, per_host = len(clocks.hosts), len(clocks.devices[0]) if clocks.devices else 0
    pairs = []
    for h in range(hosts):
        for d in range(per_host):
            t0 = np.sort(rng.integers(0, end, launches_per_device))
            gap = LAUNCH_MIN_NS + rng.exponential(10_000, len(t0))
            pairs.append(_pairs(clocks, "launch", host_name(h), device_name(h, d), t0, gap))
    if hosts > 1:
        a = rng.integers(0, hosts, sends)
        b = (a + rng.integers(1, hosts, sends)) % hosts
        t0 = rng.integers(0, end, sends)
        gap = NET_MIN_NS + rng.exponential(2_000, sends)
        for x in range(hosts):
            for y in range(hosts):
                sel = (a == x) & (b == y)
                if sel.any():
                    order = np.argsort(t0[sel])
                    pairs.append(_pairs(clocks, "send", host_name(x), host_name(y), t0[sel][order], gap[sel][order]))
    domains = [device_name(h, d) for h in range(hosts) for d in range(per_host)]
    collectives = collectives if domains else 0
    start = np.sort(rng.integers(0, end, collectives))[:, None]
    arrival = start + rng.exponential(50_000, (collectives, len(domains))).astype(np.int64)
    finish = arrival.max(axis=1, keepdims=True, initial=0) + COLLECTIVE_MIN_NS + rng.exponential(
        2_000, (collectives, len(domains))).astype(np.int64)
    read = [clocks.clock(dom) for dom in domains]
    arrival_ns, end_ns = np.zeros_like(arrival), np.zeros_like(finish)
    for i, c in enumerate(read):
        arrival_ns[:, i], end_ns[:, i] = c.read(arrival[:, i]), c.read(finish[:, i])
    return pairs, Collectives(domains, arrival, finish, arrival_ns, end_ns)
