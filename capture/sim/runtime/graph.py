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

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..device.costs import OpCost, cost
from ..device.opcounters import CostColumns
from ..device.replay import UNITS, GraphLayout, GraphRun

if TYPE_CHECKING:
    from .simulator import Device, Stream


class Graph:
    """Launches recorded by ``Device.graph()``; ``launch()`` replays them."""

    def __init__(self, device: Device, name: str) -> None:
        self.device, self.name = device, name
        self.names: list[str] = []
        self._which: list[int] = []
        self._templates: list[tuple[str, dict[str, Any], dict[str, str]]] = []  # (op, shapes, buffer args)
        self._index: dict[tuple, int] = {}
        self._base: _Rows | None = None  # every template without updates
        self._layouts: dict[frozenset[str], GraphLayout] = {}  # by the names of the updated shapes
        self._patches: dict[tuple, _Rows] = {}  # the touched templates' rows, by updates

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
        self._base = None
        self._layouts.clear()
        self._patches.clear()

    def launch(self, stream: Stream | None = None, **updates: Any) -> None:
        """Replay every node on ``stream`` (default: the device's default stream) with one API
        call; ``updates`` replace those shapes in every node that has them."""
        if not self.names:
            raise ValueError(f"graph {self.name!r} has no nodes: launch ops inside `with dev.graph():`")
        self.device.launch_graph(self, stream, updates)

    def plan(self, updates: Mapping[str, Any], rng: np.random.Generator | None) -> GraphRun:
        """The schedule of one replay: node costs (with jitter from ``rng``) and offsets. Only the
        templates the updates touch are costed again (once per distinct update); the rest comes
        from the graph's layout."""
        layout = self._layout(updates)
        key = tuple(sorted(updates.items()))
        patch = self._patches.get(key)
        if patch is None:
            if len(self._patches) > 64:  # many distinct updates (a growing KV length): keep the newest
                self._patches.clear()
            patch = self._patches[key] = self._rows(layout.touched.tolist(), updates)
        inner, launch = layout.inner, layout.launch
        if len(layout.touched):  # few templates (the attention's KV length): scalars, then one scatter
            inner = inner.copy()
            if len(patch.costs) == 1:
                inner[layout.touched_nodes] = patch.inner[0]
            else:
                inner[layout.touched_nodes] = np.array(patch.inner)[layout.touched_pick]
            if launch is None or any(c.launch_ns != launch for c in patch.costs):
                launch = layout.node_costs(patch.costs).launch_ns
        if launch is None:
            launch = layout.nodes.launch_ns
        jitter = None
        sigma = self.device.spec.timing.jitter
        if rng is not None and sigma > 0:  # 1 + clip(sigma * N(0, 1), -3 sigma, 3 sigma), in place
            jitter = rng.standard_normal(len(inner))
            jitter *= sigma
            np.maximum(jitter, -3 * sigma, out=jitter)
            np.minimum(jitter, 3 * sigma, out=jitter)
            jitter += 1.0
        body = inner if jitter is None else inner * jitter  # the templates' own jitter is 1.0
        ends = np.add.accumulate(body + launch)  # np.cumsum, without its wrapper
        return GraphRun(layout, patch.costs, patch.args, patch.limiters, jitter, body, ends)

    def _layout(self, updates: Mapping[str, Any]) -> GraphLayout:
        """The layout shared by replays that update the shapes named in ``updates``."""
        keys = frozenset(updates)
        layout = self._layouts.get(keys)
        if layout is not None:
            return layout
        if self._base is None:
            self._base = self._rows(range(len(self._templates)), {})
        base = self._base
        which = np.asarray(self._which, dtype=np.int64)
        touched = np.array([t for t, (_, dims, _) in enumerate(self._templates) if not keys.isdisjoint(dims)],
                           dtype=np.int64)
        pos = np.full(len(self._templates), -1, dtype=np.int64)
        pos[touched] = np.arange(len(touched))
        touched_nodes = np.flatnonzero(pos[which] >= 0)
        units = self._units()[which]
        nodes = CostColumns.of(base.costs).take(which)
        launches = set(nodes.launch_ns.tolist())
        layout = self._layouts[keys] = GraphLayout(
            self.name, list(self.names), units, which, base.args, base.limiters, nodes,
            np.array(base.inner)[which], launches.pop() if len(launches) == 1 else None, touched, touched_nodes,
            pos[which][touched_nodes], frozenset(UNITS[i] for i in set(units.tolist())))
        return layout

    def _units(self) -> np.ndarray:
        """The execution unit of each template (index into UNITS)."""
        units = [self.device.cost_of(op, dims)[0].unit for op, dims, _ in self._templates]
        return np.array([UNITS.index(u) if u in UNITS else 1 for u in units], dtype=np.int8)

    def _rows(self, templates: Iterable[int], updates: Mapping[str, Any]) -> _Rows:
        """Jitter-free cost rows, trace arguments and limiters of ``templates`` under ``updates``."""
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
        inner = [max(c.compute_ns, c.memory_ns, c.floor_ns) for c in costs]
        return _Rows(costs, args, [c.limiter for c in costs], inner)


@dataclass(frozen=True)
class _Rows:
    """Jitter-free costs of some templates, their trace arguments, limiters and
    max(compute, memory, floor)."""

    costs: list[OpCost]
    args: list[dict[str, Any]]
    limiters: list[str]
    inner: list[float]


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


