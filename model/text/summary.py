"""A capture's summary, as ``accelview info`` prints it: what is in it and over how long."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schema import TrackKind
from ..trace import Trace


def summarize(trace: Trace) -> dict[str, Any]:
    """Duration, hosts, devices, and table sizes per track kind, as plain JSON-able values."""
    t0, t1 = trace.time_bounds()
    tracks = trace.tracks
    kinds = tracks.kind
    slices_per_track = np.bincount(trace.slices.track, minlength=len(tracks)) if len(tracks) else np.zeros(0, int)
    counters_per_track = np.bincount(trace.counters.track, minlength=len(tracks)) if len(tracks) else np.zeros(0, int)
    flows_from = (np.bincount(trace.slices.track[trace.flows.src], minlength=len(tracks))
                  if len(trace.flows) and len(tracks) else np.zeros(len(tracks), int))
    per_kind = {}
    for k in TrackKind:
        mask = kinds == k
        if mask.any():
            per_kind[k.label] = {
                "tracks": int(mask.sum()),
                "slices": int(slices_per_track[mask].sum()),
                "flows": int(flows_from[mask].sum()),
                "counter_samples": int(counters_per_track[mask].sum()),
            }
    hosts = sorted({trace.strings[h] for h in np.unique(tracks.host)} - {""})
    devices = sorted(int(d) for d in np.unique(tracks.device) if d >= 0)
    return {
        "source": trace.source,
        "complete": trace.complete,
        "incomplete_reason": trace.incomplete_reason,
        "start_ns": t0,
        "end_ns": t1,
        "duration_ns": t1 - t0,
        "hosts": hosts,
        "devices": devices,
        "tracks": len(tracks),
        "slices": len(trace.slices),
        "flows": len(trace.flows),
        "counter_samples": len(trace.counters),
        "instants": len(trace.instants),
        "op_counters": len(trace.tables["op_counters"]),
        "per_track_kind": per_kind,
        "metadata": trace.metadata,
    }


def format_duration(ns: float) -> str:
    """A duration with an adaptive unit: 12 ns, 3.40 µs, 15.2 ms, 2.010 s."""
    a = abs(ns)
    if a < 1e3:
        return f"{ns:.0f} ns"
    if a < 1e6:
        return f"{ns / 1e3:.2f} µs"
    if a < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.3f} s"


def format_summary(s: dict[str, Any]) -> str:
    """The summary as text for the terminal."""
    lines = [f"{s['source']}"]
    if not s["complete"]:
        lines.append(f"  INCOMPLETE: {s['incomplete_reason'] or 'the capture did not finish'}")
    lines += [
        f"  duration   {format_duration(s['duration_ns'])}",
        f"  hosts      {', '.join(s['hosts']) or '-'}",
        f"  devices    {', '.join(map(str, s['devices'])) or '-'}",
        f"  tracks {s['tracks']:,}  slices {s['slices']:,}  flows {s['flows']:,}  "
        f"counter samples {s['counter_samples']:,}  instants {s['instants']:,}"
        + (f"  ops with counters {s['op_counters']:,}" if s.get("op_counters") else ""),
        "",
        f"  {'track kind':<16}{'tracks':>8}{'slices':>14}{'flows':>12}{'counters':>14}",
    ]
    for kind, row in s["per_track_kind"].items():
        lines.append(f"  {kind:<16}{row['tracks']:>8,}{row['slices']:>14,}{row['flows']:>12,}"
                     f"{row['counter_samples']:>14,}")
    return "\n".join(lines)
