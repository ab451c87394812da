"""Analyses of GPU (and accelerator) traces: where device time goes, and why it idles.

Stateless functions from a ``Trace`` to dataclasses of ns, per rank and per stream (GPU_STREAM,
EXEC_UNIT or DMA_ENGINE track), with Holistic Trace Analysis's definitions of device work,
kernel kinds and idle causes (docs/IMPORT.md, "GPU analyses"), so that the figures agree with
HTA on the same trace.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from ..schema import TrackKind
from ..trace import Trace
from .intervals import intersection, total, union

STREAM_KINDS = (TrackKind.GPU_STREAM, TrackKind.EXEC_UNIT, TrackKind.DMA_ENGINE)
ANNOTATION_CATEGORIES = frozenset({"gpu_user_annotation"})
SYNC_CATEGORIES = frozenset({"cuda_sync"})
KERNEL_WAIT_NS = 30_000
_COMM = re.compile(r"^nccl.*Kernel")
_MEMORY = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
KINDS = ("compute", "communication", "memory", "other")


def kernel_kind(name: str) -> str:
    """HTA's kernel type of a device op name: compute, communication, memory or other."""
    if _COMM.match(name):
        return "communication"
    if _MEMORY.match(name):
        return "memory"
    return "other" if _NOT_COMPUTE.match(name) else "compute"


@dataclass
class DeviceWork:
    """The device work of one rank: one row per op, sorted by start."""

    rank: int
    start: np.ndarray
    end: np.ndarray
    stream: np.ndarray  # track id
    kind: np.ndarray  # index into KINDS
    name: np.ndarray  # string id
    slice_id: np.ndarray
    is_sync: np.ndarray
    launch: np.ndarray  # start of the launching host call, -1 when not in the trace


def ranks(trace: Trace) -> dict[int, np.ndarray]:
    """Rank number → ids of the tracks under it (roots named ``rank N``; else one rank 0)."""
    parent = trace.tracks.parent
    root = np.arange(len(parent))
    for _ in range(64):  # walk up to the roots, all tracks at once
        up = parent[root]
        if (up < 0).all():
            break
        root = np.where(up >= 0, up, root)
    out: dict[int, list[int]] = {}
    for r in np.unique(root).tolist():
        m = re.fullmatch(r"rank (\d+)", trace.track_name(r))
        out.setdefault(int(m.group(1)) if m else 0, []).extend(np.flatnonzero(root == r).tolist())
    return {k: np.asarray(sorted(v), dtype=np.int64) for k, v in sorted(out.items())}


def device_work(trace: Trace, drop_last_step: bool = True) -> list[DeviceWork]:
    """The device ops of every rank.

    With ``drop_last_step`` (HTA's default), a rank whose host threads show two or more
    ``ProfilerStep#N`` slices keeps only the ops launched before its last step began: the last
    step is usually cut short by the profiler, and ops launched outside the trace have no cause."""
    sl = trace.slices
    is_stream = np.isin(trace.tracks.kind, [int(k) for k in STREAM_KINDS])
    cat_names = {int(c): trace.name(int(c)) for c in np.unique(sl.category)}
    annotation = np.isin(sl.category, [c for c, n in cat_names.items() if n in ANNOTATION_CATEGORIES])
    sync = np.isin(sl.category, [c for c, n in cat_names.items() if n in SYNC_CATEGORIES])
    work = is_stream[sl.track] & ~annotation if len(sl) else np.zeros(0, bool)
    kind_of = {int(n): KINDS.index(kernel_kind(trace.name(int(n)))) for n in np.unique(sl.name[work])}
    steps = np.asarray([int(i) for i in np.unique(sl.name) if "ProfilerStep" in trace.name(int(i))], dtype=np.int64)
    out = []
    for rank, tracks in ranks(trace).items():
        in_rank = np.isin(sl.track, tracks)
        ids = np.flatnonzero(work & in_rank)
        launch = launch_starts(trace, ids, tracks)
        step_slices = np.flatnonzero(in_rank & ~is_stream[sl.track] & np.isin(sl.name, steps))
        if drop_last_step and len(np.unique(sl.name[step_slices])) >= 2:
            cutoff = sl.start_ns[step_slices].max()
            keep = (launch >= 0) & (launch < cutoff)
            ids, launch = ids[keep], launch[keep]
        order = np.argsort(sl.start_ns[ids], kind="stable")
        ids, launch = ids[order], launch[order]
        start = sl.start_ns[ids]
        names = sl.name[ids]
        out.append(DeviceWork(rank, start, start + sl.dur_ns[ids], sl.track[ids].astype(np.int64),
                              np.asarray([kind_of[int(n)] for n in names], dtype=np.int8), names, ids, sync[ids],
                              launch))
    return out


@dataclass
class TemporalBreakdown:
    """Where one rank's device time went, from its first op's start to its last op's end (ns).

    compute + communication + memory + other + idle == span; an instant covered by several
    kinds counts once, for the first of compute, communication, memory, other."""

    rank: int
    span: int
    idle: int
    compute: int
    communication: int
    memory: int
    other: int

    @property
    def non_compute(self) -> int:
        """HTA's non-compute time: span − compute − idle."""
        return self.span - self.compute - self.idle


def temporal_breakdown(trace: Trace, drop_last_step: bool = True) -> list[TemporalBreakdown]:
    """Compute, communication, memory, other and idle time per rank."""
    out = []
    for w in device_work(trace, drop_last_step):
        if not len(w.start):
            continue
        span = int(w.end.max() - w.start.min())
        covered = (np.empty(0, np.int64), np.empty(0, np.int64))
        parts = {}
        for k, kind in enumerate(KINDS):
            mine = union(w.start[w.kind == k], w.end[w.kind == k])
            both = union(np.concatenate([covered[0], mine[0]]), np.concatenate([covered[1], mine[1]]))
            parts[kind] = total(*both) - total(*covered)
            covered = both
        out.append(TemporalBreakdown(w.rank, span, span - total(*covered), **parts))
    return out


@dataclass
class StreamIdle:
    """Idle time of one stream (ns) and its causes."""

    rank: int
    stream: int  # track id
    host_wait: int
    kernel_wait: int
    other: int
    gaps: int = 0

    @property
    def total(self) -> int:
        """All idle time of the stream."""
        return self.host_wait + self.kernel_wait + self.other


def launch_starts(trace: Trace, slice_ids: np.ndarray, tracks: np.ndarray | None = None) -> np.ndarray:
    """Start of the host call that launched each slice (same correlation id, on one of
    ``tracks`` when given: correlation ids repeat across ranks); -1 when unknown."""
    sl = trace.slices
    device = np.isin(sl.track, np.flatnonzero(np.isin(trace.tracks.kind, [int(k) for k in STREAM_KINDS])))
    mine = np.isin(sl.track, tracks) if tracks is not None else True
    host = np.flatnonzero(~device & mine & (sl.correlation >= 0))
    corr = sl.correlation[host]
    order = np.argsort(corr, kind="stable")
    corr, host = corr[order], host[order]
    want = sl.correlation[slice_ids]
    if not len(corr):
        return np.full(len(slice_ids), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(corr, want), len(corr) - 1)
    found = (corr[pos] == want) & (want >= 0)
    return np.where(found, sl.start_ns[host[pos]], -1)


def idle_time_breakdown(
    trace: Trace, kernel_wait_ns: int = KERNEL_WAIT_NS, drop_last_step: bool = True
) -> list[StreamIdle]:
    """Per stream: idle gaps between consecutive ops split into host wait, kernel wait, other."""
    out = []
    for w in device_work(trace, drop_last_step):
        keep = ~w.is_sync
        start, end, stream, launch = w.start[keep], w.end[keep], w.stream[keep], w.launch[keep]
        for s in np.unique(stream).tolist():
            m = stream == s
            st, en, la = start[m], end[m], launch[m]
            gap = st[1:] - en[:-1]
            host = la[1:] > en[:-1]  # the launch came after the stream ran dry
            kern = ~host & (gap < kernel_wait_ns)
            other = ~host & ~kern
            out.append(StreamIdle(w.rank, int(s), int(gap[host].sum()), int(gap[kern].sum()), int(gap[other].sum()),
                                  len(gap)))
    return out


@dataclass
class KernelStats:
    """Duration statistics of one device op name (ns)."""

    name: str
    kind: str
    count: int
    total: int
    mean: float
    minimum: int
    maximum: int
    std: float


def kernel_statistics(trace: Trace, drop_last_step: bool = True) -> list[KernelStats]:
    """Per op name over all ranks and streams, by total time, largest first (syncs excluded)."""
    parts = [(w.name[~w.is_sync], (w.end - w.start)[~w.is_sync]) for w in device_work(trace, drop_last_step)]
    if not parts:
        return []
    names = np.concatenate([p[0] for p in parts])
    dur = np.concatenate([p[1] for p in parts]).astype(np.float64)
    uniq, inv = np.unique(names, return_inverse=True)
    count = np.bincount(inv, minlength=len(uniq))
    tot = np.bincount(inv, weights=dur, minlength=len(uniq))
    sq = np.bincount(inv, weights=dur * dur, minlength=len(uniq))
    mins = np.full(len(uniq), np.inf)
    maxs = np.zeros(len(uniq))
    np.minimum.at(mins, inv, dur)
    np.maximum.at(maxs, inv, dur)
    mean = tot / count
    std = np.sqrt(np.maximum(sq / count - mean * mean, 0.0) * count / np.maximum(count - 1, 1))
    rows = [KernelStats(trace.name(int(n)), kernel_kind(trace.name(int(n))), int(c), int(t), float(m), int(lo),
                        int(hi), float(s)) for n, c, t, m, lo, hi, s in zip(uniq, count, tot, mean, mins, maxs, std,
                                                                             strict=True)]
    return sorted(rows, key=lambda r: -r.total)


@dataclass
class LaunchStats:
    """Launch delay (launch call start → op start, ns) and queue length of one stream."""

    rank: int
    stream: int
    launches: int
    delay_mean: float
    delay_p50: float
    delay_p95: float
    delay_max: int
    queue_max: int
    queue_mean: float  # time-weighted over the stream's span
    queue_ts: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0, np.int64))
    queue_len: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0, np.int64))


def launch_statistics(trace: Trace, drop_last_step: bool = True) -> list[LaunchStats]:
    """Per stream: how long launched ops wait to start, and how many are queued over time.

    The queue grows by one when a launch call starts and shrinks by one when its op ends."""
    out = []
    for w in device_work(trace, drop_last_step):
        launch = w.launch
        for s in np.unique(w.stream).tolist():
            m = (w.stream == s) & (launch >= 0)
            if not m.any():
                continue
            delay = w.start[m] - launch[m]
            ts = np.concatenate([launch[m], w.end[m]])
            step = np.concatenate([np.ones(m.sum(), np.int64), -np.ones(m.sum(), np.int64)])
            order = np.lexsort((step, ts))  # at equal times, ends first
            ts, q = ts[order], np.cumsum(step[order])
            span = ts[-1] - ts[0]
            mean_q = float((q[:-1] * np.diff(ts)).sum() / span) if span > 0 else float(q.max())
            out.append(LaunchStats(w.rank, int(s), int(m.sum()), float(delay.mean()), float(np.percentile(delay, 50)),
                                   float(np.percentile(delay, 95)), int(delay.max()), int(q.max()), mean_q, ts, q))
    return out


@dataclass
class Overlap:
    """How much of one rank's communication time overlaps compute (ns)."""

    rank: int
    communication: int
    overlapped: int

    @property
    def ratio(self) -> float:
        """Overlapped share of communication time (NaN without communication)."""
        return self.overlapped / self.communication if self.communication else float("nan")


def comm_compute_overlap(trace: Trace, drop_last_step: bool = True) -> list[Overlap]:
    """Per rank: communication time, and the part of it during which compute also ran."""
    out = []
    for w in device_work(trace, drop_last_step):
        comm = union(w.start[w.kind == 1], w.end[w.kind == 1])
        comp = union(w.start[w.kind == 0], w.end[w.kind == 0])
        out.append(Overlap(w.rank, total(*comm), total(*intersection(comm, comp))))
    return out


def report_section(trace: Trace, top: int = 20) -> dict[str, Any] | None:
    """All of the above as plain JSON-able values, the ``gpu`` section of a report (the ``top``
    kernels by time); None when the trace has no GPU stream lanes."""
    if not (trace.tracks.kind == TrackKind.GPU_STREAM).any():
        return None
    return {
        "temporal_breakdown": [asdict(b) for b in temporal_breakdown(trace)],
        "idle_by_stream": [{**asdict(s), "stream_name": trace.track_name(s.stream), "total": s.total}
                           for s in idle_time_breakdown(trace)],
        "kernels": [asdict(k) for k in kernel_statistics(trace)[:top]],
        "launches": [{**_scalars(s), "stream_name": trace.track_name(s.stream)} for s in launch_statistics(trace)],
        "comm_compute_overlap": [{**asdict(o), "ratio": None if np.isnan(o.ratio) else o.ratio}
                                 for o in comm_compute_overlap(trace)],
    }


def _scalars(obj: Any) -> dict[str, Any]:
    """A dataclass as a dict of its scalar fields (arrays left out)."""
    return {f.name: v for f in fields(obj) if not isinstance(v := getattr(obj, f.name), np.ndarray)}
