"""A capture's events moved onto another timebase, clock domain by clock domain.

Every table with times names the track each time belongs to, and a track its clock domain
(``tracks.clock``: -1 for the capture's reference clock, else a ``clocks`` row). ``place``
maps one domain's stored times to the new timebase; it must not decrease (a clock's map is
monotonic), so slices keep their nesting and each track its order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..table import Table
from ..trace import Trace

Place = Callable[[int, np.ndarray], np.ndarray]  # (clock row or -1, stored ns) → new ns (float)


def moved(track_clock: np.ndarray, track: np.ndarray, times: list[np.ndarray], place: Place) -> list[np.ndarray]:
    """``times`` (columns of rows on ``track``) through ``place`` of each row's track's clock (int64)."""
    out = [np.empty(len(t), np.int64) for t in times]
    if not len(track):
        return out
    if np.all(track[1:] >= track[:-1]):  # sorted by track (most tables): one run per track
        edges = np.r_[0, np.flatnonzero(track[1:] != track[:-1]) + 1, len(track)]
        for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
            c = int(track_clock[track[lo]])
            for t, o in zip(times, out, strict=True):
                o[lo:hi] = np.rint(place(c, t[lo:hi].astype(np.float64)))
        return out
    clock = track_clock[track]
    for c in np.unique(clock).tolist():
        rows = np.flatnonzero(clock == c)
        for t, o in zip(times, out, strict=True):
            o[rows] = np.rint(place(int(c), t[rows].astype(np.float64))).astype(np.int64)
    return out


def retimed(trace: Trace, place: Place) -> Trace:
    """A copy of ``trace`` (sharing its strings and untimed tables) with every event moved by ``place``."""
    clock = trace.tracks.clock.astype(np.int64)
    tables, truth = dict(trace.tables), dict(trace.truth)
    sl = trace.slices.columns()
    start, end = moved(clock, sl["track"], [sl["start_ns"], sl["start_ns"] + sl["dur_ns"]], place)
    sl["start_ns"], sl["dur_ns"] = start, np.maximum(end - start, 0)
    tables["slices"] = Table(trace.slices.schema, sl)
    for name in ("counters", "instants"):
        cols = trace.tables[name].columns()
        (cols["ts_ns"],) = moved(clock, cols["track"], [cols["ts_ns"]], place)
        tables[name] = Table(trace.tables[name].schema, cols)
    idle = trace.truth["truth_idle"].columns()
    idle["start_ns"], idle["end_ns"] = moved(clock, idle["track"], [idle["start_ns"], idle["end_ns"]], place)
    truth["truth_idle"] = Table(trace.truth["truth_idle"].schema, idle)
    coll = trace.truth["truth_collectives"].columns()
    keys = ["arrival_ns", "last_arrival_ns", "end_ns"]
    for k, v in zip(keys, moved(clock, coll["track"], [coll[k] for k in keys], place), strict=True):
        coll[k] = v
    truth["truth_collectives"] = Table(trace.truth["truth_collectives"].schema, coll)
    return Trace(trace.strings, tables, dict(trace.metadata), truth, trace.complete, trace.incomplete_reason,
                 trace.source)
