"""The invariants every trace keeps; ``Trace.self_check`` runs them, the reader refuses files
that break them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .nesting import MAX_DEPTH, slice_ends
from .schema import STRING_COLUMNS, TrackKind

if TYPE_CHECKING:
    from .trace import Trace


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _sorted_by(keys: list[np.ndarray]) -> int:
    """Row index of the first row out of lexicographic order of ``keys``, or -1."""
    if len(keys[0]) < 2:
        return -1
    equal = np.ones(len(keys[0]) - 1, dtype=bool)  # rows i and i+1 tie on the keys so far
    for k in keys:
        a, b = k[:-1], k[1:]
        bad = equal & (b < a)
        if bad.any():
            return _first(bad) + 1
        equal &= b == a
    return -1


def in_parent_loop(parent: np.ndarray) -> int:
    """The first track whose chain of parents never reaches a root (it loops), or -1. Parents
    must lie in [-1, len); by pointer doubling, in log2(len) vectorised steps."""
    anc = parent.astype(np.int64)
    for _ in range(max(len(parent), 1).bit_length() + 1):  # ancestors 2, 4, 8 … levels up
        anc = np.where(anc >= 0, anc[np.maximum(anc, 0)], -1) if len(anc) else anc
    return _first(anc >= 0) if (anc >= 0).any() else -1


def check_trace(trace: Trace) -> list[str]:
    """All invariant violations of ``trace`` as one-line messages."""
    problems: list[str] = []
    n_strings = len(trace.strings)
    n_tracks = len(trace.tracks)
    n_slices = len(trace.slices)

    for table in (*trace.tables.values(), *trace.truth.values()):
        for col in STRING_COLUMNS & set(table.schema.names):
            ids = table[col]
            if len(ids) and (ids.min() < 0 or ids.max() >= n_strings):
                problems.append(f"{table.schema.name}.{col} refers to a string that does not exist")

    tr = trace.tracks
    if n_tracks:
        if tr.parent.min() < -1 or tr.parent.max() >= n_tracks:
            problems.append("tracks.parent refers to a track that does not exist")
        elif (loop := in_parent_loop(tr.parent)) >= 0:
            problems.append(f"track {loop} is its own ancestor (tracks.parent loops)")
        if tr.kind.max() > max(TrackKind):
            problems.append(f"tracks.kind has unknown value {int(tr.kind.max())}")

    sl = trace.slices
    if n_slices:
        if sl.depth.max() >= MAX_DEPTH:
            problems.append(f"slice {_first(sl.depth >= MAX_DEPTH)} nests deeper than {MAX_DEPTH - 1:,} levels")
        if sl.track.min() < 0 or sl.track.max() >= n_tracks:
            problems.append("slices.track refers to a track that does not exist")
        if (sl.dur_ns < 0).any():
            problems.append(f"slice {_first(sl.dur_ns < 0)} has a negative duration")
        row = _sorted_by([sl.track, sl.depth, sl.start_ns])
        if row >= 0:
            problems.append(f"slices are out of order at row {row} (must be sorted by track, depth, start)")
        else:
            end = slice_ends(sl.start_ns, sl.dur_ns)
            same_run = (sl.track[1:] == sl.track[:-1]) & (sl.depth[1:] == sl.depth[:-1])
            clash = same_run & (sl.start_ns[1:] < end[:-1])
            if clash.any():
                problems.append(f"slices {_first(clash)} and {_first(clash) + 1} overlap at the same depth")
        arg_sets = trace.tables["args"].set
        n_sets = int(arg_sets.max()) + 1 if len(arg_sets) else 0
        if sl.args.min() < -1 or sl.args.max() >= n_sets:
            problems.append("slices.args refers to an argument set that does not exist")

    fl = trace.flows
    for col in ("src", "dst"):
        ids = fl[col]
        if len(ids) and (ids.min() < 0 or ids.max() >= n_slices):
            problems.append(f"flow {_first((ids < 0) | (ids >= n_slices))} ends at a slice that does not exist")

    for name, key in (("counters", "ts_ns"), ("instants", "ts_ns")):
        t = trace.tables[name]
        if len(t):
            if t.track.min() < 0 or t.track.max() >= n_tracks:
                problems.append(f"{name}.track refers to a track that does not exist")
            row = _sorted_by([t.track, t[key]])
            if row >= 0:
                problems.append(f"{name} are out of order at row {row} (must be sorted by track, time)")
    ct = trace.counter_tracks
    if len(ct) and (ct.track.min() < 0 or ct.track.max() >= n_tracks):
        problems.append("counter_tracks.track refers to a track that does not exist")
    args = trace.tables["args"]
    if len(args) and _sorted_by([args.set]) >= 0:
        problems.append("args are not sorted by set")
    if len(args) and args.set.min() < 0:
        problems.append("args.set holds a negative argument set")
    ins_args = trace.instants.args
    if len(ins_args) and (ins_args.min() < -1 or ins_args.max() >= (int(args.set.max()) + 1 if len(args) else 0)):
        problems.append("instants.args refers to an argument set that does not exist")
    ops = trace.truth["truth_ops"].slice
    if len(ops) and (ops.min() < 0 or ops.max() >= n_slices):
        problems.append("truth_ops refers to a slice that does not exist")
    counted = trace.tables["op_counters"].slice
    if len(counted) and (counted.min() < 0 or counted.max() >= n_slices):
        problems.append("op_counters refers to a slice that does not exist")
    elif len(counted) > 1 and not np.all(counted[1:] > counted[:-1]):
        problems.append("op_counters are not sorted by slice, one row per slice")
    return problems
