"""Sync samples as brackets, and the low-delay ones worth fitting.

A bracket is one two-way exchange between a parent clock and a domain clock: the parent's time
before, the domain's timestamp, the parent's time after. Whatever the delays were, the domain
was read somewhere inside ``[send, recv]`` of parent time, so the exchanges with the shortest
round trip pin the offset best (NTP and PTP keep the minimum-delay samples for that reason;
Intel Trace Collector drops the slowest 10%).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Brackets:
    """Two-way exchanges: parent ns before, domain ns read in between, parent ns after (int64)."""

    parent_send_ns: np.ndarray
    domain_ns: np.ndarray
    parent_recv_ns: np.ndarray

    def __len__(self) -> int:
        return len(self.domain_ns)

    @property
    def mid(self) -> np.ndarray:
        """Parent time halfway through each exchange (float64 ns)."""
        return (self.parent_send_ns.astype(np.float64) + self.parent_recv_ns.astype(np.float64)) / 2

    @property
    def rtt(self) -> np.ndarray:
        """Round trip of each exchange (float64 ns)."""
        return (self.parent_recv_ns - self.parent_send_ns).astype(np.float64)


def low_delay(b: Brackets, window: int = 64, keep: float = 0.1) -> np.ndarray:
    """Row numbers of the exchanges whose round trip is in the lowest ``keep`` share of their
    window of consecutive exchanges, in the order taken. Windows keep the selection spread
    over the capture even when the delays change with load; they hold ``window`` exchanges, or
    a sixteenth of them all when there are few (a short PTP record), and give at least two."""
    n = len(b)
    if n == 0:
        return np.zeros(0, np.int64)
    window = int(np.clip(n // 16, 4, window))
    rtt = b.rtt
    out = []
    for lo in range(0, n, window):
        w = rtt[lo:lo + window]
        k = min(len(w), max(2, round(len(w) * keep)))
        out.append(lo + np.sort(np.argpartition(w, k - 1)[:k]))
    return np.concatenate(out)
