"""The capture file format, as constants and the column encodings (docs/FORMAT.md explains it).

Pure numpy: the h5py side is in ``h5io``, the layout logic in ``writer``/``reader``.
"""

from __future__ import annotations

import numpy as np

FORMAT_NAME = "accelview-capture"
FORMAT_VERSION = 3  # 2: narrow integer columns, timestamps delta-coded from anchors; 3: the op_counters table
OLDEST_READ_VERSION = 2  # older files than this are refused (version 1 was a pre-release layout)
CHUNK_ROWS = 16384  # rows per HDF5 chunk: a window read decompresses ~128 KB per column

# Time columns stored as differences from the previous row, restarting at anchor rows (the first
# row of every chunk and of every run of one track) whose absolute values are kept in a small
# index: sorted timestamps then need a narrow integer type and compress to a byte or two.
DELTA_COLUMNS = {("slices", "start_ns"), ("counters", "ts_ns"), ("instants", "ts_ns")}
# Columns not stored because the run index gives them: slices are sorted by (track, depth).
DERIVED_COLUMNS = {("slices", "track"), ("slices", "depth")}


def anchor_rows(n: int, run_begins: np.ndarray, chunk: int = CHUNK_ROWS) -> np.ndarray:
    """Rows whose value is stored absolutely: every chunk's first row and every run's first row."""
    rows = np.union1d(np.arange(0, n, chunk, dtype=np.int64), run_begins.astype(np.int64))
    return rows[rows < n]


def delta_encode(values: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """Row-to-row differences, 0 at the anchor rows (their values go to the anchor index)."""
    v = values.astype(np.int64, copy=False)
    out = np.zeros_like(v)
    if len(v):
        out[1:] = v[1:] - v[:-1]
        out[anchors] = 0
    return out


def delta_decode(stored: np.ndarray, first_row: int, anchors: np.ndarray, anchor_values: np.ndarray) -> np.ndarray:
    """Inverse of ``delta_encode`` for rows read from ``first_row``, which must be an anchor."""
    n = len(stored)
    lo, hi = np.searchsorted(anchors, first_row, "left"), np.searchsorted(anchors, first_row + n, "left")
    pos = anchors[lo:hi] - first_row
    if n == 0:
        return np.empty(0, np.int64)
    if len(pos) == 0 or pos[0] != 0:
        raise ValueError("delta-coded reads must start at an anchor row")
    # Deltas are 0 at anchors, so within a segment value = cumsum + (anchor value - cumsum there).
    cs = np.cumsum(stored, dtype=np.int64)
    offsets = anchor_values[lo:hi].astype(np.int64) - cs[pos]
    cs += np.repeat(offsets, np.diff(np.append(pos, n)))
    return cs


class StreamingDeltas:
    """``delta_encode`` and the run index of a sorted table, computed block by block in order.

    Runs are the stretches of rows with equal ``keys`` (track, or track and depth); their
    first rows and every chunk's first row are anchors."""

    def __init__(self, chunk: int = CHUNK_ROWS) -> None:
        self.chunk = chunk
        self.rows = 0
        self._last_value = 0
        self._last_key: tuple | None = None

    def push(self, values: np.ndarray, keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Encode the next rows: returns (deltas, anchor mask, run-start mask), all per row."""
        n = len(values)
        v = values.astype(np.int64, copy=False)
        run_start = np.zeros(n, dtype=bool)
        if n == 0:
            return np.zeros(0, np.int64), run_start, run_start
        for k in keys:
            run_start[1:] |= k[1:] != k[:-1]
        run_start[0] = self._last_key is None or self._last_key != tuple(k[0].item() for k in keys)
        anchor = run_start | ((self.rows + np.arange(n)) % self.chunk == 0)
        deltas = np.empty(n, np.int64)
        deltas[0] = v[0] - self._last_value
        deltas[1:] = v[1:] - v[:-1]
        deltas[anchor] = 0
        self.rows += n
        self._last_value = int(v[-1])
        self._last_key = tuple(k[-1].item() for k in keys)
        return deltas, anchor, run_start
