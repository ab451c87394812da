"""A finished graph replay's nodes as trace rows: op slices with their arguments, per-op
counters and true limiters, added to a :class:`~.batch.TraceBatch` as columns.

Both the whole-run writer (:mod:`.tracewriter`) and the streaming tracer
(:mod:`accelview.capture.devicerows`) use it, so a replay looks the same in either capture.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from .batch import TraceBatch
from .engine import Command
from .graph import UNITS
from .opcounters import CostColumns, counter_columns


def add_graph_slices(batch: TraceBatch, cmds: Sequence[Command], unit_track: Callable[[str], int],
                     to_ref: Callable[[np.ndarray], np.ndarray], truth: bool) -> list[np.ndarray]:
    """Slices of every node of the replays ``cmds`` on their units' tracks (``unit_track(name)``),
    times converted by ``to_ref``; returns each replay's local slice indices. All replays go in
    one set of columns: a replay costs a few array operations, not a row at a time."""
    runs = [c.graph for c in cmds if c.graph is not None]
    if not runs:
        return []
    intern = batch.intern
    start = np.concatenate([c.start_ns + r.start_off for c, r in zip(cmds, runs, strict=True)])
    end = np.concatenate([c.start_ns + r.end_off for c, r in zip(cmds, runs, strict=True)])
    s = np.asarray(to_ref(start)).astype(np.int64)
    e = np.asarray(to_ref(end)).astype(np.int64)
    used = set().union(*(r.units_used for r in runs))
    tracks = np.array([unit_track(u) if u in used else -1 for u in UNITS], dtype=np.int32)
    names: dict[int, np.ndarray] = {}  # the graph's name list is shared by its replays: intern once
    for r in runs:
        if id(r.names) not in names:
            names[id(r.names)] = np.array([intern(x) for x in r.names], dtype=np.int32)
    index: dict[tuple, int] = {}
    templates: list[dict] = []
    limiters: list[str] = []
    which = []
    for r in runs:  # templates of all replays, each distinct one once
        ids = []
        for a, lim in zip(r.template_args, r.limiters, strict=True):
            key = tuple(a.items())
            t = index.get(key)
            if t is None:
                t = index[key] = len(templates)
                templates.append(a)
                limiters.append(lim)
            ids.append(t)
        which.append(np.asarray(ids, dtype=np.int64)[r.which])
    which_all = np.concatenate(which)
    costs = CostColumns.concat([r.costs for r in runs])
    sets = batch.add_template_sets(templates, which_all, counter_columns(costs))
    cmd_ids = np.concatenate([np.full(len(r), c.cid, dtype=np.int64) for c, r in zip(cmds, runs, strict=True)])
    first = batch.add_slice_columns(tracks[np.concatenate([r.units for r in runs])], s, e - s,
                                    np.concatenate([names[id(r.names)] for r in runs]), "op", cmd_ids, sets)
    local = first + np.arange(len(which_all))
    if truth:
        batch.add_truth_op_columns(local, np.array([intern(x) for x in limiters], dtype=np.int64)[which_all])
    bounds = np.cumsum([0, *(len(r) for r in runs)])
    return [local[a:z] for a, z in itertools.pairwise(bounds)]
