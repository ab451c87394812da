"""A capture's summary, as ``accelview info`` prints it: what is in it and over how long."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..importstats import import_problems
from ..schema import TrackKind
from ..trace import Trace
from .values import MISSING, format_count, format_duration


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
        "import_problems": import_problems(trace.metadata),
        "metadata": trace.metadata,
    }


def format_summary(s: dict[str, Any]) -> str:
    """The summary as text for the terminal."""
    lines = [f"{s['source']}"]
    if not s["complete"]:
        lines.append(f"  INCOMPLETE: {s['incomplete_reason'] or 'the capture did not finish'}")
    capture = s["metadata"].get("capture") if isinstance(s.get("metadata"), dict) else None
    if isinstance(capture, dict) and capture.get("damaged_frames"):  # skipped converting its records
        lines.append(f"  DAMAGED:    {format_count(capture['damaged_frames'])} frame(s) of records skipped "
                     f"({format_count(capture.get('damaged_bytes', 0))} bytes of the stream)")
    counts = [("tracks", "tracks"), ("slices", "slices"), ("flows", "flows"), ("counter samples", "counter_samples"),
              ("instants", "instants")]
    if s.get("op_counters"):
        counts.append(("ops with counters", "op_counters"))
    lines += [
        f"  duration   {format_duration(s['duration_ns'])}",
        f"  hosts      {', '.join(s['hosts']) or MISSING}",
        f"  devices    {', '.join(map(str, s['devices'])) or MISSING}",
        "  " + "  ".join(f"{label} {format_count(s[key])}" for label, key in counts),
        "",
        f"  {'track kind':<16}{'tracks':>8}{'slices':>14}{'flows':>12}{'counters':>14}",
    ]
    for kind, row in s["per_track_kind"].items():
        lines.append(f"  {kind:<16}" + "".join(f"{format_count(row[k]):>{w}}" for k, w in (
            ("tracks", 8), ("slices", 14), ("flows", 12), ("counter_samples", 14))))
    if s.get("import_problems"):
        lines += ["", "  import stats (input the reader skipped or clamped; the rest loaded)"]
        lines += [f"  {k.replace('_', ' '):<40}{v:>14,}" for k, v in s["import_problems"].items()]
    return "\n".join(lines)
