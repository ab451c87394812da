"""Module-level runtime API: the current session and the calls scripts make on it.

``from accelview.capture import sim`` then ``sim.device(0)``, ``sim.host_buffer(...)``. The
calls go to the *current* session: the one a ``with sim.session(...)`` block (or the
profiler running the script) opened, else a default one created on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..device.specs import DeviceSpec
from .buffers import HostBuffer
from .simulator import Device, Simulator

_stack: list[Simulator] = []
# Set while ``accelview profile`` runs a script: makes (on first use) the one traced session that
# every ``session(...)`` and ``current()`` of the script then gets; called with session()'s arguments.
_profiler: Callable[[dict[str, Any]], Simulator] | None = None


def set_profiler(factory: Callable[[dict[str, Any]], Simulator] | None) -> None:
    """Route every session of this process to ``factory``'s traced session (None: stop)."""
    global _profiler
    _profiler = factory


@contextmanager
def session(spec: str | DeviceSpec = "gen5x16-141g", devices: int = 1, seed: int = 0,
            deterministic: bool = True, counter_period_ns: int = 10_000,
            script_gap_ns: int = 0, host_start_ns: int | None = None) -> Iterator[Simulator]:
    """Open a simulated session and make it current inside the ``with`` block.

    ``spec`` is a preset name or a spec file; ``deterministic`` models host time between calls
    instead of measuring it, so identical inputs give identical captures.
    """
    if _profiler is not None:  # under the profiler: the traced session, whatever the script asks
        yield _profiler({"spec": spec, "devices": devices, "seed": seed})
        return
    sim = Simulator(spec, devices, seed, deterministic, counter_period_ns, script_gap_ns, host_start_ns)
    _stack.append(sim)
    try:
        yield sim
    finally:
        _stack.remove(sim)


def current() -> Simulator:
    """The current session (a default one is created when none is open)."""
    if not _stack:
        _stack.append(_profiler({}) if _profiler is not None else Simulator())
    return _stack[-1]


def reset() -> None:
    """Forget every session (the next call creates a fresh default one)."""
    _stack.clear()


def device(index: int = 0) -> Device:
    """Device ``index`` of the current session."""
    return current().device(index)


def device_count() -> int:
    """Number of devices in the current session."""
    return len(current().devices)


def host_buffer(shape: int | tuple[int, ...], dtype: Any = "bf16", pinned: bool = True) -> HostBuffer:
    """Host memory of the current session: ``pinned=False`` for pageable memory."""
    return current().host_buffer(shape, dtype, pinned)


@contextmanager
def annotate(name: str) -> Iterator[None]:
    """Mark a phase of the script (``prefill``, ``decode 3``) on the host thread, like an NVTX
    range: the capture shows it above the runtime calls and the analyses break time down per phase."""
    sim = current()
    start = sim.clock.enter_call()
    sim.clock.exit_call()
    try:
        yield
    finally:
        end = sim.clock.enter_call()
        sim.clock.exit_call()
        sim.log.annotate(start, end, name)
