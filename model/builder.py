"""TraceBuilder: the one way producers (simulator, importers, test factories) make a Trace.

Add tracks, slices, flows, counters and the rest in any order; ``build()`` sorts the tables,
computes nesting depths, renumbers slices to their final ids and rewrites the flows (and
truth entries) that point at them. Scalar ``add_*`` calls are for modest volumes; the plural
``add_slices``/``add_counters`` take numpy arrays for bulk producers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from . import schema as S
from .errors import TraceInvariantError
from .nesting import MAX_DEPTH, assign_depths, run_order
from .strings import StringTable
from .table import Table
from .trace import Trace

NO_DEPTH = MAX_DEPTH  # a slice depth to be computed by build()


class _Columns:
    """Rows accumulated as Python lists plus numpy batches, concatenated once at the end."""

    def __init__(self, schema: S.TableSchema) -> None:
        self.schema = schema
        self.rows: dict[str, list] = {c: [] for c in schema.names}
        self.columns = list(self.rows.values())  # add_row appends to them in column order
        self.batches: list[dict[str, np.ndarray]] = []
        self.count = 0
        self.kept = False  # the one batch so far was handed over (copy=False): the table can be it
        self.ordered = False  # the one batch so far came in the table's sorted order (ordered=True)

    def add_row(self, *values: Any) -> int:
        for column, v in zip(self.columns, values, strict=True):
            column.append(v)
        self.ordered = False
        self.count += 1
        return self.count - 1

    def add_batch(self, cols: Mapping[str, np.ndarray], copy: bool = True, ordered: bool = False) -> int:
        self._flush_rows()
        n = len(next(iter(cols.values())))
        self.batches.append({c: np.asarray(cols[c], dtype=self.schema.dtype(c)) for c in self.schema.names})
        self.kept = not copy and len(self.batches) == 1
        self.ordered = ordered and len(self.batches) == 1
        first = self.count
        self.count += n
        return first

    def _flush_rows(self) -> None:
        if self.rows[self.schema.names[0]]:
            self.batches.append(
                {c: np.asarray(v, dtype=self.schema.dtype(c)) for c, v in self.rows.items()}
            )
            self.rows = {c: [] for c in self.schema.names}
            self.columns = list(self.rows.values())

    def table(self) -> Table:
        self._flush_rows()
        if not self.batches:
            return Table.empty(self.schema)
        if self.kept and len(self.batches) == 1:  # handed over whole: no copy
            return Table(self.schema, {c: np.ascontiguousarray(v) for c, v in self.batches[0].items()})
        return Table(self.schema, {c: np.concatenate([b[c] for b in self.batches]) for c in self.schema.names})


def _ascending(values: np.ndarray) -> bool:
    """Whether ``values`` never decrease (comparisons, not np.diff: no array of steps to allocate)."""
    return len(values) < 2 or bool(np.all(values[1:] >= values[:-1]))


def _in_order(major: np.ndarray, minor: np.ndarray) -> bool:
    """Whether rows are already sorted by (major, minor): a check in a few passes instead of a sort."""
    if len(major) < 2:
        return True
    if not _ascending(major):
        return False
    ahead = major[1:] > major[:-1]
    ahead |= minor[1:] >= minor[:-1]
    return bool(ahead.all())


class TraceBuilder:
    """Collects a trace's contents and builds a sorted, self-consistent ``Trace``.

    Ids returned by ``add_slice``/``add_slices`` are provisional (the order of addition); use
    them for flows and truth entries. After ``build()``, ``final_slice_ids`` maps each
    provisional id to the slice's row in the built trace.
    """

    def __init__(self, strings: StringTable | None = None) -> None:
        self.strings = strings if strings is not None else StringTable()
        self.metadata: dict[str, Any] = {}
        self._tables = {s.name: _Columns(s) for s in (*S.TABLES, *S.TRUTH_TABLES)}
        self._n_arg_sets = 0
        self.final_slice_ids: np.ndarray | None = None
        self.complete = True
        self.incomplete_reason = ""

    # -- tracks -----------------------------------------------------------------------------
    def add_track(
        self, name: str, kind: S.TrackKind, parent: int = -1, host: str = "", device: int = -1,
        clock: int = -1, sort: int | None = None,
    ) -> int:
        """Add a track (a lane); returns its id. ``sort`` orders siblings (default: addition order)."""
        t = self._tables["tracks"]
        order = t.count if sort is None else sort
        return t.add_row(parent, int(kind), self.strings.intern(name), self.strings.intern(host), device, clock,
                         order)

    def add_counter_track(
        self, name: str, unit: str, block: str = "", description: str = "", parent: int = -1,
        host: str = "", device: int = -1, clock: int = -1,
    ) -> int:
        """Add a counter track with its descriptor; returns the track id."""
        track = self.add_track(name, S.TrackKind.COUNTER, parent, host, device, clock)
        self._tables["counter_tracks"].add_row(
            track, self.strings.intern(unit), self.strings.intern(block), self.strings.intern(description)
        )
        return track

    # -- events -----------------------------------------------------------------------------
    def add_args(self, args: Mapping[str, Any] | None) -> int:
        """Store an argument set; returns its id (-1 for none or empty)."""
        if not args:
            return -1
        set_id = self._n_arg_sets
        self._n_arg_sets += 1
        t = self._tables["args"]
        for key, value in args.items():
            k = self.strings.intern(str(key))
            is_int = isinstance(value, bool | np.bool_ | int | np.integer)
            if is_int and -(2**63) <= int(value) < 2**63:
                t.add_row(set_id, k, S.ArgKind.INT, int(value), 0.0, 0)
            elif isinstance(value, float | np.floating):
                t.add_row(set_id, k, S.ArgKind.REAL, 0, float(value), 0)
            else:
                t.add_row(set_id, k, S.ArgKind.STR, 0, 0.0, self.strings.intern(str(value)))
        return set_id

    def add_slice(
        self, track: int, start_ns: int, dur_ns: int, name: str, category: str = "",
        correlation: int = -1, args: Mapping[str, Any] | None = None, depth: int | None = None,
    ) -> int:
        """Add one slice; returns its provisional id. Depth is computed unless given."""
        return self._tables["slices"].add_row(
            track, start_ns, dur_ns, self.strings.intern(name), self.strings.intern(category),
            NO_DEPTH if depth is None else depth, correlation, self.add_args(args),
        )

    def add_slices(
        self, track: np.ndarray | int, start_ns: np.ndarray, dur_ns: np.ndarray, name: np.ndarray,
        category: np.ndarray | int = 0, correlation: np.ndarray | int = -1,
        args: np.ndarray | int = -1, depth: np.ndarray | None = None,
    ) -> np.ndarray:
        """Add slices from arrays (``name``/``category`` are string ids from ``self.strings``);
        returns their provisional ids."""
        n = len(start_ns)

        def full(v: np.ndarray | int) -> np.ndarray:
            return np.broadcast_to(np.asarray(v), (n,))

        first = self._tables["slices"].add_batch({
            "track": full(track), "start_ns": start_ns, "dur_ns": dur_ns, "name": full(name),
            "category": full(category), "depth": full(NO_DEPTH) if depth is None else depth,
            "correlation": full(correlation), "args": full(args),
        })
        return np.arange(first, first + n, dtype=np.int64)

    def add_flow(self, src: int, dst: int, name: str = "") -> None:
        """Link two slices (provisional ids) by a flow, src → dst."""
        self._tables["flows"].add_row(src, dst, self.strings.intern(name))

    def add_counter(self, track: int, ts_ns: int, value: float) -> None:
        """Add one counter sample."""
        self._tables["counters"].add_row(track, ts_ns, value)

    def add_counters(self, track: int, ts_ns: np.ndarray, values: np.ndarray) -> None:
        """Add samples of one counter track from arrays."""
        n = len(ts_ns)
        self._tables["counters"].add_batch(
            {"track": np.full(n, track), "ts_ns": ts_ns, "value": values}
        )

    def add_instant(
        self, track: int, ts_ns: int, name: str, category: str = "", args: Mapping[str, Any] | None = None
    ) -> None:
        """Add an instant event (a point in time on a track)."""
        self._tables["instants"].add_row(
            track, ts_ns, self.strings.intern(name), self.strings.intern(category), self.add_args(args)
        )

    # -- clocks and truth ---------------------------------------------------------------------
    def add_clock(
        self, name: str, reference: bool = False, offset_ns: float = 0.0, drift_ppm: float = 0.0,
        error_ns: float = 0.0,
    ) -> int:
        """Add a clock domain with its estimated alignment to the reference; returns its id."""
        return self._tables["clocks"].add_row(
            self.strings.intern(name), int(reference), offset_ns, drift_ppm, error_ns
        )

    def add_clock_sample(self, clock: int, ref_send_ns: int, domain_ts: int, ref_recv_ns: int) -> None:
        """Add one sync sample: reference time sent, the domain's timestamp, reference time received."""
        self._tables["clock_samples"].add_row(clock, ref_send_ns, domain_ts, ref_recv_ns)

    def add_truth_op(self, slice_id: int, limiter: str) -> None:
        """Record the simulator's true limiter of a device op (provisional slice id)."""
        self._tables["truth_ops"].add_row(slice_id, self.strings.intern(limiter))

    def add_truth_idle(self, track: int, start_ns: int, end_ns: int, cause: str) -> None:
        """Record the true cause of an interval in which a device sat idle."""
        self._tables["truth_idle"].add_row(track, start_ns, end_ns, self.strings.intern(cause))

    def add_truth_clock(self, clock: int, offset_ns: float, drift_ppm: float) -> None:
        """Record a clock domain's true parameters."""
        self._tables["truth_clocks"].add_row(clock, offset_ns, drift_ppm)

    def add_rows(self, table: str, columns: Mapping[str, np.ndarray], copy: bool = True,
                 ordered: bool = False) -> int:
        """Bulk-add raw rows to any table (string columns as ids; slices with depth 0xFFFF get
        computed depths); returns the provisional id of the first row. ``copy=False`` hands the
        arrays over: when they are all the table gets, the built trace holds them as they are
        (the caller must not change them afterwards). ``ordered=True``: the producer guarantees
        that the rows are in the order ``build`` sorts the table in (counters and instants: by
        track, then time), so when they are all the table gets it is not checked."""
        if table == "args" and len(columns["set"]):
            self._n_arg_sets = max(self._n_arg_sets, int(np.max(columns["set"])) + 1)
        return self._tables[table].add_batch(columns, copy, ordered)

    def add_rows_after_build(self, trace: Trace, table: str, columns: Mapping[str, np.ndarray]) -> None:
        """Rows whose values come after ``build()`` into ``trace``, which this builder built,
        merged with the table's rows and in its order: ``op_counters`` and ``truth_ops`` rows name
        slices by this builder's ids (as for ``add_rows``), renumbered as the slices were;
        ``counters`` and ``instants`` rows must come sorted by (track, time)."""
        sch = S.SCHEMAS[table]
        rows = {c: np.asarray(columns[c], dtype=sch.dtype(c)) for c in sch.names}
        tables = trace.truth if table in trace.truth else trace.tables
        old = tables[table]
        by_slice = "slice" in sch.names
        if by_slice:
            rows["slice"] = self.final_slice_ids[rows["slice"]]
        if not len(old):
            if by_slice and not _ascending(rows["slice"]):  # rows that come in slice order stay as they are
                rows = Table(sch, rows).take(np.argsort(rows["slice"], kind="stable")).columns()
            tables[table] = Table(sch, rows)
            return
        keys = [np.concatenate([old["slice"], rows["slice"]])] if by_slice else \
            [np.concatenate([old.ts_ns, rows["ts_ns"]]), np.concatenate([old.track, rows["track"]])]
        order = np.argsort(keys[0], kind="stable") if by_slice else np.lexsort(keys)
        at = np.empty(len(order), dtype=np.int64)  # each row's place in the merged table
        at[order] = np.arange(len(order))
        k = len(old)
        merged = {}
        for c in sch.names:  # each column written once, old and new rows scattered to their places
            col = np.empty(len(order), dtype=sch.dtype(c))
            col[at[:k]] = old[c]
            col[at[k:]] = rows[c]
            merged[c] = col
        tables[table] = Table(sch, merged)

    def tables_so_far(self) -> dict[str, Table]:
        """The rows added so far per non-empty table, unsorted, in provisional-id order."""
        return {name: cols.table() for name, cols in self._tables.items() if cols.count}

    # -- build ------------------------------------------------------------------------------
    def build(self, source: str = "") -> Trace:
        """Sort, compute depths, renumber slices, and return the ``Trace``."""
        t = {name: cols.table() for name, cols in self._tables.items()}
        sl = t["slices"].columns()
        depth = sl["depth"]
        missing = depth == NO_DEPTH
        if missing.any():
            depth = depth.copy()
            depth[missing] = assign_depths(sl["track"][missing], sl["start_ns"][missing], sl["dur_ns"][missing])
            sl["depth"] = depth
        if len(depth) and depth.max() >= MAX_DEPTH:  # uint16 depths saturate: the slices would overlap
            track = int(sl["track"][np.argmax(depth)])
            raise TraceInvariantError(f"slices of track {track} nest deeper than {MAX_DEPTH - 1:,} levels, "
                                      f"more than a trace holds")
        order = run_order(sl["track"], sl["depth"], sl["start_ns"])
        new_id = np.empty(len(order), dtype=np.int64)
        new_id[order] = np.arange(len(order), dtype=np.int64)
        self.final_slice_ids = new_id
        t["slices"] = Table(S.SLICES, sl).take(order)

        def remap(ids: np.ndarray) -> np.ndarray:
            bad = (ids < 0) | (ids >= len(new_id))
            out = new_id[np.where(bad, 0, ids)] if len(new_id) else ids.copy()
            out[bad] = ids[bad]  # left dangling on purpose: self_check reports them
            return out

        fl = t["flows"].columns()
        fl["src"], fl["dst"] = remap(fl["src"]), remap(fl["dst"])
        t["flows"] = Table(S.FLOWS, fl)
        for sch in (S.TRUTH_OPS, S.OP_COUNTERS):  # rows of slices: in the slices' new order
            rows = t[sch.name].columns()
            rows["slice"] = remap(rows["slice"])
            t[sch.name] = Table(sch, rows).take(np.argsort(rows["slice"], kind="stable"))
        for name, key in (("counters", "ts_ns"), ("instants", "ts_ns")):
            if self._tables[name].ordered:  # in order by construction
                continue
            if not _in_order(t[name].track, t[name][key]):  # producers mostly add them in order already
                t[name] = t[name].take(np.lexsort((t[name][key], t[name].track)))
        if not _ascending(t["args"].set):
            t["args"] = t["args"].take(np.argsort(t["args"].set, kind="stable"))
        t["truth_idle"] = t["truth_idle"].take(np.lexsort((t["truth_idle"].start_ns, t["truth_idle"].track)))
        truth_names = {s.name for s in S.TRUTH_TABLES}
        return Trace(
            strings=self.strings,
            tables={k: v for k, v in t.items() if k not in truth_names},
            truth={k: v for k, v in t.items() if k in truth_names},
            metadata=dict(self.metadata),
            complete=self.complete,
            incomplete_reason=self.incomplete_reason,
            source=source,
        )
