"""The graph as drawn: each folded group one node ("decode.layers.# ×32"), the other nodes as
they are, edges between the drawn nodes (one per pair, the first in type order)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dag import CLASSES, DMA, EDGE_TYPES, LAUNCH, NODE_KINDS, OpGraph
from .groups import Groups

GROUP = len(NODE_KINDS)  # the kind of a drawn group node


@dataclass(frozen=True)
class DisplayGraph:
    """Drawn nodes (index = position, by start) and edges as columns. ``source[i]`` is the graph
    node a drawn node stands for, or ``-(group + 1)`` for a folded group."""

    graph: OpGraph
    source: np.ndarray
    kind: np.ndarray  # index into NODE_KINDS, or GROUP
    cls: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    critical: np.ndarray
    labels: list[str]
    band: np.ndarray  # vertical band: host calls, submissions, wakes, transfers, device work
    src: np.ndarray
    dst: np.ndarray
    etype: np.ndarray
    latency_ns: np.ndarray
    edge_critical: np.ndarray
    node_of: np.ndarray  # per graph node: the drawn node showing it

    def __len__(self) -> int:
        return len(self.source)

    def describe_edge(self, e: int) -> str:
        """An edge's type and latency, for a tooltip."""
        from accelview.model.text.values import format_duration

        return f"{EDGE_TYPES[self.etype[e]]} · {format_duration(float(self.latency_ns[e]))}"


# Bands top to bottom: calls and their wakes, submissions, copies and transfers, device ops.
BAND_OF_KIND = np.array([0, 0, 1, 2, 2, 3, 3], np.int8)  # wake, api, submit, dma, transfer, op, group


def display_graph(g: OpGraph, groups: Groups, expanded: set[int]) -> DisplayGraph:
    """The drawn graph of ``g`` with the groups in ``expanded`` open and all others folded."""
    rep = groups.shown_as(expanded)
    single = np.flatnonzero(rep < 0)
    folded = np.unique(rep[rep >= 0])
    # Drawn nodes: single nodes, then folded groups; sorted by start.
    n_single = len(single)
    source = np.concatenate((single, -folded - 1))
    start = np.concatenate((g.start_ns[single], np.zeros(len(folded), np.int64)))
    end = np.concatenate((g.end_ns[single], np.zeros(len(folded), np.int64)))
    kind = np.concatenate((g.kind[single], np.full(len(folded), GROUP, np.int8)))
    cls = np.concatenate((g.cls[single], np.zeros(len(folded), np.int8)))
    crit = np.concatenate((g.critical[single], np.zeros(len(folded), bool)))
    dur = g.end_ns - g.start_ns
    for j, gi in enumerate(folded.tolist()):
        m = groups.groups[gi].members
        k = n_single + j
        start[k], end[k] = g.start_ns[m].min(), g.end_ns[m].max()
        crit[k] = bool(g.critical[m].any())
        work = m[g.kind[m] >= DMA] if (g.kind[m] >= DMA).any() else m  # coloured by its device work
        weight = np.bincount(g.cls[work], weights=dur[work], minlength=len(CLASSES))  # the class with the most time
        cls[k] = int(np.argmax(weight))
    order = np.lexsort((np.arange(len(source)), kind, start))
    source, start, end, kind, cls, crit = source[order], start[order], end[order], kind[order], cls[order], crit[order]
    at = np.empty(len(order), np.int64)
    at[order] = np.arange(len(order))
    node_of = np.empty(len(g), np.int64)
    node_of[single] = at[np.arange(n_single)]
    if len(folded):
        idx = np.searchsorted(folded, rep[rep >= 0])
        node_of[rep >= 0] = at[n_single + idx]
    labels = []
    for s in source.tolist():
        if s >= 0:
            labels.append(g.name(s))
        else:
            grp = groups.groups[-s - 1]
            labels.append(f"{grp.label} ×{grp.count}")
    # Edges between drawn nodes, one per pair (the lowest type index: launch, sync, data, dependency).
    s, d = node_of[g.src], node_of[g.dst]
    keep = s != d
    key = (d[keep] * (len(source) + 1) + s[keep]) * len(EDGE_TYPES) + g.etype[keep]
    o = np.argsort(key, kind="stable")  # within a pair, lowest type first
    e_idx = np.flatnonzero(keep)[o]
    _, first = np.unique((key // len(EDGE_TYPES))[o], return_index=True)
    e_idx = e_idx[first]
    e_idx = _thin_replay_launches(s, d, g.etype, e_idx)
    lat = g.latency_ns
    return DisplayGraph(g, source, kind, cls, start, end, crit, labels, BAND_OF_KIND[kind],
                        s[e_idx], d[e_idx], g.etype[e_idx], lat[e_idx], g.edge_critical[e_idx], node_of)


REPLAY_FANOUT = 4


def _thin_replay_launches(s: np.ndarray, d: np.ndarray, etype: np.ndarray, e_idx: np.ndarray) -> np.ndarray:
    """Of a source that launches more than REPLAY_FANOUT drawn nodes (a graph replay's one
    submission), draw only the launch of its first node: stream order chains the rest, and
    hundreds of long edges from one box would hide the graph. The model keeps every edge."""
    launch = etype[e_idx] == LAUNCH
    src, dst = s[e_idx], d[e_idx]
    counts = np.bincount(src[launch], minlength=int(s.max(initial=0)) + 1)
    fan = launch & (counts[src] > REPLAY_FANOUT)
    first = np.full(len(counts), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, src[fan], dst[fan])
    return e_idx[~fan | (dst == first[src])]
