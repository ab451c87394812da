"""Critical path: the chain of work that set the end-to-end time, and each resource's share.

Two ways over one dependency model (flows, queue order on a lane, nesting):
- ``critical_path`` walks back from the last slice to end, each step to the predecessor that
  arrived last (the one that let it start); it is O(path length × log n), so it runs on the
  whole of a 10M-slice capture.
- ``dependency_graph`` builds the networkx DAG of a window (nodes are slice starts and ends,
  edges carry durations), and ``longest_path`` gives HTA's definition, the dependency chain
  with the most work on it; the app's graph view shows the same DAG.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
from accelview.model.schema import TrackKind
from accelview.model.trace import Trace


@dataclass(frozen=True)
class PathStep:
    """One piece of the critical path: a slice, or a wait before the next slice started."""

    kind: str  # "slice" or "wait"
    start_ns: int
    end_ns: int
    slice: int  # the slice (for a wait: the slice that waited)
    via: str = ""  # for a wait: what it waited on ("flow", "queue", "parent", "start")


@dataclass
class CriticalPath:
    """The steps in time order and the time per resource (track kind) on the path."""

    steps: list[PathStep] = field(default_factory=list)
    by_resource_ns: dict[str, int] = field(default_factory=dict)

    @property
    def slices(self) -> list[int]:
        """Slice ids on the path, in time order."""
        return [s.slice for s in self.steps if s.kind == "slice"]

    @property
    def length_ns(self) -> int:
        """From the path's first start to its last end."""
        return self.steps[-1].end_ns - self.steps[0].start_ns if self.steps else 0


class _Deps:
    """Predecessor look-ups: flows into a slice, the previous slice of its run, its parent."""

    def __init__(self, trace: Trace) -> None:
        self.t = trace
        sl = trace.slices
        self.start, self.end = sl.start_ns, sl.start_ns + sl.dur_ns
        o = np.argsort(trace.flows.dst, kind="stable")
        self.flow_dst, self.flow_src = trace.flows.dst[o], trace.flows.src[o]
        runs = trace.runs
        self.run_of = np.repeat(np.arange(len(runs.begin)), runs.end - runs.begin)
        self.run_begin = runs.begin

    def dur_is_zero(self, x: int) -> bool:
        """True for a zero-length slice (kept on the path although it adds no time)."""
        return bool(self.end[x] == self.start[x])

    def predecessors(self, x: int) -> list[tuple[int, int, str]]:
        """(time, slice, via) candidates that X's start waited on, each at or before it."""
        s = int(self.start[x])
        out = []
        lo, hi = np.searchsorted(self.flow_dst, x, "left"), np.searchsorted(self.flow_dst, x, "right")
        for src in self.flow_src[lo:hi]:
            t = int(self.end[src]) if self.end[src] <= s else int(self.start[src])
            if t <= s:
                out.append((t, int(src), "flow"))
        if x > self.run_begin[self.run_of[x]]:
            out.append((int(self.end[x - 1]), x - 1, "queue"))
        depth = int(self.t.slices.depth[x])
        if depth > 0:
            parent = self._parent(x, depth)
            if parent >= 0:
                out.append((int(self.start[parent]), parent, "parent"))
        return out

    def _parent(self, x: int, depth: int) -> int:
        runs = self.t.runs
        track = self.t.slices.track[x]
        for d, b, e in runs.of_track(int(track)):
            if d == depth - 1:
                i = b + int(np.searchsorted(self.start[b:e], self.start[x], "right")) - 1
                return i if i >= b and self.end[i] >= self.end[x] else -1
        return -1


def critical_path(trace: Trace, end_slice: int | None = None, max_steps: int = 1_000_000) -> CriticalPath:
    """Walk back from ``end_slice`` (default: the slice that ends last) to the path's start."""
    if len(trace.slices) == 0:
        return CriticalPath()
    deps = _Deps(trace)
    x = int(np.argmax(deps.end)) if end_slice is None else end_slice
    seg_end = int(deps.end[x])
    steps: list[PathStep] = []
    for _ in range(max_steps):
        if seg_end > deps.start[x] or deps.dur_is_zero(x):
            steps.append(PathStep("slice", int(deps.start[x]), seg_end, x))
        cands = deps.predecessors(x)
        if not cands:
            break
        t, prev, via = max(cands)
        if via != "parent" and t < deps.start[x] and deps.end[prev] <= deps.start[x]:
            steps.append(PathStep("wait", t, int(deps.start[x]), x, via))
        # Through a parent, or a flow whose source still ran when X began, the path continues in
        # the predecessor's own time up to X's start.
        seg_end = int(min(deps.end[prev], deps.start[x]))
        x = prev
    steps.reverse()
    return CriticalPath(steps, _by_resource(trace, steps))


def _by_resource(trace: Trace, steps: list[PathStep]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in steps:
        key = "waiting" if s.kind == "wait" else TrackKind(int(trace.tracks.kind[trace.slices.track[s.slice]])).label
        out[key] = out.get(key, 0) + s.end_ns - s.start_ns
    return out


def dependency_graph(trace: Trace, ids: np.ndarray) -> nx.DiGraph:
    """The DAG of the given slices: nodes (slice, "B"|"E"), an edge B→E weighted by duration,
    and zero-weight dependency edges for flows, queue order and nesting among them."""
    deps = _Deps(trace)
    keep = set(int(i) for i in ids)
    g = nx.DiGraph()
    for x in keep:
        g.add_edge((x, "B"), (x, "E"), weight=int(trace.slices.dur_ns[x]))
        for _t, p, via in deps.predecessors(x):
            if p not in keep:
                continue
            if via == "parent":
                g.add_edge((p, "B"), (x, "B"), weight=0)
                g.add_edge((x, "E"), (p, "E"), weight=0)
            elif via == "flow" and deps.end[p] > deps.start[x]:
                g.add_edge((p, "B"), (x, "B"), weight=0)
            else:
                g.add_edge((p, "E"), (x, "B"), weight=0)
    return g


def longest_path(trace: Trace, ids: np.ndarray) -> list[int]:
    """Slices on the dependency chain with the most work (HTA's critical path), in order."""
    g = dependency_graph(trace, ids)
    if g.number_of_nodes() == 0:
        return []
    nodes = nx.dag_longest_path(g, weight="weight")
    out: list[int] = []
    for sid, _ in nodes:
        if not out or out[-1] != sid:
            out.append(sid)
    return out
