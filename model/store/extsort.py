"""External merge sort of column blocks: sorts any number of rows in bounded memory.

Rows are added block by block; every ``run_rows`` of them are sorted in memory and written to
scratch files as a run; ``sorted_blocks`` then merges the runs (``fan_in`` at a time, in
several passes when there are more) and yields the rows in order, block by block. The sort is
lexicographic on the key columns; give a last key that is unique (a row number) when ties
must keep their order, as ``numpy.lexsort`` would. Nothing touches disk while all rows fit in
one run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .scratch import Columns, ColumnStore, Scratch, ValueRanges


@dataclass(frozen=True)
class SortLimits:
    """Memory bounds of an external sort, in rows."""

    run_rows: int = 1 << 18  # rows sorted in memory at once
    merge_rows: int = 1 << 18  # rows held, over all runs together, while merging
    fan_in: int = 64  # runs merged at once


def take(cols: Mapping[str, np.ndarray], rows: np.ndarray | slice) -> Columns:
    """The given rows of every column."""
    return {c: v[rows] for c, v in cols.items()}


def concat(blocks: Sequence[Mapping[str, np.ndarray]]) -> Columns:
    """Blocks of the same columns, one after the other."""
    if len(blocks) == 1:
        return dict(blocks[0])
    return {c: np.concatenate([b[c] for b in blocks]) for c in blocks[0]}


def rows_of(cols: Mapping[str, np.ndarray]) -> int:
    """Number of rows of a block."""
    return len(next(iter(cols.values()))) if cols else 0


def is_sorted(cols: Mapping[str, np.ndarray], keys: Sequence[str]) -> bool:
    """True when the rows are in lexicographic order of ``keys``."""
    n = rows_of(cols)
    if n < 2:
        return True
    tied = np.ones(n - 1, dtype=bool)  # rows i and i+1 equal on the keys so far
    for k in keys:
        a, b = cols[k][:-1], cols[k][1:]
        if (tied & (b < a)).any():
            return False
        tied &= b == a
    return True


def sort_block(cols: Mapping[str, np.ndarray], keys: Sequence[str]) -> Columns:
    """The rows of one block in order of ``keys`` (stable)."""
    if is_sorted(cols, keys):
        return dict(cols)
    return take(cols, np.lexsort([cols[k] for k in reversed(keys)]))


class ExternalSorter:
    """Sorts rows added with ``add`` by ``keys``; ``sorted_blocks`` yields them in order, once.

    Runs are row ranges of one scratch store (so a sort opens a file per column, not per run)."""

    def __init__(self, keys: Sequence[str], scratch: Scratch, limits: SortLimits = SortLimits(),
                 track_ranges: bool = False) -> None:
        self.keys = tuple(keys)
        self.track_ranges = track_ranges
        self.limits = limits
        self._scratch = scratch
        self._pending: list[Columns] = []
        self._pending_rows = 0
        self._store: ColumnStore | None = None
        self._runs: list[tuple[int, int]] = []
        self.rows = 0
        self.ranges = ValueRanges()  # of the integer columns added, if ``track_ranges``

    def add(self, cols: Mapping[str, np.ndarray]) -> None:
        """Add a block of rows (the same columns every time)."""
        n = rows_of(cols)
        if self.track_ranges:
            self.ranges.update(cols)
        at = 0
        while at < n:
            take_n = min(n - at, self.limits.run_rows - self._pending_rows)
            self._pending.append(take(cols, slice(at, at + take_n)) if take_n < n else dict(cols))
            self._pending_rows += take_n
            self.rows += take_n
            at += take_n
            if self._pending_rows >= self.limits.run_rows:
                self._spill()

    def _spill(self) -> None:
        if not self._pending_rows:
            return
        block = sort_block(concat(self._pending), self.keys)
        self._pending, self._pending_rows = [], 0
        if self._store is None:
            self._store = ColumnStore(self._scratch, {c: v.dtype for c, v in block.items()})
        begin = self._store.rows
        self._store.append(block)
        self._runs.append((begin, self._store.rows))

    def sorted_blocks(self) -> Iterator[Columns]:
        """All rows in order, in blocks of at most ``merge_rows`` (or one run) rows."""
        if self._store is None:
            if self._pending_rows:
                yield sort_block(concat(self._pending), self.keys)
            self._pending, self._pending_rows = [], 0
            return
        self._spill()
        store, runs = self._store, self._runs
        self._store, self._runs = None, []
        try:
            while len(runs) > self.limits.fan_in:  # merge groups of runs into longer runs first
                merged = ColumnStore(self._scratch, store.dtypes)
                merged_runs = []
                for i in range(0, len(runs), self.limits.fan_in):
                    begin = merged.rows
                    for block in merge_runs(store, runs[i : i + self.limits.fan_in], self.keys,
                                            self.limits.merge_rows):
                        merged.append(block)
                    merged_runs.append((begin, merged.rows))
                store.delete()
                store, runs = merged, merged_runs
            yield from merge_runs(store, runs, self.keys, self.limits.merge_rows)
        finally:
            store.delete()


class _Cursor:
    """A buffered reader of one sorted run, with the keys of its next and last buffered rows."""

    def __init__(self, store: ColumnStore, run: tuple[int, int], rows: int, keys: tuple[str, ...]) -> None:
        self.store, self.rows, self.keys = store, rows, keys
        self.next_row, self.stop = run
        self.buf: Columns = {}
        self.at = self.end = 0  # buffered rows [at, end) are not taken yet
        self.first: tuple = ()
        self.last: tuple = ()

    def ready(self) -> bool:
        """Make sure the buffer holds rows; False when the run is used up."""
        if self.at < self.end:
            return True
        if self.next_row >= self.stop:
            return False
        self.buf = self.store.read(self.next_row, min(self.stop, self.next_row + self.rows))
        self.at, self.end = 0, rows_of(self.buf)
        self.next_row += self.end
        self.first, self.last = self._key(0), self._key(self.end - 1)
        return True

    def _key(self, row: int) -> tuple:
        return tuple(self.buf[k][row].item() for k in self.keys)

    def count_up_to(self, bound: tuple) -> int:
        """How many buffered rows (not yet taken) have a key <= ``bound``."""
        if self.first > bound:
            return 0
        if self.last <= bound:
            return self.end - self.at
        lo, hi = self.at, self.end
        for k, b in zip(self.keys, bound, strict=True):
            col = self.buf[k]
            lo, hi = lo + int(np.searchsorted(col[lo:hi], b, "left")), lo + int(np.searchsorted(col[lo:hi], b, "right"))
            if lo == hi:
                break
        return hi - self.at

    def take(self, n: int) -> Columns:
        """The next ``n`` buffered rows."""
        out = take(self.buf, slice(self.at, self.at + n))
        self.at += n
        if self.at < self.end:
            self.first = self._key(self.at)
        return out


def merge_runs(store: ColumnStore, runs: Sequence[tuple[int, int]], keys: tuple[str, ...],
               merge_rows: int) -> Iterator[Columns]:
    """Merge sorted runs (row ranges of ``store``) into one sorted stream of blocks, holding
    about ``merge_rows`` rows.

    Each round takes, from every run, the buffered rows up to the smallest last buffered key:
    no row still on disk can sort before them, and at least one buffer is used up."""
    per_run = max(1, merge_rows // max(len(runs), 1))
    active = [c for c in (_Cursor(store, r, per_run, keys) for r in runs) if c.ready()]
    while active:
        if len(active) == 1:
            c = active[0]
            while c.ready():
                yield c.take(c.end - c.at)
            return
        bound = min(c.last for c in active)
        pieces = [c.take(n) for c in active if (n := c.count_up_to(bound))]
        yield pieces[0] if len(pieces) == 1 else sort_block(concat(pieces), keys)
        active = [c for c in active if c.ready()]
