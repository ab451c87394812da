"""A finished graph replay's nodes as trace rows: op slices with their arguments (one set per
node template, shared), per-op counters (``op_counters``) and true limiters, added to a
:class:`~.batch.TraceBatch` as columns.

Both the whole-run writer (:mod:`.tracewriter`) and the streaming tracer
(:mod:`accelview.capture.convert.devicerows`) use it, so a replay looks the same in either capture.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..sim.device.opcounters import counter_columns
from ..sim.device.replay import UNITS
from .batch import TraceBatch
from .records import Rare
from .replays import ReplayColumns


def add_graph_slices(batch: TraceBatch, cmds: Sequence[Rare], unit_track: Callable[[str], int],
                     to_ref: Callable[[np.ndarray], np.ndarray], truth: bool,
                     columns: ReplayColumns | None = None, counters: bool = True) -> list[np.ndarray]:
    """Slices of every node of the replays ``cmds`` on their units' tracks (``unit_track(name)``),
    times converted by ``to_ref``; returns each replay's local slice indices. All replays go in
    one set of columns (``columns``, if the caller made them already), built per graph layout:
    what the replays share is converted once, and a replay adds only the templates its updates
    changed. ``counters``: add the nodes' per-op counters (False: the caller adds them, made by
    :func:`replay_counters` from the same columns, in node order)."""
    runs = [c.run for c in cmds if c.run is not None]
    if not runs:
        return []
    intern = batch.intern
    cols = columns if columns is not None else ReplayColumns([c.start_ns for c in cmds], runs)
    s = np.asarray(to_ref(cols.start)).astype(np.int64)
    e = np.asarray(to_ref(cols.end)).astype(np.int64)
    used = set().union(*(layout.units_used for layout, _ in cols.groups))
    tracks = np.array([unit_track(u) if u in used else -1 for u in UNITS], dtype=np.int32)
    total = int(cols.bounds[-1])
    one = len(cols.groups) == 1
    names = np.empty(0 if one else total, dtype=np.int32)
    which_all = np.empty(0 if one else total, dtype=np.int64)
    index: dict[tuple, int] = {}
    templates: list[dict[str, Any]] = []
    limiters: list[str] = []

    def template(args: dict[str, Any], limiter: str) -> int:
        t = index.setdefault(tuple(args.items()), len(templates))
        if t == len(templates):
            templates.append(args)
            limiters.append(limiter)
        return t

    for layout, idx in cols.groups:  # templates in order of first use, as replay after replay would give
        name_ids = np.array([intern(x) for x in layout.names], dtype=np.int32)
        first_run = runs[int(idx[0])]
        ids = np.tile(np.array([template(a, lim) for a, lim in zip(
            first_run.template_args, first_run.limiters, strict=True)], dtype=np.int64), (len(idx), 1))
        if len(layout.touched) and len(idx) > 1:  # later replays differ only in their patched templates
            ids[1:, layout.touched] = [[template(a, lim) for a, lim in zip(
                runs[i].patch_args, runs[i].patch_limiters, strict=True)] for i in idx[1:].tolist()]
        node_which = ids[:, layout.which].ravel()
        if one:
            names, which_all = np.tile(name_ids, len(idx)), node_which
        else:
            rows = cols.rows(idx)
            names[rows] = np.tile(name_ids, len(idx))
            which_all[rows] = node_which
    sets = np.array([batch.add_args(a) for a in templates], dtype=np.int32)[which_all]  # shared by a template's nodes
    cmd_ids = np.repeat(np.array([c.cid for c in cmds], dtype=np.int64), np.diff(cols.bounds))
    first = batch.add_slice_columns(tracks[cols.units], s, e - s, names, "op", cmd_ids, sets)
    local = first + np.arange(total)
    if counters:
        batch.add_op_counters(local, replay_counters(cols))
    if truth:
        batch.add_truth_op_columns(local, np.array([intern(x) for x in limiters], dtype=np.int64)[which_all])
    return [local[a:z] for a, z in itertools.pairwise(cols.bounds.tolist())]


def replay_counters(columns: ReplayColumns) -> dict[str, np.ndarray]:
    """The per-op counters of every node of the replays in ``columns``, in node order."""
    return counter_columns(columns.costs)
