""""What if this stage were X% faster": replay a selection's DAG with one lifecycle stage
shortened, recompute its critical path, and say how much sooner it (and each phase) ends.

The replay keeps everything the capture measured except the stage: each node starts when its
last dependency lets it (the same edges, each arriving as it did relative to its source) plus
the delay it had after that one; the delay or duration that belongs to the stage shrinks.
Replaying with 0% gives back the captured times exactly. Which part of a node is which stage
(docs/GRAPH.md): an API call's duration and a submission's delay after its call began are
``api``; a submission's duration ``driver``; a device node's delay after its launch arrived,
when that launch arrived last, ``doorbell``; a copy's DMA and PCIe time ``dma``; an op's
duration ``execution``; a wake node's delay after the work it waited for ``wake``. ``queue`` is
waiting, not work: it shrinks only when what it waits for does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from accelview.model.errors import AccelviewError

from .dag import API, DMA, LAUNCH, OP, SUBMIT, TRANSFER, WAKE, OpGraph
from .lifecycle import STAGES

SCALABLE = tuple(s for s in STAGES if s != "queue")


@dataclass(frozen=True)
class Schedule:
    """Node start and end times of a (re)played graph, and its critical path (node indexes in
    time order: from the node that ends last, back through the dependency that arrived last)."""

    start_ns: np.ndarray
    end_ns: np.ndarray
    path: np.ndarray

    @property
    def span_ns(self) -> int:
        """From the first start to the last end."""
        return int(self.end_ns.max() - self.start_ns.min()) if len(self.start_ns) else 0


@dataclass(frozen=True)
class WhatIf:
    """The captured and the replayed schedule of one stage change, and each phase's saving."""

    stage: str
    percent: float
    before: Schedule
    after: Schedule
    phases: list[tuple[str, int, int]]  # (name, captured ns, replayed ns)

    @property
    def saved_ns(self) -> int:
        """How much sooner the selection ends."""
        return self.before.span_ns - self.after.span_ns


def parse_what_if(text: str) -> tuple[str, float]:
    """``STAGE=PCT`` (e.g. ``execution=20``) → (stage, percent); a bad one is an AccelviewError."""
    stage, sep, pct = text.partition("=")
    stage = stage.strip().lower()
    if not sep or stage not in SCALABLE:
        extra = " (queue is waiting, not work: it shrinks when what it waits for does)" if stage == "queue" else ""
        raise AccelviewError(f"--what-if {text!r}: expected STAGE=PCT with STAGE one of {', '.join(SCALABLE)}{extra}")
    try:
        value = float(pct)
    except ValueError:
        raise AccelviewError(f"--what-if {text!r}: PCT must be a number, got {pct!r}") from None
    if not 0 <= value <= 100:
        raise AccelviewError(f"--what-if {text!r}: PCT must be between 0 and 100")
    return stage, value


def _parts(g: OpGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per node: its incoming edges' range (edges are sorted by destination), each edge's
    offset from its source (from the source's end, or from its start), and the node's delay
    after its last arrival and its duration."""
    n = len(g)
    ptr = np.searchsorted(g.dst, np.arange(n + 1))
    from_end = g.arrive_ns >= g.end_ns[g.src]
    offset = np.where(from_end, g.arrive_ns - g.end_ns[g.src], g.arrive_ns - g.start_ns[g.src])
    last = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last, g.dst, g.arrive_ns)
    delay = np.where(ptr[1:] > ptr[:-1], g.start_ns - last, 0)
    return ptr, from_end, offset, delay, g.end_ns - g.start_ns, last


def _stage_scaling(g: OpGraph, stage: str, keep: float, delay: np.ndarray, dur: np.ndarray,
                   last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Delays and durations with ``stage``'s part scaled by ``keep``."""
    delay, dur = delay.astype(np.float64), dur.astype(np.float64)
    k = g.kind
    if stage == "api":
        dur[k == API] *= keep
        delay[k == SUBMIT] *= keep
    elif stage == "driver":
        dur[k == SUBMIT] *= keep
    elif stage == "doorbell":
        launched = np.zeros(len(g), bool)
        bind = (g.etype == LAUNCH) & (g.arrive_ns == last[g.dst])
        launched[g.dst[bind]] = True
        delay[launched & ((k == OP) | (k == DMA))] *= keep
    elif stage == "dma":
        dur[(k == DMA) | (k == TRANSFER)] *= keep
    elif stage == "execution":
        dur[k == OP] *= keep
    elif stage == "wake":
        delay[k == WAKE] *= keep
    return delay, dur


def replay(g: OpGraph, stage: str | None = None, percent: float = 0.0) -> Schedule:
    """The graph's schedule with ``stage`` ``percent``% faster (None: as captured)."""
    ptr, from_end, offset, delay, dur, last = _parts(g)
    if stage is not None:
        delay, dur = _stage_scaling(g, stage, 1 - percent / 100, delay, dur, last)
    n = len(g)
    s_new, e_new = g.start_ns.astype(np.float64), g.end_ns.astype(np.float64)
    src, fe, off = g.src.tolist(), from_end.tolist(), offset.tolist()
    best = np.full(n, -1, np.int64)
    dl, du, pl = delay.tolist(), dur.tolist(), ptr.tolist()
    s_l, e_l = s_new.tolist(), e_new.tolist()
    for v in range(n):  # topological order: sources come first
        a, b = pl[v], pl[v + 1]
        if a == b:
            e_l[v] = s_l[v] + du[v]
            continue
        t_best, j_best = -np.inf, -1
        for j in range(a, b):
            u = src[j]
            t = (e_l[u] if fe[j] else s_l[u]) + off[j]
            if t >= t_best:
                t_best, j_best = t, j
        s_l[v] = t_best + dl[v]
        e_l[v] = s_l[v] + du[v]
        best[v] = src[j_best]
    s_arr, e_arr = np.round(np.array(s_l)).astype(np.int64), np.round(np.array(e_l)).astype(np.int64)
    wake = np.flatnonzero(g.kind == WAKE)  # a blocked call returns when it wakes
    calls = np.searchsorted(g.node, g.slice_of[wake], sorter=np.argsort(g.node))
    e_arr[np.argsort(g.node)[calls]] = s_arr[wake]
    return Schedule(s_arr, e_arr, _path(best, e_arr))


def _path(best: np.ndarray, end: np.ndarray) -> np.ndarray:
    if not len(end):
        return np.empty(0, np.int64)
    v = int(np.lexsort((np.arange(len(end)), end))[-1])
    out = [v]
    while best[v] >= 0:
        v = int(best[v])
        out.append(v)
    return np.array(out[::-1], np.int64)


def what_if(g: OpGraph, stage: str, percent: float, phases: list[tuple[str, int, int]] = ()) -> WhatIf:
    """Replay ``g`` with ``stage`` ``percent``% faster; ``phases`` (name, start, end) get the
    captured and replayed span of the nodes that began inside them."""
    before, after = replay(g), replay(g, stage, percent)
    out = []
    for name, t0, t1 in phases:
        m = (g.start_ns >= t0) & (g.start_ns < t1)
        if m.any():
            out.append((name, int(before.end_ns[m].max() - before.start_ns[m].min()),
                        int(after.end_ns[m].max() - after.start_ns[m].min())))
    return WhatIf(stage, percent, before, after, out)
