"""Run every analysis pass over a trace and collect one report (what ``accelview analyze``
prints and the app's Findings panel shows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from accelview.model.schema import TrackKind
from accelview.model.trace import Trace

from . import intervals as iv
from .critical_path import critical_path
from .device_passes import fusion_candidates, host_sync, launch_bound, low_hbm_efficiency
from .findings import Finding, ranked
from .gaps import Gaps, device_gaps
from .ops import OpLabels, classify_ops
from .roles import Roles
from .stats import OpStat, op_stats
from .transfer_passes import transfer_findings

LABELS = ("compute", "memory", "latency", "unknown")
CAUSES = ("host", "pcie", "sync", "communication")


@dataclass
class Phase:
    """A named interval (a user annotation, or the whole run) and its time per class."""

    name: str
    start_ns: int
    end_ns: int
    breakdown_ns: dict[str, int] = field(default_factory=dict)

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

    def to_json(self) -> dict[str, Any]:
        """The documented, stable JSON object of ``accelview analyze --json``."""
        return {
            "source": self.trace.source,
            "ops": [{"slice": int(s), "label": str(lab), "confidence": round(float(c), 3)}
                    for s, lab, c in zip(self.ops.slice, self.ops.label, self.ops.confidence, strict=True)],
            "gaps": [{"device": int(d), "start_ns": int(a), "end_ns": int(b), "cause": str(c)}
                     for d, a, b, c in zip(self.gaps.device, self.gaps.start_ns, self.gaps.end_ns, self.gaps.cause,
                                           strict=True)],
            "phases": [{"name": p.name, "start_ns": p.start_ns, "end_ns": p.end_ns, "verdict": p.verdict,
                        "breakdown_ns": p.breakdown_ns} for p in self.phases],
            "findings": [f.to_json() for f in self.findings],
            "op_stats": [vars(s) for s in self.stats[:50]],
            "critical_path_ns": self.critical_path_by_resource,
        }


def _phase_breakdown(trace: Trace, labels: OpLabels, gaps: Gaps, t0: int, t1: int) -> dict[str, int]:
    """Device time in [t0, t1) per op label and per idle cause. Ops on a device's several units
    overlap, so each device's busy time (the union) is shared among labels in proportion to
    their op time; idle gaps are device-wide already."""
    out: dict[str, int] = {}
    ids = labels.slice
    s = trace.slices.start_ns[ids]
    e = s + trace.slices.dur_ns[ids]
    d = np.clip(np.minimum(e, t1) - np.maximum(s, t0), 0, None)
    devices = trace.tracks.device[trace.slices.track[ids]]
    for dev in np.unique(devices):
        m = (devices == dev) & (d > 0)
        if not m.any():
            continue
        busy = iv.total(*iv.union(np.maximum(s[m], t0), np.minimum(e[m], t1)))
        scale = busy / d[m].sum()
        for lab in LABELS:
            out[lab] = out.get(lab, 0) + round(d[m & (labels.label == lab)].sum() * scale)
    g = np.clip(np.minimum(gaps.end_ns, t1) - np.maximum(gaps.start_ns, t0), 0, None)
    for c in CAUSES:
        out[c] = out.get(c, 0) + int(g[gaps.cause == c].sum())
    return {k: v for k, v in out.items() if v > 0}


def phases(trace: Trace, labels: OpLabels, gaps: Gaps) -> list[Phase]:
    """The run, and each top-level user annotation on a host thread (prefill, decode, a step)."""
    t0, t1 = trace.time_bounds()
    out = [Phase("whole run", t0, t1, _phase_breakdown(trace, labels, gaps, t0, t1))]
    threads = np.flatnonzero(trace.tracks.kind == TrackKind.HOST_THREAD)
    ids = np.flatnonzero(np.isin(trace.slices.track, threads) & (trace.slices.depth == 0))
    for i in ids[:500]:
        a = int(trace.slices.start_ns[i])
        b = a + int(trace.slices.dur_ns[i])
        out.append(Phase(trace.strings[trace.slices.name[i]], a, b, _phase_breakdown(trace, labels, gaps, a, b)))
    return out


def analyze(trace: Trace) -> Report:
    """Run all passes."""
    roles = Roles(trace)
    labels = classify_ops(roles)
    gaps = device_gaps(roles)
    t0, t1 = trace.time_bounds()
    span = max(t1 - t0, 1)
    found = transfer_findings(roles, span)
    for f in (launch_bound(roles, gaps, span), host_sync(roles, gaps, span),
              low_hbm_efficiency(roles, labels, span), fusion_candidates(roles, labels, span)):
        if f is not None:
            found.append(f)
    cp = critical_path(trace, roles=roles)
    return Report(trace, labels, gaps, phases(trace, labels, gaps), ranked(found), op_stats(trace, roles.device_ops),
                  cp.by_resource_ns)
