"""The trace's tables, declared once as data: each table's columns and their numpy dtypes.

The in-memory trace, the builder, the HDF5 writer and reader and docs/FORMAT.md all follow
these declarations; nothing else lists columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np


class TrackKind(IntEnum):
    """What a track (a lane of the timeline) stands for."""

    HOST = 0
    PROCESS = 1
    HOST_THREAD = 2
    RUNTIME_API = 3
    DRIVER_QUEUE = 4
    PCIE = 5
    DMA_ENGINE = 6
    DEVICE = 7
    EXEC_UNIT = 8
    COUNTER = 9
    NETWORK_LINK = 10
    GPU_STREAM = 11
    OTHER = 12

    @property
    def label(self) -> str:
        """Human-readable name, e.g. ``"runtime API"``."""
        return _LABELS.get(self, self.name.lower().replace("_", " "))


_LABELS = {TrackKind.RUNTIME_API: "runtime API", TrackKind.PCIE: "PCIe", TrackKind.DMA_ENGINE: "DMA engine",
           TrackKind.GPU_STREAM: "GPU stream"}


class ArgKind(IntEnum):
    """Type of one argument value in the args table."""

    INT = 0
    REAL = 1
    STR = 2


@dataclass(frozen=True)
class TableSchema:
    """A table's name and its ordered (column, dtype) pairs."""

    name: str
    columns: tuple[tuple[str, str], ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Column names in order."""
        return tuple(c for c, _ in self.columns)

    def dtype(self, column: str) -> np.dtype:
        """The numpy dtype of one column."""
        for c, d in self.columns:
            if c == column:
                return np.dtype(d)
        raise KeyError(f"{self.name} has no column {column!r}")


# Columns whose values are string-table ids.
STRING_COLUMNS = {"name", "category", "host", "unit", "block", "description", "key", "str", "limiter", "cause"}

TRACKS = TableSchema(
    "tracks",
    (("parent", "i4"), ("kind", "u1"), ("name", "i4"), ("host", "i4"), ("device", "i2"),
     ("clock", "i2"), ("sort", "i4")),
)
# Slices are sorted by (track, depth, start_ns); within one (track, depth) run they never overlap,
# so a window of a track is found with two binary searches per depth. A slice's id is its row.
SLICES = TableSchema(
    "slices",
    (("track", "i4"), ("start_ns", "i8"), ("dur_ns", "i8"), ("name", "i4"), ("category", "i2"),
     ("depth", "u2"), ("correlation", "i8"), ("args", "i4")),
)
FLOWS = TableSchema("flows", (("src", "i8"), ("dst", "i8"), ("name", "i4")))
COUNTER_TRACKS = TableSchema(
    "counter_tracks", (("track", "i4"), ("unit", "i4"), ("block", "i4"), ("description", "i4"))
)
COUNTERS = TableSchema("counters", (("track", "i4"), ("ts_ns", "i8"), ("value", "f8")))
INSTANTS = TableSchema(
    "instants", (("track", "i4"), ("ts_ns", "i8"), ("name", "i4"), ("category", "i2"), ("args", "i4"))
)
ARGS = TableSchema(
    "args", (("set", "i4"), ("key", "i4"), ("kind", "u1"), ("int", "i8"), ("real", "f8"), ("str", "i4"))
)
# The hardware counters a device reports for each op it dispatched, one row per op slice (as a
# table of columns, not as arguments: 11 numbers for each of tens of thousands of ops).
OP_COUNTER_COLUMNS: tuple[tuple[str, str], ...] = (
    ("elapsed_cycles", "i8"), ("dispatch_cycles", "i8"), ("active_cycles", "i8"), ("busy_cycles", "i8"),
    ("hbm_read_bytes", "i8"), ("hbm_write_bytes", "i8"), ("stall_memory_cycles", "i8"),
    ("stall_pipeline_cycles", "i8"), ("stall_latency_cycles", "i8"), ("flops", "f8"), ("burst_efficiency", "f8"),
)
OP_COUNTERS = TableSchema("op_counters", (("slice", "i8"), *OP_COUNTER_COLUMNS))
CLOCKS = TableSchema(
    "clocks",
    (("name", "i4"), ("reference", "u1"), ("offset_ns", "f8"), ("drift_ppm", "f8"), ("error_ns", "f8")),
)
CLOCK_SAMPLES = TableSchema(
    "clock_samples", (("clock", "i4"), ("ref_send_ns", "i8"), ("domain_ts", "i8"), ("ref_recv_ns", "i8"))
)
# A clock domain's alignment in linear pieces (after steps), rows of one clock in the order the
# clock ran; docs/FORMAT.md gives the convention.
CLOCK_SEGMENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("clock", "i4"), ("start_ns", "i8"), ("end_ns", "i8"), ("offset_ns", "f8"), ("drift_ppm", "f8"),
    ("error_ns", "f8"),
)
CLOCK_SEGMENTS = TableSchema("clock_segments", CLOCK_SEGMENT_COLUMNS)
TRUTH_OPS = TableSchema("truth_ops", (("slice", "i8"), ("limiter", "i4")))
TRUTH_IDLE = TableSchema(
    "truth_idle", (("track", "i4"), ("start_ns", "i8"), ("end_ns", "i8"), ("cause", "i4"))
)
TRUTH_CLOCKS = TableSchema("truth_clocks", (("clock", "i4"), ("offset_ns", "f8"), ("drift_ppm", "f8")))
TRUTH_CLOCK_SEGMENTS = TableSchema("truth_clock_segments", CLOCK_SEGMENT_COLUMNS)
# Per collective and participant (its device's top track): when it arrived, when the last one did, the end.
TRUTH_COLLECTIVES = TableSchema(
    "truth_collectives", (("collective", "i8"), ("track", "i4"), ("name", "i4"), ("arrival_ns", "i8"),
                          ("last_arrival_ns", "i8"), ("end_ns", "i8"))
)

# Tables every trace has, in file order. Truth tables live apart (HDF5 group /truth).
TABLES: tuple[TableSchema, ...] = (
    TRACKS, SLICES, FLOWS, COUNTER_TRACKS, COUNTERS, INSTANTS, ARGS, CLOCKS, CLOCK_SAMPLES, OP_COUNTERS,
    CLOCK_SEGMENTS,
)
# Tables a file of an older format version may lack (read as empty): the version that added them.
ADDED_IN_VERSION: dict[str, int] = {"op_counters": 3}
# Tables written only when they have rows (any version may lack them; absent reads as empty), so
# captures that have no use for them stay byte-for-byte what they were before the table existed.
OPTIONAL_TABLES = frozenset({"clock_segments", "truth_clock_segments", "truth_collectives"})
TRUTH_TABLES: tuple[TableSchema, ...] = (TRUTH_OPS, TRUTH_IDLE, TRUTH_CLOCKS, TRUTH_CLOCK_SEGMENTS, TRUTH_COLLECTIVES)
SCHEMAS: dict[str, TableSchema] = {s.name: s for s in (*TABLES, *TRUTH_TABLES)}
