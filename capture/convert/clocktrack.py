"""A device clock's alignment to the host, estimated while the capture runs.

The collector takes sync samples (see :mod:`accelview.capture.convert.clocksync`) every
millisecond of host time as the run goes, and refits offset and drift to all samples so far
before it converts a drain's device timestamps: early records use an offset-only estimate,
later ones the fitted drift. The capture's ``clocks`` row holds the final estimate; the
samples themselves are streamed into ``clock_samples``. Memory is bounded: beyond
``keep`` samples every other one is dropped from the fit (all of them are still written).
"""

from __future__ import annotations

import numpy as np

from ..sim.device.clock import DeviceClock
from .clocksync import ClockEstimate, SyncSamples, estimate, take_samples

SAMPLE_PERIOD_NS = 1_000_000


class ClockTracker:
    """Sync samples and the running estimate of one device clock."""

    def __init__(self, clock: DeviceClock, start_ns: int, rng: np.random.Generator, keep: int = 4000) -> None:
        self.clock = clock
        self.rng = rng
        self.keep = keep
        self.last_ns = int(start_ns)
        self._send: list[np.ndarray] = []
        self._ticks: list[np.ndarray] = []
        self._recv: list[np.ndarray] = []
        self.estimate: ClockEstimate | None = None
        self._unsent: list[SyncSamples] = []
        self.update(int(start_ns) + 16 * SAMPLE_PERIOD_NS // 1000, first=True)

    def update(self, now_ns: int, first: bool = False) -> SyncSamples | None:
        """Take the samples due up to ``now_ns``, refit; returns the new samples (None if none)."""
        span = int(now_ns) - self.last_ns
        if span < SAMPLE_PERIOD_NS and not first:
            return None
        n = 16 if first else max(1, span // SAMPLE_PERIOD_NS)
        new = take_samples(self.clock, self.last_ns, max(int(now_ns), self.last_ns + n), self.rng,
                           SAMPLE_PERIOD_NS, min_samples=n, max_samples=n)
        self.last_ns = int(new.ref_recv_ns[-1]) + 1
        self._unsent.append(new)
        self._send.append(new.ref_send_ns)
        self._ticks.append(new.domain_ticks)
        self._recv.append(new.ref_recv_ns)
        send, ticks, recv = (np.concatenate(x) for x in (self._send, self._ticks, self._recv))
        if len(send) > self.keep:
            send, ticks, recv = send[::2], ticks[::2], recv[::2]
        self._send, self._ticks, self._recv = [send], [ticks], [recv]
        self.estimate = estimate(self.clock, SyncSamples(send, ticks, recv))
        return new

    def take_unsent(self) -> SyncSamples | None:
        """The samples taken since the last call (None if none)."""
        if not self._unsent:
            return None
        parts, self._unsent = self._unsent, []
        return SyncSamples(*(np.concatenate([getattr(p, f) for p in parts])
                             for f in ("ref_send_ns", "domain_ticks", "ref_recv_ns")))

    def to_ref(self, t: np.ndarray) -> np.ndarray:
        """True host times of device events → the device's timestamps → reference host ns
        through the current estimate (what a real collector can do)."""
        assert self.estimate is not None
        ticks = self.clock.to_ticks(np.rint(np.asarray(t, dtype=np.float64)).astype(np.int64))
        return self.estimate.to_ref(self.clock.ticks_to_device_ns(ticks))
