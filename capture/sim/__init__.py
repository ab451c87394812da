"""The accelerator simulator: a PCIe-attached inference accelerator, its driver and runtime API.

Scripts use the runtime API (docs/SIMULATOR.md)::

    from accelview.capture import sim

    with sim.session(spec="gen5x16-141g", seed=0) as s:
        dev = sim.device(0)
        w = dev.alloc((4096, 4096), "bf16")
        dev.copy(w, sim.host_buffer((4096, 4096), "bf16", pinned=True))
        dev.launch("gemm", m=1, n=4096, k=4096)
        dev.synchronize()
    trace = s.trace()

The physics lives in small modules, each importable on its own:

- :mod:`.specs` - device presets (``resources/specs/*.json``) and their loader;
- :mod:`.pcie` - per-direction link bandwidth after encoding, TLP and DLLP overhead;
- :mod:`.transfer` - how one host/device copy moves (descriptors, staging, TLPs);
- :mod:`.hbm` - HBM efficiency by access pattern;
- :mod:`.ops` - FLOPs and bytes of each op kind from its shapes;
- :mod:`.costs` - an op's duration, true limiter and hardware counters;
- :mod:`.llm` - the ops of a decoder-only transformer's prefill and decode steps;
- :mod:`.clock` - a device clock with its own frequency, offset and drift.

and the event-driven side in :mod:`.engine` (queues, units, DMA, link sharing),
:mod:`.runtime`/:mod:`.copies` (the API), :mod:`.tracewriter` (the capture and its truth).
docs/SIMULATOR.md describes the models and the published figures they agree with.
"""

# Loaded with the package, not lazily inside the first session: every session draws from
# numpy's generators (a 15 ms import).
import contextlib

import numpy.random  # noqa: F401

from .device.specs import DeviceSpec, list_presets, load_spec
from .runtime.api import annotate, current, device, device_count, host_buffer, reset, session
from .runtime.buffers import DeviceBuffer, HostBuffer
from .runtime.simulator import Device, Event, Simulator, Stream

# Every session ends in a capture made by the trace writer: loaded here, its import (about 9 ms)
# does not count as capture time. Not when the converter, which uses the device model, is what
# is importing this package: then Simulator.trace() imports it on first use.
with contextlib.suppress(ImportError):
    from ..convert import tracewriter  # noqa: F401

__all__ = [
    "Device",
    "DeviceBuffer",
    "DeviceSpec",
    "Event",
    "HostBuffer",
    "Simulator",
    "Stream",
    "annotate",
    "current",
    "device",
    "device_count",
    "host_buffer",
    "list_presets",
    "load_spec",
    "reset",
    "session",
]
