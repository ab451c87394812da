"""One direction of a link (a device's chip-to-chip port, a host's network interface) and the
transfers booked on it.

A link serves the transfers booked on it one after the other at its full bandwidth: a transfer
takes the earliest free interval at or after the time it is ready (transfers may be booked out of
time order, as collectives resolve, and fill gaps between earlier bookings). Two transfers that
want the same link at once therefore take, together, as long as both back to back: that is the
contention a shared link adds. The ledger keeps at least the most recent ``KEEP`` bookings; older
ones are long finished by the time anything is booked again.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

KEEP = 512  # bookings a link remembers for gap search


@dataclass(eq=False)
class Link:
    """One direction of one link: ``bandwidth`` in bytes/ns (= GB/s), ``latency_ns`` per hop."""

    name: str
    kind: str  # 'c2c' | 'network'
    host: int
    device: int  # -1 for a host's network interface
    direction: str  # 'tx' | 'rx'
    bandwidth: float
    latency_ns: float
    starts: list[float] = field(default_factory=list)  # bookings, sorted by start
    ends: list[float] = field(default_factory=list)

    def free_at(self, t: float, duration: float) -> float:
        """The earliest start ≥ ``t`` of a free interval of ``duration`` on this link."""
        i = bisect.bisect_right(self.starts, t) - 1
        if i >= 0 and self.ends[i] > t:
            t = self.ends[i]
        i = max(i + 1, 0)
        while i < len(self.starts) and self.starts[i] < t + duration:
            t = max(t, self.ends[i])
            i += 1
        return t

    def book(self, start: float, end: float) -> None:
        """Occupy [start, end) (what moves then is kept by the fabric's ``Ledger``)."""
        if not self.starts or start >= self.starts[-1]:  # the usual case: after everything booked
            self.starts.append(start)
            self.ends.append(end)
        else:
            i = bisect.bisect_left(self.starts, start)
            self.starts.insert(i, start)
            self.ends.insert(i, end)
        if len(self.starts) > 2 * KEEP:
            del self.starts[:KEEP], self.ends[:KEEP]


def common_start(links: Sequence[Link], t: float, duration: float) -> float:
    """The earliest start ≥ ``t`` at which every link in ``links`` is free for ``duration``."""
    if all(not x.ends or x.ends[-1] <= t for x in links):  # the usual case: nothing booked ahead
        return t
    while True:
        s = max(x.free_at(t, duration) for x in links)
        if s == t:
            return t
        t = s
