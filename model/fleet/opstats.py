"""One capture's op statistics, small enough to cache beside it: the summary fleet queries read.

A row per (host, device, lane, op name) of device work (ops, and copies on lanes that are not op
lanes, as the Statistics panel counts them): count, total, mean, median, p95 and longest
duration in ns, and the bottleneck class that most of the row's time has. The rows are stored as
columns (one JSON list per field), so a 256-host fleet's summaries parse in milliseconds.

``capture_ops(path)`` is the per-capture task of a fleet query: the cached summary, computed from
the capture only when the cache beside it is missing or stale.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from accelview.model.schema import TrackKind
from accelview.model.trace import Trace, track_roots

from .cache import cached
from .query import FIELDS

SECTION = "ops"  # a change to the summary's fields must bump cache.FORMAT_VERSION, so old ones are recomputed
COLUMNS = FIELDS  # one column per field of the query language, in its order


def _track_hosts(trace: Trace) -> list[str]:
    """The host of each track: its top-level HOST track's name (a merged cluster), else the host
    the track names, else the host the capture was taken on; "" when nothing says."""
    tracks = trace.tracks
    cap = trace.metadata.get("capture")
    recorded = cap.get("host") if isinstance(cap, dict) and isinstance(cap.get("host"), str) else ""
    roots = track_roots(tracks.parent)
    out = []
    for t in range(len(tracks)):
        root = int(roots[t])
        if tracks.kind[root] == TrackKind.HOST:
            out.append(trace.track_name(root))
        elif tracks.host[t] >= 0 and trace.strings[int(tracks.host[t])]:
            out.append(trace.strings[int(tracks.host[t])])
        else:
            out.append(recorded)
    return out


def op_stats(trace: Trace) -> dict[str, Any]:
    """The op statistics of ``trace`` as ``{"rows": n, "columns": {field: [value per row]}}`` with
    the fields of ``COLUMNS``; ``device`` is None on a lane of no device."""
    # Here, not at the top: a query answered from the cache never loads the analysis (~0.1 s).
    from accelview.model.analysis.stats import group_percentiles
    from accelview.model.analysis.stats_table import CLASSES, StatsSource

    src = StatsSource(trace)
    ids = src.ids
    names = trace.slices.name[ids].astype(np.int64)
    track = trace.slices.track[ids].astype(np.int64)
    key = track * (int(names.max()) + 1 if len(names) else 1) + names
    groups, dense, count, total, (p50, p95) = group_percentiles(key, src.dur, (0.5, 0.95))
    n = len(groups)
    longest = np.zeros(n, np.int64)
    np.maximum.at(longest, dense, src.dur.astype(np.int64))
    by_class = np.bincount(dense * len(CLASSES) + src.label, weights=src.dur,
                           minlength=n * len(CLASSES)).reshape(n, len(CLASSES))
    first = np.full(n, -1, np.int64)  # a slice of each group, to read its track and name
    first[dense[::-1]] = np.arange(len(ids))[::-1]
    hosts = _track_hosts(trace)
    devices = trace.tracks.device
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    for g in range(n):
        tr, nm = int(track[first[g]]), int(names[first[g]])
        cols["host"].append(hosts[tr])
        cols["device"].append(int(devices[tr]) if devices[tr] >= 0 else None)
        cols["lane"].append(trace.track_name(tr))
        cols["op"].append(trace.strings[nm])
        cols["class"].append(CLASSES[int(by_class[g].argmax())] if by_class[g].any() else "")
    cols["count"] = count.astype(np.int64).tolist()
    cols["total_ns"] = total.astype(np.int64).tolist()
    cols["mean_ns"] = np.rint(total / np.maximum(count, 1)).astype(np.int64).tolist()
    cols["p50_ns"] = np.rint(p50).astype(np.int64).tolist()
    cols["p95_ns"] = np.rint(p95).astype(np.int64).tolist()
    cols["max_ns"] = longest.tolist()
    return {"rows": n, "columns": cols}


def capture_ops(path: str) -> dict[str, Any]:
    """The op statistics of the capture at ``path``, from the cache beside it when it is current,
    else computed (``op_stats``) and stored there. Module-level: it runs as a Dask task."""
    from accelview.model.loader import load_trace

    return cached(path, SECTION, lambda: op_stats(load_trace(path)))
