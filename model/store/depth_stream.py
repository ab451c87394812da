"""Nesting depths of slices computed block by block, for captures larger than memory.

The result is exactly ``nesting.assign_depths``'s: for each track, slices ordered by (start,
-duration, provisional id) get as depth the number of earlier slices still open at their start
when that puts no two overlapping slices at one depth (proper nesting), and otherwise — for the
whole track — the depth of the stack walk. The first is computed vectorised per block with
the ends of the slices still open carried over; a track found not to nest properly is walked
again afterwards with the stack. (Slices of negative duration, which make a capture invalid,
may get other depths than ``assign_depths`` gives them.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from ..nesting import ended_before, slice_ends, stack_depths
from .scratch import Columns, ColumnStore

MAX_DEPTH = 65535
PIECE_ROWS = 1 << 16  # rows whose depths are computed at once (a dozen temporary arrays of them)
_NEVER = np.iinfo(np.int64).min


class _NestedTrack:
    """The open-slice count of one track's slices, carried from block to block."""

    def __init__(self) -> None:
        self.open_ends = np.empty(0, np.int64)  # ends of earlier slices after the last start seen
        self.last_end = np.full(16, _NEVER, np.int64)  # end of the latest slice at each depth
        self.nests = True

    def depths(self, s: np.ndarray, e: np.ndarray) -> np.ndarray:
        """Depths of the next slices (sorted by start, -duration); sets ``nests`` False (and
        stops computing) once they do not nest properly."""
        n = len(s)
        if not self.nests or n == 0:
            return np.zeros(n, np.int64)
        carried = np.sort(self.open_ends)  # earlier blocks' slices still open, each one depth more
        depth = np.arange(n) - ended_before(s, e) + (len(carried) - np.searchsorted(carried, s, "right"))
        if depth.min() < 0 or depth.max() > MAX_DEPTH or not self._no_overlap(depth, s, e):
            self.nests = False
            self.open_ends = np.empty(0, np.int64)
            return np.zeros(n, np.int64)
        ends = np.concatenate((carried, e))
        self.open_ends = ends[ends > s[-1]]
        return depth

    def _no_overlap(self, depth: np.ndarray, s: np.ndarray, e: np.ndarray) -> bool:
        """True when no slice starts before the previous one of its depth ended."""
        if depth.max() >= len(self.last_end):
            grown = np.full(int(depth.max()) + 1, _NEVER, np.int64)
            grown[: len(self.last_end)] = self.last_end
            self.last_end = grown
        o = np.argsort(depth, kind="stable")
        d, so, eo = depth[o], s[o], e[o]
        first = np.concatenate(([True], d[1:] != d[:-1]))
        prev_end = np.where(first, self.last_end[d], np.concatenate(([_NEVER], eo[:-1])))
        if (so < prev_end).any():
            return False
        last = np.concatenate((d[1:] != d[:-1], [True]))
        self.last_end[d[last]] = eo[last]
        return True


def _pieces(blocks: Iterable[Columns], rows: int) -> Iterator[Columns]:
    """The blocks cut into pieces of at most ``rows`` rows."""
    for block in blocks:
        n = len(block["track"])
        if n <= rows:
            yield block
        else:
            for lo in range(0, n, rows):
                yield {c: v[lo : lo + rows] for c, v in block.items()}


def store_with_depths(blocks: Iterable[Columns], store: ColumnStore, io_rows: int) -> None:
    """Append slices sorted by (track, start, -duration, id) to ``store`` with their depths.

    ``blocks`` hold the slice columns ``track``, ``start_ns``, ``dur_ns`` and ``depth`` (replaced)
    and whatever else the store holds; tracks that do not nest properly are walked with the stack
    once all rows are stored."""
    walk: list[tuple[int, int]] = []  # row ranges of the tracks to walk with the stack
    track, first_row, state = None, 0, _NestedTrack()
    for block in _pieces(blocks, PIECE_ROWS):
        t = block["track"]
        s = block["start_ns"].astype(np.int64, copy=False)
        e = slice_ends(s, block["dur_ns"])
        depth = np.empty(len(t), np.uint16)
        cuts = np.concatenate(([0], np.flatnonzero(t[1:] != t[:-1]) + 1, [len(t)]))
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            if int(t[a]) != track:
                if track is not None and not state.nests:
                    walk.append((first_row, store.rows + a))
                track, first_row, state = int(t[a]), store.rows + a, _NestedTrack()
            depth[a:b] = state.depths(s[a:b], e[a:b])
        block = dict(block)
        block["depth"] = depth
        store.append(block)
    if track is not None and not state.nests:
        walk.append((first_row, store.rows))
    for a, b in walk:
        stack: list[int] = []
        for lo in range(a, b, io_rows):
            cols = store.read(lo, min(b, lo + io_rows), ("start_ns", "dur_ns"))
            s = cols["start_ns"].astype(np.int64, copy=False)
            store.overwrite("depth", lo, stack_depths(s.tolist(), slice_ends(s, cols["dur_ns"]).tolist(), stack))
