"""Run every analysis pass over a trace and collect one report (what ``accelview analyze``
prints and the app's Findings panel shows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from accelview.model.schema import TrackKind
from accelview.model.trace import Trace

from ..align.ranks import nccl_kernels
from . import helper
from . import intervals as iv
from .collectives import participations
from .critical_path import CriticalPath, critical_path, path_columns, path_of
from .device_passes import fusion_candidates, host_sync, launch_bound, low_hbm_efficiency
from .distributed import collectives_of, distributed_findings, summary
from .findings import Finding, ranked
from .gaps import Gaps, device_gaps
from .gpu import ranks, report_section
from .hostextract import host_extract
from .metrics.evaluate import sampled_metrics, window_metric
from .metrics.expr import ExprError
from .metrics.taxonomy import MetricRegistry
from .op_classes import CLASSES
from .ops import OpLabels, classify_ops
from .rank_collectives import rank_collectives, rank_summary, straggler
from .roles import Roles
from .stats import OpStat, compute_transfer_overlap, lane_utilization, op_stats
from .trace_passes import gpu_idle, trace_findings
from .transfer_passes import transfer_findings

LABELS = CLASSES  # op labels; "transfer" also marks copies with no op
CAUSES = ("host", "pcie", "sync", "communication", "unexplained")
MAX_PHASES = 500
PHASE_METRICS = ("hbm_utilization", "pcie_h2d_utilization")
PHASE_CATEGORIES = ("user", "user_annotation")  # ranges a script marked (sim.annotate, NVTX, record_function)


@dataclass
class Phase:
    """A named interval (a user annotation, or the whole run) and its time per class."""

    name: str
    start_ns: int
    end_ns: int
    breakdown_ns: dict[str, int] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)  # e.g. hbm_utilization (%) over the phase

    @property
    def verdict(self) -> str:
        """The class that took the most time."""
        return max(self.breakdown_ns, key=self.breakdown_ns.__getitem__) if self.breakdown_ns else "idle"


@dataclass
class Report:
    """Everything the passes found."""

    trace: Trace
    ops: OpLabels
    gaps: Gaps
    phases: list[Phase]
    findings: list[Finding]
    stats: list[OpStat]
    critical_path_by_resource: dict[str, int]
    gpu: dict[str, Any] | None = None  # GPU-trace analyses (imported traces with GPU streams)
    lane_busy: dict[int, float] = field(default_factory=dict)  # device lane → busy share of the run
    transfer_overlap: dict[str, float] = field(default_factory=dict)  # copies vs device work
    critical_path: CriticalPath | None = None  # the path itself (``accelview diff`` splits it by iteration)
    communication: dict[str, Any] | None = None  # compute vs communication, with collectives (distributed.py)

    def to_json(self) -> dict[str, Any]:
        """The documented, stable JSON object of ``accelview analyze --json``."""
        return {
            "source": self.trace.source,
            "ops": [{"slice": s, "label": lab, "confidence": round(c, 3), "compute_sol": round(cs, 3),
                     "memory_sol": round(ms, 3), "evidence": ev}
                    for s, lab, c, cs, ms, ev in zip(self.ops.slice.tolist(), self.ops.label.tolist(),
                                                     self.ops.confidence.tolist(), self.ops.compute_sol.tolist(),
                                                     self.ops.memory_sol.tolist(), self.ops.evidence.tolist(),
                                                     strict=True)],
            "gaps": [{"device": int(d), "start_ns": int(a), "end_ns": int(b), "cause": str(c)}
                     for d, a, b, c in zip(self.gaps.device, self.gaps.start_ns, self.gaps.end_ns, self.gaps.cause,
                                           strict=True)],
            "phases": [{"name": p.name, "start_ns": p.start_ns, "end_ns": p.end_ns, "verdict": p.verdict,
                        "metrics": {k: round(v, 3) for k, v in p.metrics.items()},
                        "breakdown_ns": p.breakdown_ns} for p in self.phases],
            "findings": [f.to_json() for f in self.findings],
            "op_stats": [vars(s) for s in self.stats[:50]],
            "critical_path_ns": self.critical_path_by_resource,
            "lanes": [{"track": t, "name": self.trace.track_name(t), "busy": round(b, 4)}
                      for t, b in self.lane_busy.items()],
            "transfer_overlap": self.transfer_overlap,
            **({"gpu": self.gpu} if self.gpu is not None else {}),
            **({"communication": self.communication} if self.communication is not None else {}),
        }


def _codes(values: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """Index of each value in ``names`` (values not in it get the last index)."""
    out = np.full(len(values), len(names) - 1, np.int64)
    for i, name in enumerate(names):
        out[values == name] = i
    return out


class _Breakdown:
    """Device time per class over any window, from ops sorted once by start.

    Ops on a device's several units overlap, so each device's busy time (their union) is shared
    among op labels in proportion to their op time; idle gaps are device-wide already."""

    def __init__(self, trace: Trace, labels: OpLabels, gaps: Gaps, copies: np.ndarray,
                 order: np.ndarray | None = None) -> None:
        cs = trace.slices.start_ns[copies]
        self.xs, self.xe = iv.union(cs, cs + trace.slices.dur_ns[copies])
        ids = labels.slice
        s = trace.slices.start_ns[ids]
        o = np.argsort(s, kind="stable") if order is None else order
        self.s = s[o]
        self.e = self.s + trace.slices.dur_ns[ids][o]
        dev = trace.tracks.device[trace.slices.track[ids]][o]
        low = int(dev.min()) if len(dev) else 0  # devices are a few small ids: counted, not sorted
        present = np.bincount(dev - low) > 0 if len(dev) else np.zeros(0, bool)
        self.devices = (np.flatnonzero(present) + low).astype(dev.dtype)
        self.dev = (np.cumsum(present) - 1)[dev - low]
        self.code = labels.code[o].astype(np.int64)  # LABELS is CLASSES: the codes index it
        lane = trace.tracks.name[trace.slices.track[ids]][o]
        self.code[lane == trace.strings.lookup("collective")] = LABELS.index("communication")
        self.max_dur = int((self.e - self.s).max()) if len(o) else 0
        g = np.argsort(gaps.start_ns, kind="stable")
        self.g0, self.g1 = gaps.start_ns[g], gaps.end_ns[g]
        self.gcode = _codes(gaps.cause[g], CAUSES)
        self.g_max = int((self.g1 - self.g0).max()) if len(g) else 0

    def __call__(self, t0: int, t1: int) -> dict[str, int]:
        out: dict[str, int] = {}
        lo, hi = np.searchsorted(self.s, t0 - self.max_dur, "left"), np.searchsorted(self.s, t1, "left")
        s, e = np.maximum(self.s[lo:hi], t0), np.minimum(self.e[lo:hi], t1)
        keep = e > s
        if keep.any():
            s, e, dev, code = s[keep], e[keep], self.dev[lo:hi][keep], self.code[lo:hi][keep]
            k = t1 - t0 + 1  # shift each device onto its own stretch of the axis: one union for all
            n_dev = len(self.devices)
            # by device, each still by start: a radix sort of small codes, not a sort of the starts
            o = np.argsort(dev.astype(np.int16) if n_dev < 1 << 15 else dev, kind="stable")
            us, ue = iv.union((s - t0 + dev * k)[o], (e - t0 + dev * k)[o], presorted=True)
            busy = np.bincount(us // k, weights=ue - us, minlength=n_dev)
            per = np.bincount(dev * len(LABELS) + code, weights=e - s, minlength=n_dev * len(LABELS))
            per = per.reshape(n_dev, len(LABELS))
            scale = np.divide(busy, per.sum(axis=1), out=np.zeros(n_dev), where=per.sum(axis=1) > 0)
            for i, lab in enumerate(LABELS):
                out[lab] = round(float((per[:, i] * scale).sum()))
        lo, hi = np.searchsorted(self.g0, t0 - self.g_max, "left"), np.searchsorted(self.g0, t1, "left")
        g = np.clip(np.minimum(self.g1[lo:hi], t1) - np.maximum(self.g0[lo:hi], t0), 0, None)
        if len(g):
            sums = np.bincount(self.gcode[lo:hi], weights=g, minlength=len(CAUSES))
            for i, c in enumerate(CAUSES):
                out[c] = out.get(c, 0) + int(sums[i])
        # Copies while the device ran no op and was not in a classified gap (an upload before the
        # first op, say) count as transfer time.
        xfer = iv.clip(self.xs, self.xe, t0, t1)
        if len(xfer[0]):
            busy = iv.union(np.concatenate((s if keep.any() else np.empty(0, np.int64),
                                            np.maximum(self.g0[lo:hi], t0))),
                            np.concatenate((e if keep.any() else np.empty(0, np.int64),
                                            np.minimum(self.g1[lo:hi], t1))))
            out["transfer"] = out.get("transfer", 0) + iv.total(*xfer) - iv.total(*iv.intersection(xfer, busy))
        return {k: v for k, v in out.items() if v > 0}


def _phase_metrics(trace: Trace, registry: MetricRegistry, names: list[str], t0: int, t1: int) -> dict[str, float]:
    out = {}
    for m in names:
        try:
            out[m] = window_metric(trace, registry, m, t0, t1)
        except ExprError:  # a counter or spec figure this capture lacks
            continue
    return out


def phase_intervals(trace: Trace, limit: int = MAX_PHASES) -> list[tuple[str, int, int]]:
    """(name, start, end) of each top-level user annotation on a host thread (prefill, decode, a
    step): a user range, or a slice with children; at most ``limit``, in table order."""
    out: list[tuple[str, int, int]] = []
    threads = np.flatnonzero(trace.tracks.kind == TrackKind.HOST_THREAD)
    start, dur = trace.slices.start_ns, trace.slices.dur_ns
    user = [i for i in range(len(trace.strings)) if trace.strings[i] in PHASE_CATEGORIES]
    for track in threads:
        runs = {d: (b, e) for d, b, e in trace.runs.of_track(int(track))}
        if 0 not in runs:
            continue
        b0, e0 = runs[0]
        is_phase = np.isin(trace.slices.category[b0:e0], user)
        if 1 in runs:
            b1, e1 = runs[1]
            first_child = b1 + np.searchsorted(start[b1:e1], start[b0:e0], "left")
            is_phase |= (first_child < e1) & (start[np.minimum(first_child, e1 - 1)] < start[b0:e0] + dur[b0:e0])
        for i in (b0 + np.flatnonzero(is_phase))[: limit - len(out)].tolist():
            out.append((trace.strings[trace.slices.name[i]], int(start[i]), int(start[i] + dur[i])))
    return out


def phases(trace: Trace, labels: OpLabels, gaps: Gaps, roles: Roles | None = None) -> list[Phase]:
    """The run, and each top-level user annotation on a host thread (prefill, decode, a step)."""
    roles = roles or Roles(trace)
    breakdown = _Breakdown(trace, labels, gaps, roles.copies, roles.ops_order)
    registry = MetricRegistry.load()
    wanted = [m for m in PHASE_METRICS if m in sampled_metrics(trace, registry)]
    t0, t1 = trace.time_bounds()
    out = [Phase("whole run", t0, t1, breakdown(t0, t1), _phase_metrics(trace, registry, wanted, t0, t1))]
    for name, a, z in phase_intervals(trace, MAX_PHASES):
        out.append(Phase(name, a, z, breakdown(a, z), _phase_metrics(trace, registry, wanted, a, z)))
    return out


def _path_helper(trace: Trace, roles: Roles) -> helper.Helper | None:
    """The critical path's walk started in a helper on the other core (the longest pass, and
    independent of the others), or None where there is none to use (:func:`.helper.start`)."""
    if len(trace.slices) < helper.MIN_SLICES:
        return None
    _ = roles.blocking_calls, roles.end  # both processes use these: found once, before the fork
    return helper.start(lambda: path_columns(critical_path(trace, roles=roles)), len(trace.slices))


def analyze(trace: Trace, roles: Roles | None = None, tables: bool = True) -> Report:
    """Run all passes (``roles``: the trace's roles when the caller keeps them for more work;
    ``tables=False`` leaves out the op statistics, lane busy shares and transfer overlap, which
    ``accelview diff`` does not use)."""
    roles = roles or Roles(trace)
    path = _path_helper(trace, roles)
    try:
        labels = classify_ops(roles)
        gaps = device_gaps(roles)
        t0, t1 = trace.time_bounds()
        span = max(t1 - t0, 1)
        found = transfer_findings(roles, span)
        for f in (launch_bound(roles, gaps, span), host_sync(roles, gaps, span),
                  low_hbm_efficiency(roles, labels, span), fusion_candidates(roles, labels, span)):
            if f is not None:
                found.append(f)
        found += trace_findings(roles, labels, gaps, span)
        extract = [host_extract(trace)] if participations(trace)["lane"] else []  # no collectives: nothing to extract
        collectives = collectives_of(extract)
        found += distributed_findings(collectives, t0, span)
        communication = summary(extract, collectives) if collectives else None
        if not collectives and len(ranks(trace)) > 1:  # a multi-rank GPU trace: its NCCL kernels across ranks
            kernels = nccl_kernels(trace)
            alignment, across = rank_collectives(trace, kernels)
            communication = rank_summary(trace, alignment, across, kernels)
            late = straggler(trace, alignment, across, span)
            found += [late] if late is not None else []
        idle = gpu_idle(roles, gaps, ranked(found), span)
        if idle is not None:
            found.append(idle)
    except BaseException:  # a capture the passes reject: the helper's walk is not wanted
        if path is not None:
            path.cancel()
        raise
    done = path.result() if path is not None else None
    cp = path_of(*done) if done is not None else critical_path(trace, roles=roles)
    if not tables:
        return Report(trace, labels, gaps, phases(trace, labels, gaps, roles), ranked(found), [],
                      cp.by_resource_ns, report_section(trace), critical_path=cp,
                      communication=communication)
    return Report(trace, labels, gaps, phases(trace, labels, gaps, roles), ranked(found),
                  op_stats(trace, roles.device_ops), cp.by_resource_ns, report_section(trace),
                  lane_utilization(trace, t0, t1), compute_transfer_overlap(trace, t0, t1, roles.device_busy), cp,
                  communication)
