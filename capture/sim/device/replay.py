"""A graph replay's schedule as columns: the device side of graph replays.

``GraphLayout`` is what every replay of one graph shares, ``GraphRun`` one replay's schedule;
the engine schedules them (the user-facing ``Graph`` is in the runtime, the converter's view of
a replay in ``capture/convert/replays.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
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
    def total_ns(self) -> float:
        """Duration of the whole replay."""
        return float(self.end_off[-1]) if len(self.end_off) else 0.0

    @property
    def units_used(self) -> set[str]:
        """The execution units the nodes run on."""
        return set(self.layout.units_used)

    def __len__(self) -> int:
        return len(self.layout.names)
