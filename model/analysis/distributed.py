"""Distributed-run basics over one capture or a cluster's (one per host): compute against
communication per device and per host, each participant's collective time split into skew and
transfer, and the straggler finding.

``summary`` is what ``accelview analyze --json`` reports under ``communication`` when a capture
has collectives; :func:`analyze_cluster` is the report of several host captures read together
(on the timebase they share: each host's own raw time until they are aligned).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..schema import TrackKind
from ..trace import Trace
from .collectives import Collective, communication_split, find_collectives, host_name
from .findings import Finding, ranked
from .stragglers import straggler_finding


def _busy(trace: Trace) -> dict[tuple[str, int], dict[str, float]]:
    """Per (host, device): time its execution units spent in compute ops and in collectives."""
    host = host_name(trace)
    tracks, sl = trace.tracks, trace.slices
    on_unit = tracks.kind[sl.track] == int(TrackKind.EXEC_UNIT)
    coll = tracks.name[sl.track] == trace.strings.lookup("collective")
    out: dict[tuple[str, int], dict[str, float]] = {}
    dev = tracks.device[sl.track]
    for d in np.unique(dev[on_unit]).tolist():
        mine = on_unit & (dev == d)
        out[(host, int(d))] = {"compute_ns": float(sl.dur_ns[mine & ~coll].sum()),
                               "communication_ns": float(sl.dur_ns[mine & coll].sum())}
    return out


def summary(traces: Sequence[Trace], collectives: Sequence[Collective]) -> dict[str, Any]:
    """Compute vs communication per device and host, with the collectives' skew/transfer split."""
    split = communication_split(collectives)
    devices = []
    for trace in traces:
        for (host, d), busy in _busy(trace).items():
            row = split.get((host, d), {"skew_ns": 0.0, "transfer_ns": 0.0, "collectives": 0})
            devices.append({"host": host, "device": d, **{k: round(v) for k, v in busy.items()},
                            "skew_ns": round(row["skew_ns"]), "transfer_ns": round(row["transfer_ns"]),
                            "collectives": int(row["collectives"])})
    hosts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in devices:
        for k in ("compute_ns", "communication_ns", "skew_ns", "transfer_ns"):
            hosts[row["host"]][k] += row[k]
    return {"collectives": len(collectives), "devices": devices,
            "hosts": [{"host": h, **v} for h, v in hosts.items()]}


def distributed_findings(traces: Sequence[Trace], collectives: Sequence[Collective], span_ns: float) -> list[Finding]:
    """The findings of the distributed analysis (for now: the straggler)."""
    f = straggler_finding(traces, collectives, span_ns)
    return [f] if f is not None else []


def analyze_cluster(traces: Sequence[Trace]) -> dict[str, Any]:
    """The report of several host captures read together, as plain JSON data."""
    collectives = find_collectives(traces)
    bounds = [t.time_bounds() for t in traces]
    span = max(max(b for _, b in bounds) - min(a for a, _ in bounds), 1)
    findings = ranked(distributed_findings(traces, collectives, span))
    return {"sources": [t.source for t in traces], "hosts": [host_name(t) for t in traces],
            "findings": [f.to_json() for f in findings], "communication": summary(traces, collectives)}
