"""Hand a running session's finished records over in increments (for the streaming tracer).

``build_trace`` turns a whole session into a capture at the end; a tracer that must survive
the profiled process being killed instead takes what has finished so far, again and again:
``drain(sim)`` removes and returns the host records logged since the last drain and the
device commands finished since then, so the session's memory stays bounded too. A session
that has been drained no longer holds everything ``Simulator.trace()`` needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..device.command import Command
from ..device.ring import DeviceRing, RingBatch
from .hostlog import HostRecords

if TYPE_CHECKING:
    from .simulator import Simulator


@dataclass
class Drained(HostRecords):
    """Records finished since the previous drain (the host's as :class:`~.hostlog.HostLog` logs
    them; ``ranges``: annotated phases that have ended). ``commands``: per device, the commands
    it finished, in finishing order, or, where a tracer gave it a ring, what the ring wrote."""

    commands: list[list[Command] | RingBatch] = field(default_factory=list)
    horizon_ns: list[float] = field(default_factory=list)  # per device: no later command starts before this
    host_now_ns: int = 0

    @property
    def n_calls(self) -> int:
        """Number of API calls."""
        return len(self.call_objects) // 2

    def __len__(self) -> int:
        host = self.n_calls + len(self.memcpys) + len(self.ranges) + len(self.submission_names)
        return host + sum(sum(c.records for c in cmds) if isinstance(cmds, list) else cmds.records
                          for cmds in self.commands)


def _take(owner: Any, name: str) -> Any:
    """``owner.name``, a list, replaced by an empty one: no element is touched (copying a drain's
    ~15k records out and deleting them touched each one twice, and by then they are cold)."""
    out = getattr(owner, name)
    setattr(owner, name, [])
    return out


def _finished(engine: Any) -> list[Command] | RingBatch:
    """What a device finished since the last drain, taken from it."""
    if isinstance(engine.finished, DeviceRing):
        return engine.finished.take()
    return _take(engine, "finished")


_HOST_LISTS = ("call_ints", "call_objects", "submission_ints", "submission_names", "memcpys", "waits", "ranges")


def horizon(sim: Simulator, index: int) -> float:
    """Device time before which every command of device ``index`` that will ever start has
    started (and, unless still running, finished): the engine's time, or the start of the
    earliest command still in flight."""
    engine = sim.devices[index].engine
    t = engine.now
    for cmd in (*engine.units.values(), *engine.dma, engine.graph):
        if cmd is not None and not math.isnan(cmd.start_ns):
            t = min(t, cmd.start_ns)
    return t


def drain(sim: Simulator, final: bool = False) -> Drained:
    """Remove and return the records finished since the last drain; ``final`` first lets every
    device finish its queued work (the session is over)."""
    if final:
        sim.finish()
    log = sim.log
    out = Drained(*(_take(log, f) for f in _HOST_LISTS),
                  commands=[_finished(d.engine) for d in sim.devices], host_now_ns=sim.clock.now)
    out.horizon_ns = [math.inf if final else horizon(sim, i) for i in range(len(sim.devices))]
    return out
