"""Graph replays as the converter reads them: :class:`ReplayRun`, one replay as plain data (its
patched templates' cost numbers as rows, not the engine's ``OpCost``), and :class:`ReplayColumns`,
many replays' nodes as one set of columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..sim.device.opcounters import CostColumns
from ..sim.device.replay import GraphLayout, GraphRun

# a patched template's cost numbers, in this order (what CostColumns.of reads of an OpCost)
PATCH_FIELDS = ("launch_ns", "compute_ns", "memory_ns", "floor_ns", "jitter", "ideal_ns", "clock_hz", "useful_bytes",
                "flops", "dram_read_bytes", "dram_write_bytes", "latency_bound")


def patch_row(launch: float, compute: float, memory: float, floor: float, jitter: float, ideal: float,
              clock_hz: float, useful: int, flops: float, dram_read: int, dram_write: int, limiter: str
              ) -> tuple[float, ...]:
    """One patched template's :data:`PATCH_FIELDS`."""
    return (launch, compute, memory, floor, jitter, ideal, clock_hz, useful, flops, dram_read, dram_write,
            limiter == "latency")


def patch_columns(rows: Sequence[tuple[float, ...]]) -> CostColumns:
    """Rows of :data:`PATCH_FIELDS` as cost columns (the values ``CostColumns.of`` gives)."""
    real = np.array([r[:9] for r in rows], dtype=np.float64).reshape(-1, 9).T.copy()
    dram = np.array([r[9:11] for r in rows], dtype=np.int64).reshape(-1, 2).T.copy()
    latency = np.array([r[11] for r in rows], dtype=bool)
    return CostColumns(*real[:7], dram[0], dram[1], real[7], latency, real[8])


@dataclass(eq=False, slots=True)
class ReplayRun:
    """One replay: its layout (what its graph's replays share), the rows of the templates its
    updates changed, their arguments and limiters, and its nodes' jitter and offsets."""

    layout: GraphLayout
    patch: list[tuple[float, ...]]  # PATCH_FIELDS of layout.touched
    patch_args: list[dict[str, Any]]
    patch_limiters: list[str]
    jitter: np.ndarray | None
    body: np.ndarray
    end_off: np.ndarray

    @property
    def names(self) -> list[str]:
        """Node names."""
        return self.layout.names

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
    def units_used(self) -> frozenset[str]:
        """The execution units the nodes run on."""
        return self.layout.units_used

    def __len__(self) -> int:
        return len(self.layout.names)


def replay_of(run: GraphRun) -> ReplayRun:
    """The whole run's view of an engine replay (its patch's costs as rows)."""
    patch = [patch_row(c.launch_ns, c.compute_ns, c.memory_ns, c.floor_ns, c.jitter, c.ideal_ns, c.clock_hz,
                       c.work.bytes_total, c.work.flops, c.dram_read_bytes, c.dram_write_bytes, c.limiter)
             for c in run.patch]
    return ReplayRun(run.layout, patch, run.patch_args, run.patch_limiters, run.jitter, run.body, run.end_off)


class ReplayColumns:
    """The nodes of many replays (``runs``, begun at ``starts``) as one set of columns, replay
    after replay: a few array operations per distinct layout, not per replay. Cost columns are
    made on first use (``column``), so a reader that needs two of them pays for two."""

    def __init__(self, starts: Iterable[float], runs: list[ReplayRun]) -> None:
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
                self._patches = [patch_columns([c for i in idx.tolist() for c in self.runs[i].patch])
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


def _layout_column(layout: GraphLayout, runs: list[ReplayRun], patch: CostColumns | None, name: str) -> np.ndarray:
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
