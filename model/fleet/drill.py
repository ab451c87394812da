"""Drill-down from a FleetReport into one host: its whole capture on the fleet's timebase."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..cluster.inputs import host_index, is_cluster_capture
from ..cluster.retime import retimed
from ..cluster.timebase import host_alignment, launch_corrected
from ..errors import AccelviewError, CaptureError
from ..trace import Trace
from .extract import map_of


def host_timeline(report: dict[str, Any], host: str) -> Trace:
    """Host ``host``'s capture (from the report's ``path``) with every event on host0's clock:
    its devices placed on its host clock as the fleet analysis placed them, its host clock through
    the map in the report (``hosts[i].clock.map``). Raises ``AccelviewError`` for a host the report
    does not hold and ``CaptureError`` for a capture that cannot be read (or changed host)."""
    from ..loader import load_trace

    row = next((h for h in report.get("hosts", []) if h.get("host") == host), None)
    if row is None:
        raise AccelviewError(f"{host}: not a host of this fleet report")
    trace = load_trace(row["path"])
    if not is_cluster_capture(trace) or f"host{host_index(trace)}" != host:
        raise CaptureError(row["path"], f"no longer the capture of {host}")
    align = launch_corrected(host_alignment(trace, host, host_index(trace)), trace)
    align = replace(align, host_map=map_of(row["clock"]["map"]))
    return retimed(trace, align.to_reference)
