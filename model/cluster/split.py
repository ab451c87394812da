"""A merged cluster trace taken apart again, one trace per host (on the merged timebase), for
the analyses that read a cluster host by host (``accelview analyze cluster.h5``)."""

from __future__ import annotations

import numpy as np

from ..schema import TrackKind
from ..table import Table
from ..trace import Trace, track_roots


def _kept(table: Table, rows: np.ndarray, **remap: np.ndarray) -> Table:
    cols = {k: v[rows] for k, v in table.columns().items()}
    for k, new in remap.items():
        cols[k] = new[cols[k]].astype(cols[k].dtype)
    return Table(table.schema, cols)


def split_hosts(trace: Trace) -> list[Trace]:
    """One trace per top-level host track of ``trace``, in host order, sharing its strings,
    arguments and clocks; each says which host it is in its metadata, as a host capture does."""
    tr = trace.tracks
    tops = [int(t) for t in np.flatnonzero((tr.parent < 0) & (tr.kind == int(TrackKind.HOST)))]
    tops.sort(key=lambda t: int(tr.sort[t]))
    root = track_roots(tr.parent.astype(np.int64))
    out = []
    for i, top in enumerate(tops):
        keep = np.flatnonzero(root == top)
        new_track = np.full(len(tr) + 1, -1, np.int64)  # the last entry: a parent of -1 stays -1
        new_track[keep] = np.arange(len(keep))
        sl = np.flatnonzero(root[trace.slices.track] == top)
        new_slice = np.full(len(trace.slices), -1, np.int64)
        new_slice[sl] = np.arange(len(sl))
        f = trace.flows
        flows = np.flatnonzero((new_slice[f.src] >= 0) & (new_slice[f.dst] >= 0))
        tables = dict(trace.tables)
        tables["tracks"] = _kept(tr, keep, parent=new_track)
        tables["slices"] = _kept(trace.slices, sl, track=new_track)
        tables["flows"] = _kept(f, flows, src=new_slice, dst=new_slice)
        for name in ("counter_tracks", "counters", "instants"):
            t = trace.tables[name]
            tables[name] = _kept(t, np.flatnonzero(root[t.track] == top), track=new_track)
        oc = trace.tables["op_counters"]
        tables["op_counters"] = _kept(oc, np.flatnonzero(new_slice[oc.slice] >= 0), slice=new_slice)
        truth = dict(trace.truth)
        ops = trace.truth["truth_ops"]
        truth["truth_ops"] = _kept(ops, np.flatnonzero(new_slice[ops.slice] >= 0), slice=new_slice)
        for name in ("truth_idle", "truth_collectives"):
            t = trace.truth[name]
            truth[name] = _kept(t, np.flatnonzero(root[t.track] == top), track=new_track)
        meta = {k: v for k, v in trace.metadata.items() if k != "merged"}
        host = trace.track_name(top)
        meta["capture"] = {**(meta.get("capture") or {}), "host": host, "host_index": i}
        out.append(Trace(trace.strings, tables, meta, truth, trace.complete, trace.incomplete_reason, trace.source))
    return out
