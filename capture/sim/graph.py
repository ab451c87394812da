"""Graphs: launches captured once and replayed with one API call, as CUDA Graphs do.

::

    with dev.graph("decode step") as g:      # capture: the launches are recorded, nothing runs
        for name, kind, shapes in decode_ops(cfg, 1, 512):
            dev.launch(kind, name=name, **shapes)
    for step in range(32):
        g.launch(kv_len=514 + step)          # one API call, one driver submission

A replay runs its nodes back to back on the stream it is launched on, the way the same
launches run there one by one when the host is ahead of the device (in order, each node
starting as the previous one ends); what it saves is the host's per-launch cost. While a
replay runs it holds every execution unit: work on other streams waits for it. That
simplification is what lets the device model schedule a replay's nodes as columns at once
(:class:`GraphRun`) instead of one event at a time. Keyword arguments of ``launch`` replace
that shape in every node that has it, the way an inference engine's attention kernel reads
the current sequence length from device memory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .costs import cost
from .opcounters import CostColumns

if TYPE_CHECKING:
    from .runtime import Device, Stream

UNITS = ("matrix", "vector", "collective")


@dataclass(eq=False)
class GraphRun:
    """One replay's schedule, as columns; offsets in ns from the replay's start."""

    name: str
    names: list[str]  # node names
    units: np.ndarray  # index into UNITS, per node
    start_off: np.ndarray
    body_off: np.ndarray  # where each node's launch phase ends and its body starts
    end_off: np.ndarray
    costs: CostColumns  # per node, with its jitter
    which: np.ndarray  # node -> its template (distinct op and shapes)
    template_args: list[dict[str, Any]]  # the trace arguments of each template
    limiters: list[str]  # per template

    def node_times(self, start_ns: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, body start, end) of each node of a replay that began at ``start_ns``."""
        return start_ns + self.start_off, start_ns + self.body_off, start_ns + self.end_off

    @property
    def total_ns(self) -> float:
        """Duration of the whole replay."""
        return float(self.end_off[-1]) if len(self.end_off) else 0.0

    @property
    def units_used(self) -> set[str]:
        """The execution units the nodes run on."""
        return {UNITS[i] for i in np.unique(self.units)}

    def __len__(self) -> int:
        return len(self.names)


class Graph:
    """Launches recorded by ``Device.graph()``; ``launch()`` replays them."""

    def __init__(self, device: Device, name: str) -> None:
        self.device, self.name = device, name
        self.names: list[str] = []
        self._which: list[int] = []
        self._templates: list[tuple[str, dict[str, Any], dict[str, str]]] = []  # (op, shapes, buffer args)
        self._index: dict[tuple, int] = {}
        self._base: tuple[CostColumns, list[dict[str, Any]], list[str]] | None = None  # without updates
        self._plans: dict[tuple, tuple[CostColumns, list[dict[str, Any]], list[str]]] = {}
        self._which_array: np.ndarray | None = None
        self._unit_of: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.names)

    def add(self, name: str, op: str, dims: dict[str, Any], buffers: dict[str, str]) -> None:
        """Record one launch (called by ``Device.launch`` while capturing); checks the shapes now."""
        key = (op, *sorted(dims.items()), *sorted(buffers.items()))
        t = self._index.get(key)
        if t is None:
            self.device.cost_of(op, dims)  # a wrong shape fails at capture, like the launch would
            t = self._index[key] = len(self._templates)
            self._templates.append((op, dims, buffers))
        self.names.append(name)
        self._which.append(t)
        self._plans.clear()
        self._base = None
        self._which_array = None
        self._unit_of = None

    def launch(self, stream: Stream | None = None, **updates: Any) -> None:
        """Replay every node on ``stream`` (default: the device's default stream) with one API
        call; ``updates`` replace those shapes in every node that has them."""
        if not self.names:
            raise ValueError(f"graph {self.name!r} has no nodes: launch ops inside `with dev.graph():`")
        self.device.launch_graph(self, stream, updates)

    def plan(self, updates: Mapping[str, Any], rng: np.random.Generator | None) -> GraphRun:
        """The schedule of one replay: node costs (with jitter from ``rng``) and offsets."""
        key = tuple(sorted(updates.items()))
        plan = self._plans.get(key)
        if plan is None:
            if len(self._plans) > 64:  # many distinct updates (a growing KV length): keep the newest
                self._plans.clear()
            plan = self._plans[key] = self._templates_for(updates)
        costs, args, limiters = plan
        which = np.asarray(self._which, dtype=np.int64) if self._which_array is None else self._which_array
        self._which_array = which
        columns = costs.take(which)
        sigma = self.device.spec.timing.jitter
        if rng is not None and sigma > 0:
            jitter = 1.0 + np.clip(sigma * rng.standard_normal(len(which)), -3 * sigma, 3 * sigma)
            columns = dataclasses.replace(columns, jitter=jitter)
        body = np.maximum(np.maximum(columns.compute_ns, columns.memory_ns), columns.floor_ns) * columns.jitter
        end = np.cumsum(columns.launch_ns + body)
        start = end - columns.launch_ns - body
        return GraphRun(self.name, self.names, self._units()[which], start, start + columns.launch_ns, end, columns,
                        which, args, limiters)

    def _units(self) -> np.ndarray:
        """The execution unit of each template (index into UNITS)."""
        if self._unit_of is None:
            units = [self.device.cost_of(op, dims)[0].unit for op, dims, _ in self._templates]
            self._unit_of = np.array([UNITS.index(u) if u in UNITS else 1 for u in units], dtype=np.int8)
        return self._unit_of

    def _templates_for(self, updates: Mapping[str, Any]) -> tuple[CostColumns, list[dict[str, Any]], list[str]]:
        """Jitter-free cost columns, trace arguments and limiters of each template under ``updates``;
        what the updates do not touch is computed once for the graph's life."""
        if self._base is None:
            self._base = self._rows(range(len(self._templates)), {})
        costs, args, limiters = self._base
        touched = [t for t, (_, dims, _) in enumerate(self._templates)
                   if updates and not updates.keys().isdisjoint(dims)]
        if not touched:
            return self._base
        t_costs, t_args, t_limiters = self._rows(touched, updates)
        args, limiters = list(args), list(limiters)
        for j, t in enumerate(touched):
            args[t], limiters[t] = t_args[j], t_limiters[j]
        return costs.with_rows(np.asarray(touched), t_costs), args, limiters

    def _rows(self, templates: Iterable[int], updates: Mapping[str, Any]
              ) -> tuple[CostColumns, list[dict[str, Any]], list[str]]:
        dev = self.device
        costs, args = [], []
        for t in templates:
            op, dims, buffers = self._templates[t]
            dims = {**dims, **{k: v for k, v in updates.items() if k in dims}} if updates else dims
            work, terms = dev.cost_of(op, dims)
            c = cost(dev.spec, work, None, terms)
            costs.append(c)
            args.append({"op": op, **dims, **buffers, "bytes_read": c.bytes_read, "bytes_written": c.bytes_written,
                         "dtype": work.dtype})
        return CostColumns.of(costs), args, [c.limiter for c in costs]


@contextmanager
def capture(device: Device, name: str) -> Iterator[Graph]:
    """Record ``device``'s launches inside the block into a new graph (see ``Device.graph``)."""
    if device.capturing is not None:
        raise RuntimeError(f"already capturing graph {device.capturing.name!r} on {device!r}")
    g = Graph(device, name)
    device.capturing = g
    try:
        yield g
    finally:
        device.capturing = None
    device.host_call(f"graph capture {name}", device.spec.host.event_api_ns * max(1, len(g)), nodes=len(g))
