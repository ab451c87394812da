"""The dependency DAG of a selection: one node per host API call, driver submission, DMA job,
PCIe transfer and device op (graph-replay nodes included: they hang off their replay's one
submission by flows, which is where HTA's correlation-id walk loses them, its issue #290), plus
a *wake* node for each host call that blocked on the device: the moment the host woke up.

Edges are typed:
- ``launch``: a call or submission started the work (flows from the runtime API or a queue);
- ``dependency``: stream order, events between streams, host program order, device lane order;
- ``sync``: device work a blocked call waited for (into the call's wake node);
- ``data``: the data a transfer moved (DMA → PCIe) or the copy an op waited on.

Each edge's latency is the time from when its source let the destination start (its end, or its
start for a call that submits while it runs) to the destination's start. The predecessors come
from ``analysis.critical_path.Dependencies``, the model the critical path walks, and the critical
path is that walk's (``critical_path``), marked on the nodes and the binding edges it takes.

Nodes are kept in topological order: sorted by start, ties by kind (wake, api, submit, dma,
transfer, op); an edge that would go backwards in that order is dropped, so the graph is a DAG.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np
from accelview.model.analysis.critical_path import Dependencies, critical_path
from accelview.model.analysis.ops import classify_ops
from accelview.model.analysis.roles import SYNC_NAME, Roles
from accelview.model.schema import TrackKind
from accelview.model.trace import Trace

NODE_KINDS = ("wake", "api", "submit", "dma", "transfer", "op")  # order breaks ties of equal starts
WAKE, API, SUBMIT, DMA, TRANSFER, OP = range(len(NODE_KINDS))
EDGE_TYPES = ("launch", "sync", "data", "dependency")  # order: which type a doubled edge keeps
LAUNCH, SYNC, DATA, DEPENDENCY = range(len(EDGE_TYPES))
# Colour classes: device ops by bottleneck (analysis.ops), everything else by what it is.
CLASSES = ("compute", "memory", "latency", "unknown", "host", "transfer")
HOST_CLASS, TRANSFER_CLASS = CLASSES.index("host"), CLASSES.index("transfer")
RUNTIME_CATEGORY = re.compile(r"runtime|driver", re.IGNORECASE)


class GraphContext:
    """What every graph of one trace shares, computed once: roles, the dependency model, op
    bottleneck classes and each slice's node kind (-1: not a graph node)."""

    def __init__(self, trace: Trace, roles: Roles | None = None) -> None:
        self.trace = trace
        self.roles = roles = roles or Roles(trace)
        self.deps = Dependencies(trace, roles)
        n = len(trace.slices)
        kind = np.full(n, -1, np.int8)
        kind[roles.kinds == TrackKind.DRIVER_QUEUE] = SUBMIT
        kind[roles.kinds == TrackKind.DMA_ENGINE] = DMA
        kind[roles.transfers] = TRANSFER
        kind[roles.device_ops] = OP
        kind[roles.api_calls] = API
        kind[self._host_runtime_calls(trace, roles, kind)] = API
        self.kind = kind
        cls = np.full(n, HOST_CLASS, np.int8)
        cls[(kind == DMA) | (kind == TRANSFER)] = TRANSFER_CLASS
        labels = classify_ops(roles)
        for i, name in enumerate(CLASSES[:4]):
            cls[labels.slice[labels.is_class(name)]] = i
        self.cls = cls
        self.blocking = np.zeros(n, bool)
        self.blocking[roles.blocking_calls] = True
        # Synchronising calls on host threads (Kineto's cudaDeviceSynchronize) block like those
        # of a runtime API lane: the walk and the wake nodes treat them alike.
        self.blocking[roles.named(np.flatnonzero(kind == API), SYNC_NAME)] = True
        self.deps.blocking |= self.blocking
        self.start = trace.slices.start_ns
        self.end = trace.slices.start_ns + trace.slices.dur_ns

    @staticmethod
    def _host_runtime_calls(trace: Trace, roles: Roles, kind: np.ndarray) -> np.ndarray:
        """Runtime calls that profilers record on host threads (Kineto's ``cuda_runtime``,
        ``cuda_driver``, ``mtia_runtime``), and any host-thread slice a flow leads from into
        device work: the launches of traces without a runtime API lane."""
        host = np.flatnonzero(roles.kinds == TrackKind.HOST_THREAD)
        cats = np.unique(trace.slices.category[host])
        runtime = [c for c in cats.tolist() if RUNTIME_CATEGORY.search(trace.strings[c])]
        fl = trace.flows
        launches = fl.src[(roles.kinds[fl.src] == TrackKind.HOST_THREAD) & (kind[fl.dst] >= DMA)]
        return np.union1d(host[np.isin(trace.slices.category[host], runtime)], launches)

    def nodes_in(self, t0: int, t1: int) -> np.ndarray:
        """Ids of the graph's kinds of slice that overlap [t0, t1)."""
        hit = (self.kind >= 0) & (self.start < t1) & ((self.end > t0) | (self.start >= t0))
        return np.flatnonzero(hit)

    @cached_property
    def woken(self) -> tuple[np.ndarray, np.ndarray]:
        """Every blocking call and the device work it waited for (-1: none)."""
        calls = np.flatnonzero(self.blocking)
        return calls, np.array([self.deps.waited_for(int(c), int(self.end[c])) for c in calls], np.int64)


@dataclass
class OpGraph:
    """One selection's DAG as columns (position = node index, in topological order) and as a
    networkx ``DiGraph`` keyed by ``node`` (slice id; ``-(call + 1)`` for a call's wake node)."""

    trace: Trace
    node: np.ndarray  # slice id, or -(call id + 1) for a wake node
    kind: np.ndarray  # index into NODE_KINDS
    start_ns: np.ndarray
    end_ns: np.ndarray
    cls: np.ndarray  # index into CLASSES
    critical: np.ndarray  # on the critical path
    src: np.ndarray  # edges, as node indexes
    dst: np.ndarray
    etype: np.ndarray  # index into EDGE_TYPES
    arrive_ns: np.ndarray  # when the edge's source let its destination start
    edge_critical: np.ndarray

    def __len__(self) -> int:
        return len(self.node)

    @property
    def latency_ns(self) -> np.ndarray:
        """Each edge's latency: from when its source let go to its destination's start."""
        return self.start_ns[self.dst] - self.arrive_ns

    @cached_property
    def slice_of(self) -> np.ndarray:
        """The slice each node stands for (a wake node: its call)."""
        return np.where(self.node >= 0, self.node, -self.node - 1)

    def name(self, i: int) -> str:
        """A node's display name."""
        sid = int(self.slice_of[i])
        text = self.trace.strings[self.trace.slices.name[sid]]
        return f"wake: {text}" if self.kind[i] == WAKE else text

    def index_of(self, slice_id: int) -> int:
        """The node of a slice (its call's node for a wake), or -1."""
        hit = np.flatnonzero(self.node == slice_id)
        return int(hit[0]) if len(hit) else -1

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The same DAG in networkx: node attributes kind, name, start_ns, end_ns, cls, critical;
        edge attributes type, latency_ns, critical."""
        g = nx.DiGraph()
        lat = self.latency_ns
        g.add_nodes_from((int(self.node[i]), {
            "kind": NODE_KINDS[self.kind[i]], "name": self.name(i), "start_ns": int(self.start_ns[i]),
            "end_ns": int(self.end_ns[i]), "cls": CLASSES[self.cls[i]], "critical": bool(self.critical[i]),
        }) for i in range(len(self.node)))
        g.add_edges_from((int(self.node[s]), int(self.node[d]), {
            "type": EDGE_TYPES[t], "latency_ns": int(la), "critical": bool(c),
        }) for s, d, t, la, c in zip(self.src, self.dst, self.etype, lat, self.edge_critical, strict=True))
        return g


def build_graph(ctx: GraphContext, ids: np.ndarray) -> OpGraph:
    """The DAG of the given slices (those that are not host calls, submissions, transfers or
    device ops are left out)."""
    trace, deps, kind = ctx.trace, ctx.deps, ctx.kind
    start, end = ctx.start, ctx.end
    n = len(trace.slices)
    ids = np.unique(np.asarray(ids, np.int64))
    ids = ids[(ids >= 0) & (ids < n)]
    ids = ids[kind[ids] >= 0]
    in_set = np.zeros(n, bool)
    in_set[ids] = True
    fl = trace.flows
    m = in_set[fl.src] & in_set[fl.dst]
    fs, fd = fl.src[m].astype(np.int64), fl.dst[m].astype(np.int64)
    to_call = (kind[fd] == API) & (kind[fs] >= DMA)  # device work flowing into a call: the call waited
    blocking = ids[ctx.blocking[ids]]
    woken = np.union1d(blocking, fd[to_call])
    # Nodes in topological order: by start, ties by kind, then by id.
    node = np.concatenate((ids, -woken - 1))
    nkind = np.concatenate((kind[ids], np.full(len(woken), WAKE, np.int8)))
    nstart = np.concatenate((start[ids], end[woken]))
    order = np.lexsort((node, nkind, nstart))
    node, nkind, nstart = node[order], nkind[order], nstart[order]
    sl_of = np.where(node >= 0, node, -node - 1)
    nend = np.where(node >= 0, end[sl_of], nstart)
    pos = np.full(n, -1, np.int64)
    pos[node[node >= 0]] = np.flatnonzero(node >= 0)
    wpos = np.full(n, -1, np.int64)
    wpos[sl_of[node < 0]] = np.flatnonzero(node < 0)
    after = np.where(wpos >= 0, wpos, pos)  # where a slice's successors attach: a blocked call's wake

    parts: list[tuple[np.ndarray, np.ndarray, int | np.ndarray, np.ndarray]] = []
    # Flows: launches from calls and queues, data between DMA and PCIe, device work into a call.
    arr = np.where(end[fs] <= start[fd], end[fs], start[fs])
    ok = ~to_call & (arr <= start[fd])
    launch = ok & ((kind[fs] == API) | (kind[fs] == SUBMIT))
    parts.append((pos[fs[launch]], pos[fd[launch]], LAUNCH, arr[launch]))
    parts.append((pos[fs[to_call]], wpos[fd[to_call]], SYNC, end[fs[to_call]]))
    # Blocked calls: the work each waited for wakes it; the call's own start leads to its wake.
    calls, waited = ctx.woken
    w = waited[np.searchsorted(calls, blocking)]
    hit = (w >= 0) & in_set[np.maximum(w, 0)]
    parts.append((pos[w[hit]], wpos[blocking[hit]], SYNC, end[w[hit]]))
    parts.append((pos[blocking], wpos[blocking], DEPENDENCY, start[blocking]))
    moved = ok & ~launch & ((kind[fs] == DMA) | (kind[fs] == TRANSFER) | (kind[fd] == DMA) | (kind[fd] == TRANSFER))
    parts.append((pos[fs[moved]], pos[fd[moved]], DATA, arr[moved]))
    event = ok & ~launch & ~moved  # device work waiting on other device work (events)
    parts.append((pos[fs[event]], pos[fd[event]], DEPENDENCY, arr[event]))
    # Host program order (from the previous call's wake when it blocked), stream order, and lane
    # order for device work no queue flow orders (imported GPU streams).
    prev = ids - 1
    has_prev = deps.has_prev[ids] & in_set[np.maximum(prev, 0)]
    host = has_prev & (kind[ids] == API) & (kind[np.maximum(prev, 0)] == API)
    parts.append((after[prev[host]], pos[ids[host]], DEPENDENCY, end[prev[host]]))
    sp = deps.stream_pred[ids]
    st = (sp >= 0) & in_set[np.maximum(sp, 0)]
    parts.append((pos[sp[st]], pos[ids[st]], DEPENDENCY, np.minimum(end[sp[st]], start[ids[st]])))
    lane = has_prev & (sp < 0) & ((kind[ids] == OP) | (kind[ids] == DMA))
    parts.append((pos[prev[lane]], pos[ids[lane]], DEPENDENCY, end[prev[lane]]))
    src, dst, etype, arrive = _merge(parts, nstart)
    # The copy an op waited on, where it arrived last of the op's predecessors.
    cp = deps.copy_pred[ids]
    has = (cp >= 0) & in_set[np.maximum(cp, 0)] & (kind[ids] == OP)
    last = np.full(len(node), np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last, dst, arrive)
    x, c = ids[has], cp[has]
    bind = end[c] >= last[pos[x]]
    src, dst, etype, arrive = _merge([(src, dst, etype, arrive), (pos[c[bind]], pos[x[bind]], DATA, end[c[bind]])],
                                     nstart)
    crit, ecrit = _critical(ctx, ids, node, pos, wpos, src, dst, arrive)
    return OpGraph(trace, node, nkind, nstart, nend, ctx.cls[sl_of], crit, src, dst, etype, arrive, ecrit)


def _merge(parts: list[tuple[np.ndarray, np.ndarray, int | np.ndarray, np.ndarray]],
           nstart: np.ndarray) -> tuple[np.ndarray, ...]:
    """Edges of all parts, each (src, dst) once (the earliest part wins), forward only and with
    arrivals no later than the destination's start, sorted by (dst, src)."""
    src = np.concatenate([p[0] for p in parts]).astype(np.int64)
    dst = np.concatenate([p[1] for p in parts]).astype(np.int64)
    et = np.concatenate([np.broadcast_to(np.asarray(p[2], np.int8), len(p[0])) for p in parts])
    arrive = np.concatenate([p[3] for p in parts]).astype(np.int64)
    ok = (src >= 0) & (dst >= 0) & (src < dst)
    ok &= arrive <= nstart[np.maximum(dst, 0)]
    src, dst, et, arrive = src[ok], dst[ok], et[ok], arrive[ok]
    key = dst * (len(nstart) + 1) + src
    _, first = np.unique(key, return_index=True)  # sorted by key: (dst, src)
    return src[first], dst[first], et[first], arrive[first]


def _critical(ctx: GraphContext, ids: np.ndarray, node: np.ndarray, pos: np.ndarray, wpos: np.ndarray,
              src: np.ndarray, dst: np.ndarray, arrive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The critical path's nodes (the analysis' walk back from the selection's last work) and
    the edges it takes: between two of them, the one that arrived last at its destination."""
    crit = np.zeros(len(node), bool)
    if not len(ids):
        return crit, np.zeros(len(src), bool)
    end_slice = int(ids[np.lexsort((ids, ctx.end[ids]))[-1]])
    path = np.asarray(critical_path(ctx.trace, end_slice, roles=ctx.roles, deps=ctx.deps).slices, np.int64)
    path = path[pos[path] >= 0]
    crit[pos[path]] = True
    woke = wpos[path]
    crit[woke[woke >= 0]] = True
    last = np.full(len(node), np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last, dst, arrive)
    return crit, crit[src] & crit[dst] & (arrive == last[dst])
