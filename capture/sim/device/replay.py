"""A graph replay's schedule as columns: the device side of graph replays.

``GraphLayout`` is what every replay of one graph shares, ``GraphRun`` one replay's schedule,
``ReplayColumns`` many replays' nodes as one set of columns; the engine schedules them, the
counters and the capture rows read them (the user-facing ``Graph`` is in the runtime).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .costs import OpCost
from .opcounters import CostColumns

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
