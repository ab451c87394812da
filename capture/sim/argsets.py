"""Argument sets made from templates plus per-set numeric columns, laid out for the args table.

Thousands of op slices share a few argument templates (op, shapes, dtype) and add their own
per-op counters. :class:`TemplateSets` gives their set ids at once and writes their rows later,
straight into the final args columns (:meth:`~.batch.TraceBatch.flush` allocates them once
for every set of the capture), so the rows are never built and then copied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

ARG_DTYPES = (("set", np.int32), ("key", np.int32), ("kind", np.uint8), ("int", np.int64), ("real", np.float64),
              ("str", np.int32))

Row = tuple[int, int, int, float, int]  # key, kind, int, real, str (without the set)


class TemplateSets:
    """One unshared argument set per entry of ``which``, numbered from ``first``: the rows of
    ``templates[which[i]]`` (``rows_of``), then per key of ``extra`` that column's i-th value.
    Sets are laid out row by row as 2-D grids, one per number of template rows (ids are given
    grid by grid), so the rows come out in set order and nothing needs sorting later."""

    def __init__(self, first: int, rows_of: Sequence[Sequence[Row]], which: np.ndarray,
                 extra: Sequence[tuple[int, np.ndarray]], real_kind: int, int_kind: int) -> None:
        n = len(which)
        self.rows_of, self.extra = rows_of, extra
        self.which = np.asarray(which, dtype=np.int64)
        self.widths = np.array([len(r) for r in rows_of], dtype=np.int64)
        self.extra_real = [bool(np.issubdtype(v.dtype, np.floating)) for _, v in extra]
        self.extra_kind = [real_kind if real else int_kind for real in self.extra_real]
        node_width = self.widths[self.which] if n else np.zeros(0, np.int64)
        self.order = np.argsort(node_width, kind="stable")
        self.ids = np.empty(n, dtype=np.int64)
        self.ids[self.order] = first + np.arange(n)
        self.first = first
        self.counts = np.bincount(node_width) if n else np.zeros(0, np.int64)
        self.rows = int(node_width.sum()) + n * len(extra)

    def write(self, out: Mapping[str, np.ndarray], at: int) -> None:
        """Write the rows into the args columns ``out`` from row ``at`` on (``rows`` of them);
        those rows of ``out`` must be zero (only values other than zero are written)."""
        m = len(self.extra)
        # each template's rows as five columns (key, kind, int, real, str), then the extra keys'
        # parts: their keys and kinds, zero values (the values are written over them)
        tails = ([k for k, _ in self.extra], self.extra_kind, [0] * m, [0.0] * m, [0] * m)
        parts = [[list(col) + tail for col, tail in zip(zip(*rows, strict=True), tails, strict=True)] if rows else
                 [list(tail) for tail in tails] for rows in self.rows_of]
        done, off = 0, at
        for width in np.flatnonzero(self.counts).tolist():
            c, w = int(self.counts[width]), width + m
            nodes = self.order[done:done + c]
            grid = {name: col[off:off + c * w].reshape(c, w) for name, col in out.items()}
            grid["set"][:] = np.arange(self.first + done, self.first + done + c, dtype=np.int32)[:, None]
            members = np.flatnonzero(self.widths == width)
            local = np.full(len(self.rows_of), -1, dtype=np.int64)
            local[members] = np.arange(len(members))
            pick = local[self.which[nodes]]
            for j, name in enumerate(("key", "kind", "int", "real", "str")):
                table = np.array([parts[t][j] for t in members.tolist()], dtype=out[name].dtype)
                varying = (table != table[0]).any(axis=0)
                if 4 * int(varying.sum()) > w:  # rows of many kinds
                    np.take(table, pick, axis=0, out=grid[name], mode="clip")  # "raise" buffers: 3x slower
                    continue
                # by bits: -0.0 is not left as the zero the column starts with
                nonzero = np.flatnonzero(varying | (table[0].view(f"u{table.itemsize}") != 0))
                if 4 * len(nonzero) > w:  # mostly the same row, not mostly zeros: a fill, then the columns that vary
                    _fill_rows(grid[name], table[0])
                    nonzero = np.flatnonzero(varying)
                for col in nonzero.tolist():  # ``out`` is zero elsewhere
                    grid[name][:, col] = table[:, col][pick] if varying[col] else table[0, col]
            for name, real in (("int", False), ("real", True)):  # the columns' values over the zeros
                mine = [j for j, is_real in enumerate(self.extra_real) if is_real == real]
                if len(mine) <= 2:  # a column or two: written in place
                    for j in mine:
                        grid[name][:, width + j] = self.extra[j][1][nodes]
                    continue
                lo, hi = mine[0], mine[-1] + 1  # a block over their span, transposed: each column written whole
                block = np.empty((hi - lo, c), dtype=out[name].dtype)
                for j in range(lo, hi):
                    if self.extra_real[j] == real:
                        np.take(self.extra[j][1], nodes, out=block[j - lo], mode="clip")
                    else:
                        block[j - lo] = 0  # the other kind's column: zero here, as the fill left it
                grid[name][:, width + lo:width + hi] = block.T
            done += c
            off += c * w

def _fill_rows(grid: np.ndarray, row: np.ndarray) -> None:
    """Every row of the C-contiguous 2-D ``grid`` set to ``row``: the row written once, then the
    filled part copied onto the rest, doubling (contiguous copies, faster than a broadcast of
    a short row)."""
    flat = grid.reshape(-1)
    w, total = len(row), flat.size
    if not total:
        return
    flat[:w] = row
    done = w
    while done < total:
        k = min(done, total - done)
        flat[done:done + k] = flat[:k]
        done += k
