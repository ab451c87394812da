"""What one capture records and where it goes: ``CaptureConfig``.

The service (``accelview profile``, or the app) builds a config from its options and hands
it to the profiled child as JSON on its command line; both sides read the same fields.

=====================  =======================================================================
``spec``, ``seed``,    the simulated devices; unset, the script's own ``sim.session(...)``
``devices``            arguments (or the defaults) apply
``sources``            which event sources are on: ``runtime`` (API calls), ``driver`` (queue
                       submissions), ``device`` (ops and DMA copies), ``pcie`` (transfers),
                       ``counters`` (sampled device counters), ``host_metrics`` (the profiled
                       process's CPU and RSS), ``truth`` (what only the simulator knows)
``counter_period_ns``  sampling period of the device counters
``call_sites``         record the user's file:line and function on every API call (off by
                       default: 2–3 µs a call in the benchmark, as much as the rest of the
                       tracer or more; Nsight Systems' backtraces and the PyTorch profiler's
                       ``with_stack`` are opt-in for the same reason)
``flush_ms``,          the child hands its finished records to the service every ``flush_events``
``flush_events``       API calls, and at least every ``flush_ms`` unless the run is deterministic
``ring_records``       device record ring per device: records beyond it between two drains
                       are dropped and counted (as a real driver's ring would)
``max_seconds``,       stop the capture (the script is terminated, the capture kept, marked
``max_bytes``          incomplete) after this much wall time or this many bytes received
``live``               the service converts the records into the capture while the script runs
                       (off by default: it spools them to disk and converts them once the script
                       has ended, as Nsight Systems processes its events after the run; on a
                       machine with few cores a conversion beside the script slows it)
=====================  =======================================================================
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from ..sim.runtime.limits import MAX_RING_RECORDS, check_bounds

SOURCES = ("runtime", "driver", "device", "pcie", "counters", "host_metrics", "truth")


@dataclass
class CaptureConfig:
    """Settings of one capture session (see the module docstring)."""

    output: str = "capture.h5"
    overwrite: bool = False
    spec: str | None = None  # None: what the script's sim.session(...) asks for, else the default preset
    seed: int | None = None
    devices: int | None = None
    deterministic: bool = False  # True: modelled host time only (reproducible captures, for tests)
    sources: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(SOURCES, True))
    counter_period_ns: int = 10_000
    call_sites: bool = False
    flush_ms: float = 50.0
    flush_events: int = 20_000
    ring_records: int = 1 << 20
    max_seconds: float = 0.0  # 0: no limit
    max_bytes: int = 0  # 0: no limit
    live: bool = False  # convert the records while the script runs (False: spool them, convert after it)

    def __post_init__(self) -> None:
        unknown = set(self.sources) - set(SOURCES)
        if unknown:
            raise ValueError(f"unknown capture source(s) {', '.join(sorted(unknown))}; known: {', '.join(SOURCES)}")
        self.sources = {s: bool(self.sources.get(s, True)) for s in SOURCES}
        for name in ("counter_period_ns", "flush_events", "ring_records", "devices"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        check_bounds(self.devices, self.counter_period_ns)
        if self.ring_records > MAX_RING_RECORDS:
            raise ValueError(f"ring_records is at most {MAX_RING_RECORDS:,} (records kept per device between two "
                             f"drains), got {self.ring_records:,}")
        if self.flush_ms <= 0:
            raise ValueError(f"flush_ms must be positive, got {self.flush_ms}")

    def on(self, source: str) -> bool:
        """Whether ``source`` is recorded."""
        return self.sources[source]

    def to_json(self) -> str:
        """The config as one JSON line (what the child receives)."""
        return json.dumps(dataclasses.asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> CaptureConfig:
        """Inverse of :meth:`to_json`; unknown keys are refused."""
        data: dict[str, Any] = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        extra = set(data) - names
        if extra:
            raise ValueError(f"capture config: unknown field(s) {', '.join(sorted(extra))}")
        return cls(**data)

    def summary(self) -> dict[str, Any]:
        """What the capture's metadata records about its configuration."""
        d = dataclasses.asdict(self)
        d.pop("overwrite")
        return d
