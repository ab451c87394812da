"""The aligned host captures of a cluster as one trace on host0's clock.

Each host's tables are appended with their ids renumbered (tracks, slices, argument sets,
clocks, strings); the hosts' top tracks become the trace's top-level tracks, in host order.
Every clock domain keeps a ``clocks`` row named after its host (``host1 monotonic``,
``host1 device 3 timer``), host0's own clock being the reference; its map to host0 is stored in
``clock_segments`` (docs/FORMAT.md), so every raw timestamp stays recoverable:
``t_domain = offset_ns + ref × (1 + drift_ppm·1e-6)`` through the segment that placed it. Sync
samples are kept as recorded (each in its host's raw time). Truth moves alike; a device's true
clock becomes its true map to host0 (``truth_clock_segments``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..align import ClockMap, Segment, compose
from ..align.rows import add_segments
from ..builder import TraceBuilder
from ..schema import STRING_COLUMNS, ArgKind, TrackKind
from ..trace import Trace
from .timebase import PTP_CLOCK, HostAlignment, alignment_summary


def _ids(trace: Trace, b: TraceBuilder) -> np.ndarray:
    """This trace's string ids → the merged trace's."""
    return np.array(b.strings.intern_many(trace.strings.strings()), dtype=np.int64)


def _true_map(trace: Trace, clock: int) -> ClockMap | None:
    t = trace.truth["truth_clocks"]
    rows = np.flatnonzero(t.clock == clock)
    if not len(rows):
        return None
    r = int(rows[0])
    return ClockMap((Segment(-(1 << 62), 1 << 62, float(t.offset_ns[r]), float(t.drift_ppm[r]), 0.0),))


def merge_aligned(traces: Sequence[Trace], aligns: Sequence[HostAlignment],
                  sources: Sequence[str | Path] = ()) -> Trace:
    """One trace of ``traces`` (host captures already moved onto host0's clock by ``aligns``)."""
    b = TraceBuilder()
    for t in traces:  # categories first: their column is 16-bit
        b.strings.intern_many([t.strings[int(c)] for c in np.unique(t.slices.category)])
        b.strings.intern_many([t.strings[int(c)] for c in np.unique(t.instants.category)])
    b.add_clock("host0 monotonic", reference=True)  # clocks row 0: the reference
    track_base = slice_base = set_base = 0
    host_truths = [_true_map(t, _ptp_row(t)) if i else ClockMap.identity() for i, t in enumerate(traces)]
    for i, (t, a) in enumerate(zip(traces, aligns, strict=True)):
        ids = _ids(t, b)
        clocks = t.tables["clocks"]
        new_clock = np.full(len(clocks) + 1, -1, np.int64)  # old row (or -1 at the end) → new row
        for c in range(len(clocks)):
            if clocks.reference[c]:
                new_clock[c] = 0 if i == 0 else -2  # placed below
                continue
            m = a.clock_map(c) if c in a.device_maps else a.host_map
            seg = m.segments[0]
            new_clock[c] = b.add_clock(f"{a.host} {t.strings[int(clocks.name[c])]}", False, seg.offset_ns,
                                       seg.drift_ppm, seg.error_ns)
            if c in a.device_maps:
                add_segments(b, int(new_clock[c]), m)
                true = _true_map(t, c)
                if true is not None and host_truths[i] is not None:
                    tm = compose(true, host_truths[i])
                    b.add_truth_clock(int(new_clock[c]), tm.segments[0].offset_ns, tm.segments[0].drift_ppm)
                    add_segments(b, int(new_clock[c]), tm, truth=True)
        if i:
            own = b.add_clock(f"{a.host} monotonic", False, *_first(a.host_map))
            add_segments(b, own, a.host_map)
            new_clock[new_clock == -2] = own
            new_clock[-1] = own
            if host_truths[i] is not None:
                s0 = host_truths[i].segments[0]
                b.add_truth_clock(own, s0.offset_ns, s0.drift_ppm)
                add_segments(b, own, host_truths[i], truth=True)
        _append(b, t, ids, new_clock, track_base, slice_base, set_base, i)
        track_base += len(t.tracks)
        slice_base += len(t.slices)
        set_base += int(t.tables["args"].set.max()) + 1 if len(t.tables["args"]) else 0
    b.metadata.update(_metadata(traces, aligns, sources))
    return b.build(source="cluster")


def _first(m: ClockMap) -> tuple[float, float, float]:
    s = m.segments[0]
    return s.offset_ns, s.drift_ppm, max(x.error_ns for x in m.segments)


def _ptp_row(t: Trace) -> int:
    """The capture's ``ptp host0`` clocks row (-1: none)."""
    names = [t.strings[int(n)] for n in t.tables["clocks"].name]
    return names.index(PTP_CLOCK) if PTP_CLOCK in names else -1


def _strings(cols: dict[str, np.ndarray], ids: np.ndarray) -> None:
    for k in STRING_COLUMNS & set(cols):
        if k == "str":
            continue
        cols[k] = ids[cols[k]].astype(cols[k].dtype)


def _append(b: TraceBuilder, t: Trace, ids: np.ndarray, new_clock: np.ndarray, track_base: int, slice_base: int,
            set_base: int, host: int) -> None:
    tr = t.tracks.columns()
    _strings(tr, ids)
    tr["parent"] = np.where(tr["parent"] >= 0, tr["parent"] + track_base, -1).astype(np.int32)
    tr["clock"] = new_clock[tr["clock"]].astype(np.int16)
    top = np.flatnonzero(tr["parent"] < 0)
    hosts = top[t.tracks.kind[top] == int(TrackKind.HOST)]
    if len(hosts):  # the host is the top: its devices' lanes go under it
        tr["parent"][top] = np.where(top == hosts[0], -1, hosts[0] + track_base)
    tr["sort"][top[tr["parent"][top] < 0]] = host
    tr["host"][:] = b.strings.intern(f"host{host}")  # every lane names its host, devices' too
    b.add_rows("tracks", tr)
    sl = t.slices.columns()
    _strings(sl, ids)
    sl["track"] = sl["track"] + track_base
    sl["args"] = np.where(sl["args"] >= 0, sl["args"] + set_base, -1).astype(np.int32)
    b.add_rows("slices", sl)
    for name in ("flows",):
        f = t.tables[name].columns()
        _strings(f, ids)
        f["src"], f["dst"] = f["src"] + slice_base, f["dst"] + slice_base
        b.add_rows(name, f)
    for name in ("counter_tracks", "counters", "instants"):
        cols = t.tables[name].columns()
        _strings(cols, ids)
        cols["track"] = cols["track"] + track_base
        if "args" in cols:
            cols["args"] = np.where(cols["args"] >= 0, cols["args"] + set_base, -1).astype(np.int32)
        b.add_rows(name, cols)
    args = t.tables["args"].columns()
    args["key"] = ids[args["key"]].astype(np.int32)
    is_str = args["kind"] == int(ArgKind.STR)
    args["str"] = np.where(is_str, ids[np.where(is_str, args["str"], 0)], args["str"]).astype(np.int32)
    args["set"] = args["set"] + set_base
    b.add_rows("args", args)
    cs = t.tables["clock_samples"].columns()
    cs["clock"] = new_clock[cs["clock"]].astype(np.int32)
    b.add_rows("clock_samples", cs)
    for name in ("op_counters",):
        cols = t.tables[name].columns()
        cols["slice"] = cols["slice"] + slice_base
        b.add_rows(name, cols)
    truth = t.truth
    ops = truth["truth_ops"].columns()
    ops["slice"] = ops["slice"] + slice_base
    _strings(ops, ids)
    b.add_rows("truth_ops", ops)
    for name in ("truth_idle", "truth_collectives"):
        cols = truth[name].columns()
        _strings(cols, ids)
        cols["track"] = cols["track"] + track_base
        b.add_rows(name, cols)


def _metadata(traces: Sequence[Trace], aligns: Sequence[HostAlignment],
              sources: Sequence[str | Path]) -> dict[str, Any]:
    """Host0's metadata, with the cluster's hosts, sources and how each was aligned."""
    meta = dict(traces[0].metadata)
    cap = dict(meta.get("capture", {})) if isinstance(meta.get("capture"), dict) else {}
    cap.pop("host", None)
    cap.pop("host_index", None)
    meta["capture"] = cap
    meta["merged"] = {"hosts": [a.host for a in aligns], "sources": [str(s) for s in sources],
                      "reference": "host0", "alignment": alignment_summary(aligns)}
    return meta
