"""The fleet's hosts combined from their extracts into one ranked report (the FleetReport).

Cross-host work only, on small data: the hosts' clocks narrowed by what their collectives and
sends prove (``tightened_maps``), every extract moved onto host0's clock, the distributed analysis
of the extracts together (``analyze_extracts``: collectives, skew and transfer, the straggler),
then per host its lateness, the time the others lost waiting for it, its clock and its
utilisation over the fleet's span. Hosts that failed are listed by name and the report is marked
partial; the rest is the same answer it would be without them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..align import ClockMap
from ..analysis.collectives import Collective
from ..analysis.distributed import bounds_of, collectives_of, distributed_findings, summary
from ..analysis.findings import ranked
from ..cluster.timebase import tightened_maps
from ..errors import CaptureError
from .compact import busy_of, columns, compact, moved, sends
from .extract import map_json, map_of

FLEET_BINS = 512  # utilisation samples per host over the fleet's span


def combine(extracts: Mapping[str, dict[str, Any]], failures: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The FleetReport of the hosts' extracts (by capture path) and the paths that failed (one
    line each). Raises ``CaptureError`` when two captures are the same host or come from clusters
    of different sizes; a host of the cluster with no extract is a failure ("no capture")."""
    failures = dict(failures or {})
    ordered = _in_host_order(extracts, failures)
    partial = bool(failures)
    maps = tightened_maps({e["host"]: map_of(e["host_map"]) for e in ordered},
                          [columns(e) for e in ordered], [sends(e) for e in ordered], partial)
    on_ref = [moved(e, maps[e["host"]].to_ref) for e in ordered]
    del ordered  # the moved copies (without the sends) are all the rest needs
    begin, end = bounds_of(on_ref)
    collectives = collectives_of([{**e, "participations": columns(e)} for e in on_ref], partial)
    findings = [f.to_json() for f in ranked(distributed_findings(collectives, begin, max(end - begin, 1)))]
    communication = summary(on_ref, collectives)
    late, lost = lateness(collectives)
    del collectives
    per_host = {h["host"]: h for h in communication["hosts"]}
    hosts = []
    for e in on_ref:
        h = e["host"]
        comm = per_host.get(h, {})
        segments = maps[h].segments
        hosts.append({"host": h, "path": e["path"],
                      "late_ns": round(late.get(h, 0.0)), "lost_ns": round(lost.get(h, 0.0)),
                      **{k: int(comm.get(k, 0)) for k in ("compute_ns", "communication_ns", "skew_ns", "transfer_ns")},
                      "devices": len(e["devices"]),
                      "clock": {"steps": len(map_of(e["host_map"]).segments) - 1,
                                "error_ns": round(max(s.error_ns for s in segments), 1),
                                "synced": bool(e["synced"]), "map": map_json(maps[h])},
                      "utilisation": utilisation(e["profile"], _narrowing(map_of(e["host_map"]), maps[h]),
                                                 begin, end)})
    index = {e["host"]: int(e["index"]) for e in on_ref}
    hosts.sort(key=lambda r: (-r["late_ns"], -r["lost_ns"], index[r["host"]]))
    for rank, row in enumerate(hosts, 1):
        row["rank"] = rank
    return {"hosts": hosts, "span_ns": [round(begin), round(end)], "findings": findings,
            "communication": communication, "failures": failures, "partial": partial}


def _in_host_order(extracts: Mapping[str, dict[str, Any]], failures: dict[str, str]) -> list[dict[str, Any]]:
    """The extracts by host index (compact), checked: each host once, all of one cluster; hosts of the
    cluster with no extract (and no failed capture that could be them) added to ``failures``."""
    by_index: dict[int, tuple[str, dict[str, Any]]] = {}
    size: tuple[int, str] | None = None
    for path, e in extracts.items():
        i, n = int(e["index"]), int(e["cluster_hosts"])
        if i in by_index:
            raise CaptureError(path, f"host{i} twice: {by_index[i][0]} is host{i} too")
        if size is None:
            size = (n, path)
        elif n != size[0]:
            raise CaptureError(path, f"from a cluster of {n} hosts, but {size[1]} is from one of {size[0]}")
        by_index[i] = (path, e)
    for i in range(size[0] if size is not None else 0):
        name = f"host{i}"
        if i not in by_index and not any(k == name or Path(k).name.startswith(f"{name}.") for k in failures):
            failures[name] = "no capture of this host among the inputs"
    return [compact(by_index[i][1]) for i in sorted(by_index)]


def lateness(collectives: Sequence[Collective]) -> tuple[dict[str, float], dict[str, float]]:
    """Per host, over the collectives its devices joined: ``late`` (how long after the median
    participant its last device arrived, summed) and ``lost`` (how long it alone held the
    collective back: its last arrival after every other host's, summed; the time each other
    participant waited for it)."""
    late: dict[str, float] = defaultdict(float)
    lost: dict[str, float] = defaultdict(float)
    for c in collectives:
        med = float(np.median(c.arrivals))
        last: dict[str, float] = {}
        for (h, _), a in zip(c.participants, c.arrivals.tolist(), strict=True):
            last[h] = max(last.get(h, -np.inf), a)
        for h, a in last.items():
            late[h] += max(a - med, 0.0)
        if len(last) > 1:
            (h1, a1), (_, a2) = sorted(last.items(), key=lambda x: -x[1])[:2]
            lost[h1] += a1 - a2
    return dict(late), dict(lost)


def _narrowing(fitted: ClockMap, narrowed: ClockMap) -> Any:
    """host0 time on a host's fitted map → on its narrowed one (what the collectives proved)."""
    return lambda r: narrowed.to_ref(fitted.from_ref(r))


def utilisation(profile: dict[str, Any], place: Any, begin: float, end: float, bins: int = FLEET_BINS) -> list[float]:
    """A host's busy fraction of its devices in each of ``bins`` equal bins of [begin, end) (host0
    ns), from its cumulative busy profile (sampled on host0's clock as its fitted map placed it,
    moved by ``place`` to where the narrowed map puts it)."""
    try:
        busy = busy_of(profile).astype(np.float64)
    except (ValueError, TypeError, AttributeError):  # a sidecar edited by hand: no strip, the rest stands
        return [0.0] * bins
    devices = int(profile["devices"])
    if devices == 0 or end <= begin or not len(busy):
        return [0.0] * bins
    t0, t1 = profile["times"]
    at = np.maximum.accumulate(place(np.linspace(float(t0), float(t1), len(busy))))  # xp must not fall
    edges = np.linspace(begin, end, bins + 1)
    cumulative = np.interp(edges, at, busy, left=0.0, right=float(busy[-1]))
    share = np.diff(cumulative) / (np.diff(edges) * devices)
    return np.round(np.clip(share, 0.0, 1.0), 4).tolist()
