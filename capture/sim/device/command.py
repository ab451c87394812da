"""A driver-queue entry (``Command``) and the event a stream can wait on: what the engine
schedules and, once it has run, what the device reports about it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .costs import OpCost
from .replay import GraphRun
from .transfer import DmaJob


@dataclass(eq=False, slots=True)
class EventState:
    """A point in a stream that others can wait on."""

    stream: int
    done_ns: float | None = None
    tag: str = "sync"  # what the stream was waiting for just before it: 'pcie' or 'sync'


@dataclass(eq=False, slots=True)
class Command:
    """One driver-queue entry and, once run, what happened to it."""

    cid: int  # correlation id shared with the API call
    kind: str  # 'op' | 'graph' | 'copy' | 'record' | 'wait'
    stream: int
    submit_ns: float
    visible_ns: float
    name: str
    cost: OpCost | None = None
    job: DmaJob | None = None
    direction: str = ""  # copies: 'h2d' | 'd2h' | 'd2d'
    fixed_ns: float = 0.0  # d2d copies: whole duration
    event: EventState | None = None
    graph: GraphRun | None = None  # a graph replay's nodes
    rendezvous: Any = None  # a collective's (or a replay with collectives'): where it meets the other participants
    args: dict[str, Any] = field(default_factory=dict)
    start_ns: float = math.nan
    end_ns: float = math.nan
    engine: int = -1
    cause: str = ""
    data_start_ns: float = math.nan
    data_end_ns: float = math.nan
    segments: list[tuple[float, float, float, int]] = field(default_factory=list)  # (t0, t1, bytes, sharers)
    # internal state of a running copy
    phase: str = ""
    phase_end: float = math.inf
    remaining: float = 0.0
    done: bool = False  # finished (an op knows its end time from the moment it starts)

    @property
    def runs_ops(self) -> bool:
        """An op or a graph replay: execution-unit work (what device idle time is measured between)."""
        return (self.kind == "op" and self.cost is not None) or (self.kind == "graph" and self.graph is not None)

    @property
    def records(self) -> int:
        """Device records the command leaves (a graph replay: one per node)."""
        return len(self.graph) if self.graph is not None else 1

    @property
    def units_used(self) -> set[str]:
        """The execution units this command's ops run on."""
        if self.kind == "op" and self.cost is not None:
            return {self.cost.unit}
        if self.kind == "graph" and self.graph is not None:
            return self.graph.units_used
        return set()
