"""The capture file format, as constants and the column encodings (docs/FORMAT.md explains it).

Pure numpy: the h5py side is in ``h5io``, the layout logic in ``capture_writer``/``capture_reader``.
"""

from __future__ import annotations

import numpy as np

FORMAT_NAME = "accelview-capture"
FORMAT_VERSION = 1
CHUNK_ROWS = 16384  # rows per HDF5 chunk: a window read decompresses ~128 KB per column

# Time columns stored as differences from the previous row, restarting at every chunk so one
# chunk decodes on its own (sorted timestamps then compress to a byte or two per row).
DELTA_COLUMNS = {("slices", "start_ns"), ("counters", "ts_ns"), ("instants", "ts_ns")}
# Columns not stored because the run index gives them: slices are sorted by (track, depth).
DERIVED_COLUMNS = {("slices", "track"), ("slices", "depth")}
# Sorted tables with a run index and a sparse per-chunk start index for window reads.
RUN_INDEXED = {"slices": "start_ns", "counters": "ts_ns"}


def delta_encode(values: np.ndarray, chunk: int = CHUNK_ROWS) -> np.ndarray:
    """Row-to-row differences; the first row of each chunk keeps its absolute value."""
    v = values.astype(np.int64, copy=False)
    out = np.empty_like(v)
    if len(v):
        out[0] = v[0]
        out[1:] = v[1:] - v[:-1]
        out[::chunk] = v[::chunk]
    return out


def delta_decode(stored: np.ndarray, first_row: int, chunk: int = CHUNK_ROWS) -> np.ndarray:
    """Inverse of ``delta_encode`` for rows read from ``first_row``, which must start a chunk."""
    if first_row % chunk:
        raise ValueError("delta-coded reads must start at a chunk boundary")
    cs = np.cumsum(stored, dtype=np.int64)
    if len(cs) > chunk:
        # Undo the carry from earlier chunks: each chunk restarts from its absolute first row.
        carry = np.concatenate(([0], cs[chunk - 1 :: chunk][: (len(cs) - 1) // chunk]))
        cs -= np.repeat(carry, chunk)[: len(cs)]
    return cs


def chunk_first_values(values: np.ndarray, chunk: int = CHUNK_ROWS) -> np.ndarray:
    """The value at the first row of each chunk: the sparse index that finds a window's chunks."""
    return values[::chunk].astype(np.int64, copy=True)
