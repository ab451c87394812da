"""The service's half of the wire protocol: frames from the child into a ``CaptureWriter``.

The child numbers strings and tracks in its own id spaces; ``Ingest`` maps them onto the
writer's (string columns and track references go through a lookup array, one numpy
``take`` per column) so that the service can add rows of its own. Slice and argument-set
ids are the child's: the service appends every slice and argument row in the order the
child sent them and adds none itself, so the flows and truth entries referring to them stay
valid. Clock rows are kept in memory and written at close with the last estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from accelview.model import schema as S
from accelview.model.store.writer import CaptureSummary, CaptureWriter
from accelview.model.strings import valid_text, valid_texts

from ..protocol import wire

TRACK_COLUMNS = {"slices": "track", "counters": "track", "instants": "track", "counter_tracks": "track",
                 "truth_idle": "track"}
SMALL_TABLES = ("tracks", "counter_tracks")


class Ingest:
    """Applies the child's frames to ``writer``; counts what it received."""

    def __init__(self, writer: CaptureWriter) -> None:
        self.writer = writer
        self.strings = np.zeros(0, dtype=np.int32)  # child string id → writer string id
        self.tracks = np.zeros(0, dtype=np.int32)  # child track id → writer track id
        self.clocks: list[list[Any]] = []
        self.stats: dict[str, Any] = {}
        self.end: dict[str, Any] | None = None
        self.rows = 0
        self.hello = False

    def handle(self, kind: bytes, meta: Mapping[str, Any], cols: dict[str, np.ndarray]) -> None:
        """Apply one frame."""
        w = self.writer
        if kind == wire.ROWS:
            self._rows(meta["table"], cols)
        elif kind == wire.STRINGS:
            if meta["first"] != len(self.strings):
                raise ValueError(f"capture stream: strings from {meta['first']} arrived after {len(self.strings)}")
            # a name UTF-8 cannot hold (os.fsdecode of a non-UTF-8 file name) is stored escaped
            ids = np.array([w.strings.intern(valid_text(s)) for s in meta["strings"]], dtype=np.int32)
            self.strings = np.concatenate((self.strings, ids))
        elif kind == wire.HELLO:
            self.hello = True
            w.builder.metadata.update(valid_texts(meta["metadata"]))
        elif kind == wire.CLOCKS:
            self.clocks = meta["clocks"]
        elif kind == wire.STATS:
            self.stats = dict(meta)
        elif kind == wire.END:
            self.end = dict(meta)

    def _rows(self, table: str, cols: dict[str, np.ndarray]) -> None:
        sch = S.SCHEMAS[table]
        for c in sch.names:
            if c in S.STRING_COLUMNS and c in cols:
                cols[c] = self.strings[cols[c]]
        key = TRACK_COLUMNS.get(table)
        if key is not None:
            cols[key] = self.tracks[cols[key]]
        if table == "tracks":  # new ids first: a track's parent may come in the same frame
            parent = cols["parent"]
            so_far = self.writer.builder.tables_so_far().get("tracks")
            first = len(so_far) if so_far is not None else 0
            self.tracks = np.concatenate((self.tracks, np.arange(first, first + len(parent), dtype=np.int32)))
            cols["parent"] = np.where(parent >= 0, self.tracks[np.maximum(parent, 0)], parent).astype(np.int32)
            self.writer.builder.add_rows("tracks", cols)
        elif table in SMALL_TABLES:
            self.writer.builder.add_rows(table, cols)
        else:
            self.writer.append(table, cols)
        self.rows += len(next(iter(cols.values()))) if cols else 0

    @property
    def dropped(self) -> dict[str, int]:
        """Records the child's rings dropped, per device."""
        return dict(self.stats.get("dropped", {}))

    def close(self, complete: bool, reason: str, extra: Mapping[str, Any] | None = None) -> CaptureSummary:
        """Write the clocks and the capture statistics, then finalize the file."""
        b = self.writer.builder
        for name, reference, offset, drift, error in self.clocks:
            b.add_clock(name, bool(reference), offset, drift, error)
        capture = dict(b.metadata.get("capture", {}))
        capture.update({"events": int(self.stats.get("events", 0)), "api_calls": int(self.stats.get("calls", 0)),
                        "dropped_records": self.dropped, "dropped_total": sum(self.dropped.values()),
                        **dict(extra or {})})
        b.metadata["capture"] = capture
        return self.writer.close(complete, reason)
