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

from .roles import Roles, slice_id_type


@dataclass(frozen=True)
class PathStep:
    """One piece of the critical path: a slice, or a wait before the next slice started."""

    kind: str  # "slice" or "wait"
    start_ns: int
    end_ns: int
    slice: int  # the slice (for a wait: the slice that waited)
    via: str = ""  # for a wait: what it waited on ("flow", "queue", "copy")


VIA = ("flow", "queue", "parent", "copy", "stream")


@dataclass
class CriticalPath:
    """The path in time order, column-wise (``kind`` 0 = a slice's time, 1 = a wait; ``via`` is
    what a wait waited on, an index into VIA), and the time per resource (track kind) on it."""

    kind: np.ndarray = field(default_factory=lambda: np.empty(0, np.int8))
    start_ns: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    end_ns: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    slice_id: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    via: np.ndarray = field(default_factory=lambda: np.empty(0, np.int8))
    by_resource_ns: dict[str, int] = field(default_factory=dict)

    @property
    def steps(self) -> list[PathStep]:
        """The path as step objects (for display and tests; the arrays are the data)."""
        return [PathStep("wait" if k else "slice", a, z, sid, VIA[v] if k else "")
                for k, a, z, sid, v in zip(self.kind.tolist(), self.start_ns.tolist(), self.end_ns.tolist(),
                                           self.slice_id.tolist(), self.via.tolist(), strict=True)]

    @property
    def slices(self) -> list[int]:
        """Slice ids on the path, in time order."""
        return self.slice_id[self.kind == 0].tolist()

    @property
    def length_ns(self) -> int:
        """From the path's first start to its last end."""
        return int(self.end_ns[-1] - self.start_ns[0]) if len(self.kind) else 0


PATH_COLUMNS = ("kind", "start_ns", "end_ns", "slice_id", "via")


def path_columns(path: CriticalPath) -> tuple[dict[str, int], dict[str, np.ndarray]]:
    """A path as plain data (to cross from a helper process): its time per resource and columns."""
    return path.by_resource_ns, {k: getattr(path, k) for k in PATH_COLUMNS}


def path_of(by_resource_ns: dict[str, int], cols: dict[str, np.ndarray]) -> CriticalPath:
    """The path :func:`path_columns` took."""
    return CriticalPath(*(cols[k] for k in PATH_COLUMNS), by_resource_ns=by_resource_ns)


class _Steps:
    """Steps collected while walking backwards: scalar ones in a list, queue chains as arrays."""

    def __init__(self) -> None:
        self.chunks: list[tuple[np.ndarray, ...]] = []
        self.buf: list[tuple[int, int, int, int, int]] = []

    def add(self, kind: int, start: int, end: int, sid: int, via: int = 0) -> None:
        self.buf.append((kind, start, end, sid, via))

    def _flush(self) -> None:
        if self.buf:
            cols = list(zip(*self.buf, strict=True))
            self.chunks.append(tuple(np.asarray(c, dtype=np.int64) for c in cols))
            self.buf = []

    def add_chain(self, deps: Dependencies, hi: int, lo: int) -> None:
        """Slices hi, hi-1, ..., lo+1 of one run, each with the wait before it (if any)."""
        self._flush()
        js = np.arange(hi, lo, -1)
        s, e, prev_e = deps.start[js], deps.end[js], deps.end[js - 1]
        n = len(js)
        kind = np.tile(np.array([0, 1]), n)
        start = np.column_stack((s, prev_e)).ravel()
        end = np.column_stack((e, s)).ravel()
        sid = np.repeat(js, 2)
        keep = np.column_stack((np.ones(n, bool), prev_e < s)).ravel()
        self.chunks.append((kind[keep], start[keep], end[keep], sid[keep], np.full(int(keep.sum()), 1)))

    def path(self, trace: Trace) -> CriticalPath:
        self._flush()
        if not self.chunks:
            return CriticalPath()
        cols = [np.concatenate([c[i] for c in self.chunks])[::-1] for i in range(5)]
        p = CriticalPath(cols[0].astype(np.int8), cols[1], cols[2], cols[3], cols[4].astype(np.int8))
        p.by_resource_ns = _by_resource(trace, p)
        return p


class Dependencies:
    """Predecessors of every slice, precomputed with numpy: the flow source that arrived last,
    the previous slice of its (track, depth) run, its parent (enclosing slice), the copy a
    device op waited on, and the previous work of its stream."""

    def __init__(self, trace: Trace, roles: Roles | None = None) -> None:
        self.t = trace
        sl = trace.slices
        n = len(sl)
        roles = roles or Roles(trace)
        self.start, self.end = sl.start_ns, roles.end
        # Flows: a source that ended before X began let it start at its end; one still running
        # when X began (a call that submits while it runs) lets it start at its own start.
        src, dst = trace.flows.src, trace.flows.dst
        t_flow = np.where(self.end[src] <= self.start[dst], self.end[src], self.start[src])
        ok = t_flow <= self.start[dst]
        src, dst, t_flow = src[ok], dst[ok], t_flow[ok]
        o = np.lexsort((t_flow, dst))  # last per dst = latest arrival
        last = np.ones(len(o), bool)
        last[:-1] = dst[o][1:] != dst[o][:-1]
        self.flow_src = np.full(n, -1, slice_id_type(n))
        self.flow_t = np.full(n, np.iinfo(np.int64).min, np.int64)
        self.flow_src[dst[o][last]] = src[o][last]
        self.flow_t[dst[o][last]] = t_flow[o][last]
        runs = trace.runs
        first_of_run = np.zeros(n, bool)
        first_of_run[runs.begin[runs.begin < n]] = True
        self.has_prev = ~first_of_run
        self.parent = self._parents(trace, self.end)
        # Host calls that waited for the device end when the device work they waited for ended.
        self.blocking = np.zeros(n, bool)
        self.blocking[roles.blocking_calls] = True
        work = np.concatenate((roles.device_ops, roles.copies))
        o = np.argsort(self.end[work], kind="stable")
        self.work_ids, self.work_end = work[o], self.end[work][o]
        self.api_calls = roles.api_calls
        # A device op that waited on a copy through an event has no flow from it: take the last
        # copy of its device that ended before it began (the gap classification's 'pcie' rule).
        self.copy_pred = np.full(n, -1, slice_id_type(n))
        copies, all_ops = roles.copies, roles.device_ops
        copy_dev, op_dev = trace.tracks.device[sl.track[copies]], trace.tracks.device[sl.track[all_ops]]
        for d in np.unique(op_dev):
            c = copies[copy_dev == d]
            c = c[np.argsort(self.end[c], kind="stable")]
            ops = all_ops[op_dev == d]
            i = np.searchsorted(self.end[c], self.start[ops], "right") - 1
            self.copy_pred[ops[i >= 0]] = c[i[i >= 0]]
        self.stream_pred = self._stream_order(trace)
        self._start, self._end = self.start.item, self.end.item
        self._stops: dict[int, np.ndarray] = {}

    def _stream_order(self, trace: Trace) -> np.ndarray:
        """For each slice that executes a driver-queue submission (flow queue → device lane), the
        work of the same queue that began just before it: a stream runs in order, so that work
        let it start even on another lane (the op before a copy; the previous node of a graph
        replay). -1 elsewhere."""
        n = len(trace.slices)
        pred = np.full(n, -1, slice_id_type(n))
        kind, track = trace.tracks.kind, trace.slices.track
        src, dst = trace.flows.src, trace.flows.dst
        ok = (kind[track[src]] == TrackKind.DRIVER_QUEUE) & np.isin(kind[track[dst]],
                                                                    (TrackKind.EXEC_UNIT, TrackKind.DMA_ENGINE))
        if not ok.any():
            return pred
        work, queue = dst[ok], trace.slices.track[src[ok]]
        o = np.lexsort((work, self.start[work], queue))
        work, queue = work[o], queue[o]
        same = np.zeros(len(work), bool)
        same[1:] = (queue[1:] == queue[:-1]) & (work[1:] != work[:-1])
        pred[work[same]] = work[np.flatnonzero(same) - 1]
        return pred

    def chain_start(self, x: int) -> int:
        """The lowest index k <= x such that every slice in (k, x] of X's run was let start by
        the slice before it (queue order) and none is a blocking call: the walk can take
        (k, x] in one step. Computed per run, vectorised, the first time the run is walked."""
        runs = self.t.runs
        r = int(np.searchsorted(runs.begin, x, "right")) - 1
        stop = self._stops.get(r)
        if stop is None:
            b, e = int(runs.begin[r]), int(runs.end[r])
            idx = np.arange(b, e)
            queue_t = np.where(idx > b, self.end[np.maximum(idx - 1, b)], np.iinfo(np.int64).min)
            queue_src = np.where(idx > b, idx - 1, -1)
            others_beat_queue = np.zeros(e - b, bool)
            stream = self.stream_pred[b:e]
            for src, t in ((self.flow_src[b:e], self.flow_t[b:e]),
                           (stream, np.where(stream >= 0, np.minimum(self.end[np.maximum(stream, 0)], self.start[b:e]),
                                             0)),
                           (self.parent[b:e], np.where(self.parent[b:e] >= 0,
                                                       self.start[np.maximum(self.parent[b:e], 0)], 0)),
                           (self.copy_pred[b:e], np.where(self.copy_pred[b:e] >= 0,
                                                          self.end[np.maximum(self.copy_pred[b:e], 0)], 0))):
                others_beat_queue |= (src >= 0) & ((t > queue_t) | ((t == queue_t) & (src > queue_src)))
            stops = (idx == b) | others_beat_queue | self.blocking[b:e]
            stop = np.maximum.accumulate(np.where(stops, idx, b))
            self._stops[r] = stop
        return int(stop[x - int(runs.begin[r])])

    def best(self, x: int) -> tuple[int, int, int]:
        """(time, slice, via code) of X's predecessor that arrived last, or (0, -1, -1).

        Ties go to the higher slice id. Scalar on purpose: only the path's slices are asked."""
        best = (0, -1, -1)
        f = self.flow_src.item(x)
        if f >= 0:
            best = (self.flow_t.item(x), f, 0)
        if self.has_prev.item(x):
            c = (self._end(x - 1), x - 1, 1)
            best = c if best[1] < 0 or c[:2] > best[:2] else best
        p = self.parent.item(x)
        if p >= 0:
            c = (self._start(p), p, 2)
            best = c if best[1] < 0 or c[:2] > best[:2] else best
        k = self.copy_pred.item(x)
        if k >= 0:
            c = (self._end(k), k, 3)
            best = c if best[1] < 0 or c[:2] > best[:2] else best
        k = self.stream_pred.item(x)
        if k >= 0:
            c = (min(self._end(k), self._start(x)), k, 4)
            best = c if best[1] < 0 or c[:2] > best[:2] else best
        return best

    def waited_for(self, x: int, until: int) -> int:
        """For a blocking call X: the device work that ended last within (start, until], or -1."""
        if not self.blocking.item(x):
            return -1
        i = int(np.searchsorted(self.work_end, until, "right")) - 1
        return int(self.work_ids[i]) if i >= 0 and self.work_end[i] > self.start[x] else -1

    @staticmethod
    def _parents(trace: Trace, end: np.ndarray) -> np.ndarray:
        """The enclosing slice one depth up on the same track (-1 at depth 0 or when none);
        ``end``: every slice's end."""
        sl, runs = trace.slices, trace.runs
        parent = np.full(len(sl), -1, slice_id_type(len(sl)))
        start = sl.start_ns
        key = {(int(t), int(d)): (int(b), int(e)) for t, d, b, e in zip(runs.track, runs.depth, runs.begin, runs.end,
                                                                        strict=True)}
        for (track, depth), (b, e) in key.items():
            up = key.get((track, depth - 1)) if depth > 0 else None
            if up is None:
                continue
            pb, pe = up
            i = pb + np.searchsorted(start[pb:pe], start[b:e], "right") - 1
            ok = (i >= pb) & (end[np.maximum(i, pb)] >= end[b:e])
            parent[b:e] = np.where(ok, i, -1)
        return parent



def critical_path(trace: Trace, end_slice: int | None = None, max_steps: int = 10_000_000,
                  roles: Roles | None = None, deps: Dependencies | None = None) -> CriticalPath:
    """Walk back from ``end_slice`` (default: the slice that ends last) to the path's start.
    ``deps``: the trace's dependencies, when the caller has them already (the graph view)."""
    if len(trace.slices) == 0:
        return CriticalPath()
    deps = deps or Dependencies(trace, roles)
    start, end = deps.start.item, deps.end.item  # Python ints: the walk is a scalar loop
    if end_slice is None:  # the last work to finish: device ops, copies or host API calls, not annotations
        work = np.concatenate((deps.work_ids, deps.api_calls))
        end_slice = int(work[np.argmax(deps.end[work])]) if len(work) else int(np.argmax(deps.end))
    x = end_slice
    seg_end = end(x)
    steps = _Steps()
    for _ in range(max_steps):
        w = deps.waited_for(x, seg_end)
        if w >= 0:  # the call returned because device work finished: the path runs through that work
            steps.add(0, end(w), seg_end, x)
            x, seg_end = w, end(w)
            continue
        sx = start(x)
        if seg_end > sx or end(x) == sx:
            steps.add(0, sx, seg_end, x)
        t, prev, via = deps.best(x)
        if prev < 0:
            break
        if via == 1 and (k := deps.chain_start(prev)) < prev:
            # A queue chain: prev, prev-1, ..., k+1 each let the next start. Take it in one go.
            if end(prev) < sx:
                steps.add(1, end(prev), sx, x, 1)
            steps.add_chain(deps, prev, k)
            x, seg_end = k, end(k)
            continue
        if via != 2 and t < sx and end(prev) <= sx:
            steps.add(1, t, sx, x, via)
        # Through a parent, or a flow whose source still ran when X began, the path continues in
        # the predecessor's own time up to X's start.
        seg_end = min(end(prev), sx)
        x = prev
    return steps.path(trace)


def _by_resource(trace: Trace, path: CriticalPath) -> dict[str, int]:
    dur = path.end_ns - path.start_ns
    wait = path.kind == 1
    kinds = trace.tracks.kind[trace.slices.track[path.slice_id]]
    out = {"waiting": int(dur[wait].sum())} if wait.any() else {}
    for k in np.unique(kinds[~wait]):
        out[TrackKind(int(k)).label] = int(dur[~wait & (kinds == k)].sum())
    return out


def dependency_graph(trace: Trace, ids: np.ndarray) -> nx.DiGraph:
    """The DAG of the given slices: nodes (slice, "B"|"E"), an edge B→E weighted by duration,
    and zero-weight dependency edges for flows, queue order, stream order and nesting among them."""
    deps = Dependencies(trace)
    keep = {int(i) for i in ids}
    g = nx.DiGraph()
    for x in keep:
        g.add_edge((x, "B"), (x, "E"), weight=int(trace.slices.dur_ns[x]))
        if deps.has_prev[x] and x - 1 in keep:
            g.add_edge((x - 1, "E"), (x, "B"), weight=0)
        p = int(deps.parent[x])
        if p in keep:
            g.add_edge((p, "B"), (x, "B"), weight=0)
            g.add_edge((x, "E"), (p, "E"), weight=0)
    for src, dst in zip(trace.flows.src.tolist(), trace.flows.dst.tolist(), strict=True):
        if src in keep and dst in keep:
            g.add_edge((src, "E" if deps.end[src] <= deps.start[dst] else "B"), (dst, "B"), weight=0)
    for x in keep:  # stream order
        p = int(deps.stream_pred[x])
        if p in keep and deps.end[p] <= deps.start[x]:
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
