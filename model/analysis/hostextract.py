"""What the distributed analysis needs of one host's capture, as small plain data.

A cluster's analysis reads every host's collectives, sends and receives, and busy time together;
with hundreds of hosts the captures cannot all be in one process. ``host_extract(trace)`` keeps
of one capture only that: its collective participations (each with its device's busy time per
category before it arrived), its point-to-point transfers, each device's compute and
communication time and the capture's time bounds, as JSON-able columns (times in ns on the
trace's own clock). :mod:`.distributed` combines extracts; the fleet analysis makes them where
the captures lie and moves their times onto host0's clock before combining.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schema import TrackKind
from ..trace import Trace
from .collectives import host_name, launch_ns, participations
from .stragglers import participation_busy

Sends = dict[tuple[str, str, str, int], list[tuple[float, float]]]


def device_busy(trace: Trace) -> dict[int, dict[str, float]]:
    """Per device: time its execution units spent in compute ops and in collectives."""
    tracks, sl = trace.tracks, trace.slices
    on_unit = tracks.kind[sl.track] == int(TrackKind.EXEC_UNIT)
    coll = tracks.name[sl.track] == trace.strings.lookup("collective")
    out: dict[int, dict[str, float]] = {}
    dev = tracks.device[sl.track]
    for d in np.unique(dev[on_unit]).tolist():
        mine = on_unit & (dev == d)
        out[int(d)] = {"compute_ns": float(sl.dur_ns[mine & ~coll].sum()),
                       "communication_ns": float(sl.dur_ns[mine & coll].sum())}
    return out


def point_to_point(trace: Trace, host: str) -> Sends:
    """A capture's sends and receives that name their peer, by (sender, receiver, name, bytes):
    (arrival, end) of each in order (arrival: the slice's start plus the kernel's launch time)."""
    launch = launch_ns(trace)
    tracks, sl = trace.tracks, trace.slices
    lanes = np.flatnonzero((tracks.kind == int(TrackKind.EXEC_UNIT))
                           & (tracks.name == trace.strings.lookup("collective")))
    rows = np.flatnonzero(np.isin(sl.track, lanes))
    rows = rows[np.argsort(sl.start_ns[rows], kind="stable")]
    args: dict[int, dict[str, Any]] = {}
    out: Sends = {}
    for i in rows.tolist():
        a = int(sl.args[i])
        got = args.get(a)
        if got is None:
            got = args[a] = trace.args(a)
        op, peer = got.get("op"), got.get("peer")
        if op not in ("send", "recv") or not isinstance(peer, str) or not peer:
            continue
        me = f"{host}/device{int(tracks.device[sl.track[i]])}"
        key = (me, peer) if op == "send" else (peer, me)
        start = float(sl.start_ns[i])
        out.setdefault((*key, trace.strings[int(sl.name[i])], int(got.get("nbytes", 0))), []).append(
            (start + launch, start + float(sl.dur_ns[i])))
    return out


def host_extract(trace: Trace, host: str | None = None) -> dict[str, Any]:
    """One host capture's extract (JSON-able; times on ``trace``'s clock): ``host``, ``source``,
    ``bounds`` [first, last], ``devices`` (per device: compute_ns, communication_ns),
    ``participations`` (columns, with ``busy`` per participation) and ``sends`` (rows
    [sender, receiver, name, nbytes, [[arrival, end], ...]])."""
    host = host or host_name(trace)
    parts = participations(trace)
    parts["busy"] = participation_busy(trace, parts)
    return {"host": host, "source": trace.source, "bounds": [float(x) for x in trace.time_bounds()],
            "devices": [{"device": d, **b} for d, b in device_busy(trace).items()],
            "participations": parts,
            "sends": [[*key, [list(r) for r in rows]] for key, rows in point_to_point(trace, host).items()]}
