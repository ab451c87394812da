"""The in-memory trace: columnar tables, interned strings, metadata, and the queries on them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from . import schema as S
from .nesting import slice_ends
from .strings import StringTable
from .table import Table


@dataclass(frozen=True)
class SliceRuns:
    """Row ranges of the slices table, one per (track, depth), in table order."""

    track: np.ndarray
    depth: np.ndarray
    begin: np.ndarray
    end: np.ndarray

    @classmethod
    def of(cls, track: np.ndarray, depth: np.ndarray) -> SliceRuns:
        """Compute the runs of sorted ``track``/``depth`` columns."""
        n = len(track)
        if n == 0:
            e = np.empty(0, np.int64)
            return cls(np.empty(0, np.int32), np.empty(0, np.uint16), e, e)
        change = np.flatnonzero((track[1:] != track[:-1]) | (depth[1:] != depth[:-1])) + 1
        begin = np.concatenate(([0], change)).astype(np.int64)
        end = np.concatenate((change, [n])).astype(np.int64)
        return cls(track[begin].astype(np.int32), depth[begin].astype(np.uint16), begin, end)

    def of_track(self, track: int) -> list[tuple[int, int, int]]:
        """(depth, begin, end) of each run of one track."""
        lo = int(np.searchsorted(self.track, track, "left"))
        hi = int(np.searchsorted(self.track, track, "right"))
        return [(int(self.depth[i]), int(self.begin[i]), int(self.end[i])) for i in range(lo, hi)]


def track_roots(parent: np.ndarray) -> np.ndarray:
    """Each track's top-level ancestor (its host, in a cluster), from the tracks' ``parent``
    column; loaded traces have no parent loops (the reader refuses them)."""
    root = np.arange(len(parent))
    while True:
        up = np.where(parent[root] >= 0, parent[root], root)
        if np.array_equal(up, root):
            return root
        root = up


def window_in_run(start: np.ndarray, dur: np.ndarray, t0: int, t1: int) -> tuple[int, int]:
    """Rows [lo, hi) of one non-overlapping, start-sorted run that overlap [t0, t1).

    A slice [s, s+d) overlaps when s < t1 and s + d > t0; a zero-length slice counts when
    t0 <= s < t1. Only the slice just before the first s >= t0 can reach into the window."""
    lo = int(np.searchsorted(start, np.int64(t0), "left"))
    hi = int(np.searchsorted(start, np.int64(t1), "left"))
    if lo > 0 and start[lo - 1] + dur[lo - 1] > t0:
        lo -= 1
    return lo, max(lo, hi)


@dataclass
class Trace:
    """One capture (or imported trace) in memory. Build one with ``TraceBuilder``; read and
    write with ``accelview.model.capture_file``. Timestamps are ns on the reference host clock."""

    strings: StringTable
    tables: dict[str, Table]
    metadata: dict[str, Any] = field(default_factory=dict)
    truth: dict[str, Table] = field(default_factory=dict)
    complete: bool = True
    incomplete_reason: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        for sch in S.TABLES:
            self.tables.setdefault(sch.name, Table.empty(sch))
        for sch in S.TRUTH_TABLES:
            self.truth.setdefault(sch.name, Table.empty(sch))

    # Tables by name, for readability at call sites.
    @property
    def tracks(self) -> Table:
        """Tracks (lanes); a track's id is its row."""
        return self.tables["tracks"]

    @property
    def slices(self) -> Table:
        """Slices sorted by (track, depth, start_ns); a slice's id is its row."""
        return self.tables["slices"]

    @property
    def flows(self) -> Table:
        """Flows between slice ids (src → dst)."""
        return self.tables["flows"]

    @property
    def counters(self) -> Table:
        """Counter samples sorted by (track, ts_ns)."""
        return self.tables["counters"]

    @property
    def counter_tracks(self) -> Table:
        """Descriptors (unit, hardware block, description) of counter tracks."""
        return self.tables["counter_tracks"]

    @property
    def instants(self) -> Table:
        """Instant events sorted by (track, ts_ns)."""
        return self.tables["instants"]

    @cached_property
    def runs(self) -> SliceRuns:
        """The (track, depth) runs of the slices table."""
        return SliceRuns.of(self.slices.track, self.slices.depth)

    def name(self, string_id: int) -> str:
        """The string of an interned id."""
        return self.strings[string_id]

    def track_name(self, track: int) -> str:
        """The name of a track."""
        return self.strings[self.tracks.name[track]]

    def time_bounds(self) -> tuple[int, int]:
        """(first, last) timestamp over slices, counters and instants; (0, 0) when empty."""
        lo, hi = [], []
        if len(self.slices):
            lo.append(int(self.slices.start_ns.min()))
            hi.append(int(slice_ends(self.slices.start_ns, self.slices.dur_ns).max()))
        for t in (self.counters, self.instants):
            if len(t):
                lo.append(int(t.ts_ns.min()))
                hi.append(int(t.ts_ns.max()))
        return (min(lo), max(hi)) if lo else (0, 0)

    def window(self, track: int, t0: int, t1: int) -> np.ndarray:
        """Ids of the slices of ``track`` that overlap [t0, t1), ordered by (depth, start)."""
        start, dur = self.slices.start_ns, self.slices.dur_ns
        parts = []
        for _depth, b, e in self.runs.of_track(track):
            lo, hi = window_in_run(start[b:e], dur[b:e], t0, t1)
            parts.append(np.arange(b + lo, b + hi, dtype=np.int64))
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    def counter_series(self, track: int) -> tuple[np.ndarray, np.ndarray]:
        """(ts_ns, value) of one counter track (views, no copy)."""
        t = self.counters.track
        lo, hi = np.searchsorted(t, track, "left"), np.searchsorted(t, track, "right")
        return self.counters.ts_ns[lo:hi], self.counters.value[lo:hi]

    def args(self, arg_set: int) -> dict[str, Any]:
        """The arguments of one arg set (a slice's or instant's ``args`` column); {} for -1."""
        if arg_set < 0:
            return {}
        a = self.tables["args"]
        lo, hi = np.searchsorted(a.set, arg_set, "left"), np.searchsorted(a.set, arg_set, "right")
        out: dict[str, Any] = {}
        for i in range(lo, hi):
            kind = S.ArgKind(int(a.kind[i]))
            value: Any = (
                int(a.int[i]) if kind is S.ArgKind.INT
                else float(a.real[i]) if kind is S.ArgKind.REAL
                else self.strings[a.str[i]]
            )
            out[self.strings[a.key[i]]] = value
        return out

    def slice_args(self, slice_id: int) -> dict[str, Any]:
        """A slice's arguments: its argument set, then the hardware counters the device reported
        for it (its row of ``op_counters``, if it has one)."""
        out = self.args(int(self.slices.args[slice_id]))
        oc = self.tables["op_counters"]
        i = int(np.searchsorted(oc.slice, slice_id))
        if i < len(oc) and oc.slice[i] == slice_id:
            for c, d in S.OP_COUNTER_COLUMNS:
                out[c] = int(oc[c][i]) if d == "i8" else float(oc[c][i])
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held by all tables' arrays (not the strings)."""
        return sum(t.nbytes for t in self.tables.values()) + sum(t.nbytes for t in self.truth.values())

    def self_check(self) -> list[str]:
        """Check the model's invariants; return the problems found (empty when all hold)."""
        from .checks import check_trace

        return check_trace(self)
