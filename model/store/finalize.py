"""Finalizing a streamed capture in bounded memory: its staging area → the final layout.

Writes what ``write_capture(build_from_staging(...))`` writes (the same tables, order, slice
ids, depths, flows, truth, indexes and encodings) but never holds more than a few blocks of
rows: tables go through an external merge sort (``extsort``), depths are computed block by
block (``depth_stream``), and slice ids are renumbered through a map kept on disk.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from .. import schema as S
from ..builder import NO_DEPTH
from ..strings import StringTable
from .depth_stream import store_with_depths
from .extsort import ExternalSorter, SortLimits, rows_of, take
from .format import CHUNK_ROWS, DELTA_COLUMNS, DERIVED_COLUMNS, StreamingDeltas
from .h5io import H5File, narrow_dtype
from .scratch import Columns, ColumnStore, Scratch, Spool, ValueRanges

ROW = "_row"  # a block's row numbers in its source table (the provisional slice id for slices)
# The tables TraceBuilder sorts (besides slices, flows, truth_ops and op_counters, which refer to slice ids):
# sort keys (the row number is added as the last, so ties keep their staged order as in its
# stable sorts), the keys of the runs that anchor the delta coding, and whether the runs are
# indexed. The other tables keep their staged order.
SORTED: dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]] = {
    "counters": (("track", "ts_ns"), ("track",), True),
    "instants": (("track", "ts_ns"), ("track",), False),
    "args": (("set",), (), False),
    "truth_idle": (("track", "start_ns"), (), False),
}


@dataclass(frozen=True)
class FinalizeLimits:
    """How many rows finalizing handles at once (memory grows with these, not with the capture)."""

    sort: SortLimits = field(default_factory=SortLimits)
    io_rows: int = 1 << 20  # rows per read or write of a scratch or final column


def finalize_staged(staged: H5File, out: H5File, limits: FinalizeLimits = FinalizeLimits()) -> dict[str, int]:
    """Write the strings and tables of ``staged``'s staging area to ``out`` in the final layout
    (docs/FORMAT.md); returns the rows of each table. Root attributes are the caller's."""
    with Scratch(out.path) as scratch:
        return _Finalizer(staged, out, scratch, limits).run()


class _ColumnWriter:
    """One final column, written in runs of whole chunks (so each chunk is compressed once)."""

    BATCH_ROWS = 16 * CHUNK_ROWS  # rows held before a write: fewer, larger writes cost less

    def __init__(self, out: H5File, name: str, dtype: np.dtype, rows: int) -> None:
        self.out, self.name, self.dtype = out, name, dtype
        out.create_empty(name, dtype, rows, CHUNK_ROWS)
        self.at = 0
        self._pending: list[np.ndarray] = []
        self._pending_rows = 0

    def append(self, values: np.ndarray) -> None:
        """Write the next values (the last partial chunk waits for more)."""
        self._pending.append(values.astype(self.dtype, copy=False))
        self._pending_rows += len(values)
        if self._pending_rows >= self.BATCH_ROWS:
            data = np.concatenate(self._pending)
            whole = len(data) - len(data) % CHUNK_ROWS
            self._write(data[:whole])
            self._pending, self._pending_rows = [data[whole:]], len(data) - whole

    def close(self) -> None:
        """Write what is left."""
        if self._pending_rows:
            self._write(np.concatenate(self._pending))
        self._pending, self._pending_rows = [], 0

    def _write(self, data: np.ndarray) -> None:
        self.out.write(self.name, self.at, data)
        self.at += len(data)


def _stored_type(dtype: np.dtype, value_range: tuple[int, int] | None) -> np.dtype:
    return dtype if value_range is None else narrow_dtype(dtype, *value_range)


class _TableOut:
    """The final columns of one table, written in row order, with the delta coding, anchors
    and run index the format asks of it. Plain columns go straight to the file, in the type
    their value range (known beforehand) allows; the delta-coded column and the indexes, whose
    ranges are known only at the end, are spooled first."""

    def __init__(self, out: H5File, scratch: Scratch, sch: S.TableSchema, group: str, rows: int,
                 ranges: ValueRanges, run_keys: tuple[str, ...] = (), index: bool = False) -> None:
        self.out, self.prefix = out, f"{group}{sch.name}"
        self.delta = next((c for c in sch.names if (sch.name, c) in DELTA_COLUMNS), None)
        self.run_keys, self.index = run_keys, index
        stored = [c for c in sch.names if (sch.name, c) not in DERIVED_COLUMNS and c != self.delta]
        self.columns = {c: _ColumnWriter(out, f"{self.prefix}/{c}", _stored_type(sch.dtype(c), ranges.get(c)), rows)
                        for c in stored}
        spooled: dict[str, np.dtype] = {}
        if self.delta:
            spooled = {self.delta: np.dtype(np.int64), "anchor_row": np.dtype(np.int64),
                       "anchor_value": sch.dtype(self.delta)}
        if index:
            spooled.update({f"runs/{k}": sch.dtype(k) for k in run_keys})
            spooled.update({"runs/begin": np.dtype(np.int64), "runs/end": np.dtype(np.int64)})
        self.spools = {c: Spool(scratch, d) for c, d in spooled.items()}
        self.deltas = StreamingDeltas()
        self.rows = 0

    def append(self, block: Mapping[str, np.ndarray]) -> None:
        """Append rows in final order."""
        rows = self.rows + np.arange(rows_of(block), dtype=np.int64)
        for c, w in self.columns.items():
            w.append(block[c])
        if self.delta:
            sp = self.spools
            values = block[self.delta]
            deltas, anchor, run_start = self.deltas.push(values, [block[k] for k in self.run_keys])
            sp[self.delta].append(deltas)
            sp["anchor_row"].append(rows[anchor])
            sp["anchor_value"].append(values[anchor])
            if self.index:
                for k in self.run_keys:
                    sp[f"runs/{k}"].append(block[k][run_start])
                begins = rows[run_start]
                sp["runs/begin"].append(begins)
                sp["runs/end"].append(begins[begins > 0])  # a run ends where the next begins
        self.rows += len(rows)

    def close(self, io_rows: int) -> None:
        """Write the rest, and the spooled columns, into the file; remove the spools."""
        for w in self.columns.values():
            w.close()
        if self.index and self.rows:
            self.spools["runs/end"].append(np.array([self.rows]))
        for c, spool in self.spools.items():
            w = _ColumnWriter(self.out, f"{self.prefix}/{c}", _stored_type(spool.dtype, spool.range), spool.rows)
            for values in spool.blocks(io_rows):
                w.append(values)
            w.close()
            spool.delete()


class _IdMap:
    """Final slice id of each provisional id, on disk, looked up in ascending order of ids."""

    def __init__(self, store: ColumnStore, page_rows: int) -> None:
        self.store, self.page_rows = store, page_rows
        self._page, self._values = -1, np.empty(0, np.int64)

    def remap_sorted(self, ids: np.ndarray) -> np.ndarray:
        """Final ids of ascending provisional ids; ids of no slice stay as they are (left dangling
        on purpose, as ``TraceBuilder`` does: the self-check reports them)."""
        out = ids.astype(np.int64, copy=True)
        lo, hi = np.searchsorted(ids, [0, self.store.rows], "left")
        valid = out[lo:hi]
        if len(valid) == 0:
            return out
        pages = valid // self.page_rows
        cuts = np.concatenate(([0], np.flatnonzero(pages[1:] != pages[:-1]) + 1, [len(valid)]))
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            page = int(pages[a])
            if page != self._page:
                first = page * self.page_rows
                self._page, self._values = page, self.store.read(first, first + self.page_rows)["new"]
            valid[a:b] = self._values[valid[a:b] - page * self.page_rows]
        return out


class _Finalizer:
    """One finalization: reads the staging area table by table and writes the final tables."""

    def __init__(self, staged: H5File, out: H5File, scratch: Scratch, limits: FinalizeLimits) -> None:
        self.staged, self.out, self.scratch, self.limits = staged, out, scratch, limits
        self.rows = {sch.name: self._staged_rows(sch) for sch in (*S.TABLES, *S.TRUTH_TABLES)}

    def run(self) -> dict[str, int]:
        """Write every table; returns their rows."""
        self._strings()
        ids = self._slices()
        for sch in (*S.TABLES, *S.TRUTH_TABLES):
            group = "truth/" if sch in S.TRUTH_TABLES else ""
            if sch.name in S.OPTIONAL_TABLES and not self.rows[sch.name]:
                continue
            if sch is S.FLOWS:
                self._remapped_flows(ids)
            elif sch in (S.TRUTH_OPS, S.OP_COUNTERS):
                self._remapped_by_slice(sch, group, ids)
            elif sch.name in SORTED:
                keys, run_keys, index = SORTED[sch.name]
                self._sorted(sch, keys, group, run_keys, index)
            elif sch is not S.SLICES and (self.rows[sch.name] or sch.name not in S.OPTIONAL_TABLES):
                self._as_staged(sch, group)
        ids.store.delete()
        return dict(self.rows)

    # -- reading the staging area -----------------------------------------------------------
    def _staged_rows(self, sch: S.TableSchema) -> int:
        if not self.staged.has(f"staging/{sch.name}"):
            return 0
        return min(self.staged.length(f"staging/{sch.name}/{c}") for c in sch.names)  # a torn append keeps whole rows

    def _staged(self, sch: S.TableSchema, row: bool = False) -> Iterator[Columns]:
        n, step = self.rows[sch.name], self.limits.sort.run_rows
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            block = {c: self.staged.read(f"staging/{sch.name}/{c}", lo, hi).astype(sch.dtype(c), copy=False)
                     for c in sch.names}
            if row:
                block[ROW] = np.arange(lo, hi, dtype=np.int64)
            yield block

    def _sorter(self, *keys: str, written: bool = False) -> ExternalSorter:
        """A sorter by ``keys``; one whose rows are ``written`` to the output tracks their ranges."""
        return ExternalSorter(keys, self.scratch, self.limits.sort, track_ranges=written)

    # -- tables -----------------------------------------------------------------------------
    def _strings(self) -> None:
        st = self.staged
        if st.has("staging/strings/blob"):
            strings = StringTable.from_arrays(st.read("staging/strings/blob"), st.read("staging/strings/offsets"))
        else:
            strings = StringTable()
        blob, offsets = strings.to_arrays()
        self.out.create("strings/blob", blob, 1 << 20)
        self.out.create("strings/offsets", offsets, CHUNK_ROWS)

    def _slices(self) -> _IdMap:
        """Sort slices by (track, depth, start, provisional id), computing missing depths first;
        returns the map of provisional to final ids."""
        final = self._sorter("track", "depth", "start_ns", ROW, written=True)
        undepthed = self._sorter("track", "start_ns", "negdur", ROW)  # assign_depths' order
        for block in self._staged(S.SLICES, row=True):
            missing = block["depth"] == NO_DEPTH
            if missing.any():
                m = take(block, missing)
                m["negdur"] = -m["dur_ns"]
                undepthed.add(m)
                block = take(block, ~missing)
            final.add(block)
        if undepthed.rows:
            store = ColumnStore(self.scratch, {**dict(S.SLICES.columns), ROW: np.int64})
            store_with_depths(undepthed.sorted_blocks(), store, self.limits.io_rows)
            for block in store.blocks(self.limits.sort.run_rows):
                final.add(block)
            store.delete()
        table = self._table(S.SLICES, "", final, run_keys=("track", "depth"), index=True)
        inverse = self._sorter("old")
        for block in final.sorted_blocks():
            inverse.add({"old": block[ROW], "new": table.rows + np.arange(rows_of(block), dtype=np.int64)})
            table.append(block)
        table.close(self.limits.io_rows)
        ids = ColumnStore(self.scratch, {"new": np.int64})
        for block in inverse.sorted_blocks():
            ids.append(block)
        return _IdMap(ids, self.limits.io_rows)

    def _remapped_flows(self, ids: _IdMap) -> None:
        by_src = self._sorter("src", ROW)
        for block in self._staged(S.FLOWS, row=True):
            by_src.add(block)
        by_dst = self._sorter("dst", ROW)
        for block in by_src.sorted_blocks():
            by_dst.add({**block, "src": ids.remap_sorted(block["src"])})
        in_order = self._sorter(ROW, written=True)
        for block in by_dst.sorted_blocks():
            in_order.add({**block, "dst": ids.remap_sorted(block["dst"])})
        self._write_sorted(S.FLOWS, "", in_order)

    def _remapped_by_slice(self, sch: S.TableSchema, group: str, ids: _IdMap) -> None:
        """A table of rows about slices (truth_ops, op_counters): slice ids renumbered, in slice order."""
        by_old = self._sorter("slice", ROW)
        for block in self._staged(sch, row=True):
            by_old.add(block)
        by_new = self._sorter("slice", ROW, written=True)
        for block in by_old.sorted_blocks():
            by_new.add({**block, "slice": ids.remap_sorted(block["slice"])})
        self._write_sorted(sch, group, by_new)

    def _sorted(self, sch: S.TableSchema, keys: tuple[str, ...], group: str, run_keys: tuple[str, ...] = (),
                index: bool = False) -> None:
        sorter = self._sorter(*keys, ROW, written=True)
        for block in self._staged(sch, row=True):
            sorter.add(block)
        self._write_sorted(sch, group, sorter, run_keys, index)

    def _as_staged(self, sch: S.TableSchema, group: str) -> None:
        ranges = ValueRanges()
        for block in self._staged(sch):
            ranges.update(block)
        table = _TableOut(self.out, self.scratch, sch, group, self.rows[sch.name], ranges)
        for block in self._staged(sch):
            table.append(block)
        table.close(self.limits.io_rows)

    def _table(self, sch: S.TableSchema, group: str, sorter: ExternalSorter, run_keys: tuple[str, ...] = (),
               index: bool = False) -> _TableOut:
        return _TableOut(self.out, self.scratch, sch, group, sorter.rows, sorter.ranges, run_keys, index)

    def _write_sorted(self, sch: S.TableSchema, group: str, sorter: ExternalSorter, run_keys: tuple[str, ...] = (),
                      index: bool = False) -> None:
        table = self._table(sch, group, sorter, run_keys, index)
        for block in sorter.sorted_blocks():
            table.append(block)
        table.close(self.limits.io_rows)
