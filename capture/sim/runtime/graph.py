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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..device.costs import OpCost, cost
from ..device.opcounters import CostColumns

if TYPE_CHECKING:
    from .simulator import Device, Stream

UNITS = ("matrix", "vector", "collective")


@dataclass(eq=False)
class GraphLayout:
    """What every replay of a graph that updates the same shape names shares: the nodes, the
    jitter-free costs of the templates without updates, and which templates the updates touch."""

    name: str
    names: list[str]  # node names
    units: np.ndarray  # index into UNITS, per node
    which: np.ndarray  # node -> its template (distinct op and shapes)
    base_args: list[dict[str, Any]]  # the trace arguments of each template without updates
    base_limiters: list[str]  # per template
    nodes: CostColumns  # ``base`` per node
    inner: np.ndarray  # per node: max(compute, memory, floor) of ``nodes``
    launch: float | None  # the launch cost every node has, if they all have the same
    touched: np.ndarray  # the templates the updates change
    touched_nodes: np.ndarray  # the nodes whose template is touched
    touched_pick: np.ndarray  # per touched node: its template's index into ``touched``
    units_used: frozenset[str]

    def node_costs(self, patch: Sequence[OpCost]) -> CostColumns:
        """Jitter-free per-node costs with the touched templates' rows replaced by ``patch``."""
        if not len(self.touched):
            return self.nodes
        return self.nodes.with_rows(self.touched_nodes, CostColumns.of(patch).take(self.touched_pick))


@dataclass(eq=False)
class GraphRun:
    """One replay's schedule, as columns; offsets in ns from the replay's start. What the replays
    share is in ``layout``; a replay keeps the rows of the templates its updates changed
    (``patch``), its jitter and its offsets."""

    layout: GraphLayout
    patch: list[OpCost]  # jitter-free costs of ``layout.touched`` under this replay's updates
    patch_args: list[dict[str, Any]]  # their trace arguments
    patch_limiters: list[str]
    jitter: np.ndarray | None  # per node; None: no jitter (the templates' own, 1.0)
    body: np.ndarray  # per node: its body's duration (jittered)
    end_off: np.ndarray

    @property
    def launch(self) -> np.ndarray:
        """Each node's launch cost."""
        if self.layout.launch is not None and all(c.launch_ns == self.layout.launch for c in self.patch):
            return np.full(len(self.body), self.layout.launch)
        return self.layout.node_costs(self.patch).launch_ns

    @property
    def start_off(self) -> np.ndarray:
        """Where each node starts."""
        return self.end_off - self.launch - self.body

    @property
    def body_off(self) -> np.ndarray:
        """Where each node's launch phase ends and its body starts."""
        launch = self.launch
        return self.end_off - launch - self.body + launch

    @property
    def name(self) -> str:
        """The graph's name."""
        return self.layout.name

    @property
    def names(self) -> list[str]:
        """Node names (shared by all replays of the graph)."""
        return self.layout.names

    @property
    def units(self) -> np.ndarray:
        """Execution unit of each node, as an index into UNITS."""
        return self.layout.units

    @property
    def costs(self) -> CostColumns:
        """Per-node cost columns, with this replay's jitter."""
        nodes = self.layout.node_costs(self.patch)
        return nodes if self.jitter is None else dataclasses.replace(nodes, jitter=self.jitter)

    @property
    def template_args(self) -> list[dict[str, Any]]:
        """The trace arguments of each template under this replay's updates."""
        out = list(self.layout.base_args)
        for t, a in zip(self.layout.touched.tolist(), self.patch_args, strict=True):
            out[t] = a
        return out

    @property
    def limiters(self) -> list[str]:
        """The true limiter of each template under this replay's updates."""
        out = list(self.layout.base_limiters)
        for t, lim in zip(self.layout.touched.tolist(), self.patch_limiters, strict=True):
            out[t] = lim
        return out

    @property
    def total_ns(self) -> float:
        """Duration of the whole replay."""
        return float(self.end_off[-1]) if len(self.end_off) else 0.0

    @property
    def units_used(self) -> set[str]:
        """The execution units the nodes run on."""
        return set(self.layout.units_used)

    def __len__(self) -> int:
        return len(self.layout.names)


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


class ReplayColumns:
    """The nodes of many replays (``runs``, begun at ``starts``) as one set of columns, replay
    after replay: a few array operations per distinct layout, not per replay. Cost columns are
    made on first use (``column``), so a reader that needs two of them pays for two."""

    def __init__(self, starts: Iterable[float], runs: list[GraphRun]) -> None:
        self.runs = runs
        lens = np.array([len(r) for r in runs], dtype=np.int64)
        self.bounds = np.concatenate(([0], np.cumsum(lens)))  # replay i's nodes are rows bounds[i]:bounds[i + 1]
        by_layout: dict[int, list[int]] = {}
        for i, r in enumerate(runs):
            by_layout.setdefault(id(r.layout), []).append(i)
        # each layout and the replays (indices) that use it
        self.groups = [(runs[idx[0]].layout, np.array(idx, dtype=np.int64)) for idx in by_layout.values()]
        self._columns: dict[str, np.ndarray] = {}
        self._patches: list[CostColumns | None] | None = None
        self.units = self._per_node(lambda layout, _: np.tile(layout.units, len(_)), np.int8)  # index into UNITS
        launch = self.column("launch_ns")
        at = np.repeat(np.fromiter(starts, dtype=np.float64, count=len(runs)), lens)
        end_off = np.concatenate([r.end_off for r in runs])
        start_off = end_off - launch - np.concatenate([r.body for r in runs])  # as GraphRun.start_off
        self.start = at + start_off  # absolute device ns
        self.body = at + (start_off + launch)  # where each node's body starts
        self.end = at + end_off

    def rows(self, replays: np.ndarray) -> np.ndarray:
        """The rows of the nodes of ``replays`` (indices into the replays; all of one layout)."""
        n = self.bounds[replays[0] + 1] - self.bounds[replays[0]]
        return (self.bounds[replays][:, None] + np.arange(n)).ravel()

    @property
    def costs(self) -> CostColumns:
        """Every cost column, with each replay's jitter."""
        return CostColumns(*(self.column(f.name) for f in dataclasses.fields(CostColumns)))

    def column(self, name: str) -> np.ndarray:
        """One cost column (a field of :class:`CostColumns`) of every node."""
        col = self._columns.get(name)
        if col is None:
            if self._patches is None:
                self._patches = [CostColumns.of([c for i in idx.tolist() for c in self.runs[i].patch])
                                 if len(layout.touched) else None for layout, idx in self.groups]
            patches = dict(zip((id(layout) for layout, _ in self.groups), self._patches, strict=True))
            dtype = getattr(self.groups[0][0].nodes, name).dtype
            col = self._columns[name] = self._per_node(
                lambda layout, idx: _layout_column(layout, [self.runs[i] for i in idx.tolist()],
                                                   patches[id(layout)], name), dtype)
        return col

    def _per_node(self, make: Any, dtype: Any) -> np.ndarray:
        """``make(layout, replays)`` for each layout, put in replay order."""
        if len(self.groups) == 1:
            return make(*self.groups[0])
        out = np.empty(int(self.bounds[-1]), dtype=dtype)
        for layout, idx in self.groups:
            out[self.rows(idx)] = make(layout, idx)
        return out


def _layout_column(layout: GraphLayout, runs: list[GraphRun], patch: CostColumns | None, name: str) -> np.ndarray:
    """Cost column ``name`` of the nodes of ``runs`` (all of ``layout``), one replay after another;
    ``patch``: their patched templates' rows, replay after replay."""
    n, size = len(runs), len(layout.names)
    if name == "jitter" and all(r.jitter is not None for r in runs):
        return np.concatenate([r.jitter for r in runs])
    col = np.tile(getattr(layout.nodes, name), n)
    if patch is not None:
        col.reshape(n, -1)[:, layout.touched_nodes] = getattr(patch, name).reshape(n, -1)[:, layout.touched_pick]
    if name == "jitter":
        for i, r in enumerate(runs):
            if r.jitter is not None:
                col[i * size:(i + 1) * size] = r.jitter
    return col
