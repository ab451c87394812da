"""Bounds on what a user may ask of the simulator, checked before they cost gigabytes: a counter
period of 1 ns made a billion samples a second of device time (3.7 GB and nothing kept), and
100,000 devices 3.9 GB of device models before the first call."""

from __future__ import annotations

MIN_COUNTER_PERIOD_NS = 1_000
MAX_DEVICES = 256
MAX_RING_RECORDS = 1 << 24  # records a device keeps between two drains of a traced session


def check_bounds(devices: int | None, counter_period_ns: int) -> None:
    """Raise ValueError for a device count or counter period beyond what a capture can hold."""
    if devices is not None and devices > MAX_DEVICES:
        raise ValueError(f"devices is at most {MAX_DEVICES}, got {devices:,}")
    if counter_period_ns < MIN_COUNTER_PERIOD_NS:
        raise ValueError(f"counter_period_ns is at least {MIN_COUNTER_PERIOD_NS:,} (1 µs: a shorter period makes "
                         f"more counter samples than a run can keep), got {counter_period_ns:,}")
