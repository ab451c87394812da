"""A device clock: its own tick frequency, offset and drift against the host clock.

The device's timestamp counter reads ``ticks = floor(device_ns x f / 1e9)`` where::

    device_ns = host_ns + offset_ns + (host_ns - ref_host_ns) x drift_ppm x 1e-6

``ref_host_ns`` is a host time near the capture (so drift arithmetic stays small and exact
enough in float64); at that instant the device clock is ``offset_ns`` ahead of the host's.
Conversions work on Python ints and on numpy int64 arrays. Device -> host returns the host
time of the start of the tick, so a round trip loses less than one tick period (give or
take 1 ns of rounding).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, overload

import numpy as np

_NS = 1_000_000_000
MAX_FREQ_HZ = 4_000_000_000  # keeps device_ns x f inside int64 for any realistic timestamp


@dataclass(frozen=True)
class DeviceClock:
    """True parameters of one device's timestamp counter relative to the host clock."""

    freq_hz: int
    offset_ns: int = 0
    drift_ppm: float = 0.0
    ref_host_ns: int = 0

    def __post_init__(self) -> None:
        if not (isinstance(self.freq_hz, int) and 0 < self.freq_hz <= MAX_FREQ_HZ):
            raise ValueError(f"freq_hz must be an integer in (0, {MAX_FREQ_HZ}], got {self.freq_hz!r}")
        if abs(self.drift_ppm) >= 1000:
            raise ValueError(f"drift_ppm must be within +-1000, got {self.drift_ppm}")

    @classmethod
    def random(cls, freq_hz: int, rng: np.random.Generator, ref_host_ns: int = 0,
               max_offset_ns: int = 5_000_000_000, max_drift_ppm: float = 30.0) -> DeviceClock:
        """A clock with an offset uniform in +-``max_offset_ns`` and drift in +-``max_drift_ppm``
        (clock rates differ by 5-10 ppm typically, up to 30: REFERENCE.md "Clocks")."""
        offset = int(rng.integers(-max_offset_ns, max_offset_ns + 1))
        drift = float(rng.uniform(-max_drift_ppm, max_drift_ppm))
        return cls(int(freq_hz), offset, drift, int(ref_host_ns))

    @property
    def tick_ns(self) -> float:
        """Length of one tick in nanoseconds."""
        return _NS / self.freq_hz

    def params(self) -> dict[str, Any]:
        """The true parameters, as recorded in a capture's truth."""
        return asdict(self)

    @overload
    def device_ns(self, host_ns: int) -> int: ...
    @overload
    def device_ns(self, host_ns: np.ndarray) -> np.ndarray: ...
    def device_ns(self, host_ns: Any) -> Any:
        """Device time in nanoseconds (before tick quantisation) at ``host_ns``."""
        if isinstance(host_ns, np.ndarray):
            host = host_ns.astype(np.int64, copy=False)
            drift = np.rint((host - self.ref_host_ns).astype(np.float64) * (self.drift_ppm * 1e-6)).astype(np.int64)
            return host + self.offset_ns + drift
        delta = int(host_ns) - self.ref_host_ns
        return int(host_ns) + self.offset_ns + round(delta * self.drift_ppm * 1e-6)

    def to_ticks(self, host_ns: Any) -> Any:
        """Device timestamp counter value at host time ``host_ns``."""
        dev = self.device_ns(host_ns)
        f = self.freq_hz
        if isinstance(dev, np.ndarray):
            if f == _NS:  # a 1 GHz counter counts nanoseconds
                return dev
            whole, part = np.divmod(dev, _NS)
            return whole * f + (part * f) // _NS
        return dev * f // _NS

    def ticks_to_device_ns(self, ticks: Any) -> Any:
        """Device nanoseconds at the start of tick ``ticks``."""
        f = self.freq_hz
        if isinstance(ticks, np.ndarray):
            if f == _NS:  # a 1 GHz counter counts nanoseconds
                return np.array(ticks, dtype=np.int64)
            whole, part = np.divmod(ticks.astype(np.int64, copy=False), f)
            return whole * _NS + (part * _NS) // f
        return int(ticks) * _NS // f

    def to_host_ns(self, ticks: Any) -> Any:
        """Host time at which the device counter reached ``ticks`` (inverse of :meth:`to_ticks`)."""
        dev = self.ticks_to_device_ns(ticks)
        scale = 1.0 + self.drift_ppm * 1e-6
        base = self.ref_host_ns + self.offset_ns  # device_ns at ref_host_ns
        if isinstance(dev, np.ndarray):
            delta = (dev - base).astype(np.float64) / scale
            return self.ref_host_ns + np.ceil(delta - 1e-6).astype(np.int64)
        delta = (dev - base) / scale
        return self.ref_host_ns + int(np.ceil(delta - 1e-6))
