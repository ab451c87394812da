"""Distributed-run basics over one capture or a cluster's (one per host): compute against
communication per device and per host, each participant's collective time split into skew and
transfer, and the straggler finding.

Every path goes through one extract → combine pipeline: each capture is reduced to its small
:func:`.hostextract.host_extract`, and :func:`analyze_extracts` combines the hosts' extracts. So
``analyze_cluster(traces)`` (traces in one process), the single-capture report and the fleet
analysis (extracts made where the captures lie, model/fleet) give the same answer by construction.
``summary`` is what ``accelview analyze --json`` reports under ``communication`` when a capture
has collectives.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..trace import Trace
from .collectives import Collective, communication_split, match_collectives
from .findings import Finding, ranked
from .hostextract import host_extract
from .stragglers import straggler_findings


def collectives_of(extracts: Sequence[dict[str, Any]], partial: bool = False) -> list[Collective]:
    """The collectives matched across the hosts' extracts (on the timebase they share; ``partial``:
    some hosts are missing, their collectives matched among those present)."""
    return match_collectives([(e["host"], e["participations"]) for e in extracts], partial)


def summary(extracts: Sequence[dict[str, Any]], collectives: Sequence[Collective]) -> dict[str, Any]:
    """Compute vs communication per device and host, with the collectives' skew/transfer split."""
    split = communication_split(collectives)
    devices = []
    for e in extracts:
        host = e["host"]
        for busy in e["devices"]:
            d = int(busy["device"])
            row = split.get((host, d), {"skew_ns": 0.0, "transfer_ns": 0.0, "collectives": 0})
            devices.append({"host": host, "device": d, "compute_ns": round(busy["compute_ns"]),
                            "communication_ns": round(busy["communication_ns"]),
                            "skew_ns": round(row["skew_ns"]), "transfer_ns": round(row["transfer_ns"]),
                            "collectives": int(row["collectives"])})
    hosts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in devices:
        for k in ("compute_ns", "communication_ns", "skew_ns", "transfer_ns"):
            hosts[row["host"]][k] += row[k]
    return {"collectives": len(collectives), "devices": devices,
            "hosts": [{"host": h, **v} for h, v in hosts.items()]}


def distributed_findings(collectives: Sequence[Collective], begin_ns: float, span_ns: float) -> list[Finding]:
    """The findings of the distributed analysis: the stragglers, latest first."""
    return straggler_findings(collectives, begin_ns, span_ns)


def bounds_of(extracts: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """(first, last) time over the extracts."""
    if not extracts:
        return 0.0, 0.0
    return min(e["bounds"][0] for e in extracts), max(e["bounds"][1] for e in extracts)


def analyze_extracts(extracts: Sequence[dict[str, Any]], partial: bool = False) -> dict[str, Any]:
    """The report of several hosts' extracts read together (on one timebase), as plain JSON data:
    ``sources``, ``hosts``, ``findings``, ``communication`` (``partial``: some hosts missing)."""
    collectives = collectives_of(extracts, partial)
    begin, end = bounds_of(extracts)
    findings = ranked(distributed_findings(collectives, begin, max(end - begin, 1)))
    return {"sources": [e["source"] for e in extracts], "hosts": [e["host"] for e in extracts],
            "findings": [f.to_json() for f in findings], "communication": summary(extracts, collectives)}


def analyze_cluster(traces: Sequence[Trace]) -> dict[str, Any]:
    """The report of several host captures read together (on the timebase they share)."""
    return analyze_extracts([host_extract(t) for t in traces])
