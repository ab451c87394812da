"""Writing captures: ``write_capture`` for a whole Trace, ``CaptureWriter`` for streaming.

The streaming writer appends each batch to a staging area of the file and flushes it, so its
memory stays bounded and a writer that dies leaves a file the reader can still recover. On
``close`` it sorts everything into the final layout in bounded memory (``finalize``),
in a new file that replaces the old one atomically, so a crash during that step also keeps
the staged data.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import schema as S
from ..builder import NO_DEPTH, TraceBuilder
from ..errors import CaptureError
from ..strings import StringTable, encode_strings, valid_text, valid_texts
from ..table import Table
from ..trace import SliceRuns, Trace
from .finalize import FinalizeLimits, finalize_staged
from .format import (
    CHUNK_ROWS,
    DELTA_COLUMNS,
    DERIVED_COLUMNS,
    FORMAT_NAME,
    FORMAT_VERSION,
    anchor_rows,
    delta_encode,
)
from .h5io import H5File

TOOL_VERSION = "0.1.0"


def _refuse_existing(path: Path, overwrite: bool) -> None:
    if path.is_dir():
        raise CaptureError(path, "is a directory")
    if path.exists() and not path.is_file():  # a device (/dev/full), a FIFO: never replaced by a capture
        raise CaptureError(path, "is not a regular file (a capture is written beside it and renamed over it)")
    if path.exists() and not overwrite:
        raise CaptureError(path, "already exists (use --force to overwrite it)")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise CaptureError(path, f"cannot write in {parent}: {'not a folder' if parent.exists() else 'no such folder'}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CaptureError(path, f"cannot write in {parent}: permission denied")


def _root_attrs(metadata: Mapping[str, Any], complete: bool, reason: str, finalized: bool) -> dict[str, Any]:
    attrs = {
        "format": FORMAT_NAME, "format_version": FORMAT_VERSION, "tool_version": TOOL_VERSION,
        "chunk_rows": CHUNK_ROWS, "complete": complete, "incomplete_reason": valid_text(reason),
        "finalized": finalized, "metadata": valid_texts(dict(metadata)),
    }
    if not (metadata.get("capture") or {}).get("deterministic"):  # a deterministic capture: its inputs alone
        attrs["created"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    return attrs


def write_capture(trace: Trace, path: str | Path, overwrite: bool = False) -> None:
    """Write ``trace`` to ``path`` in the capture format (docs/FORMAT.md).

    Writes a temporary file beside ``path`` and renames it, so a failure never leaves half a
    capture under the final name. Refuses to replace an existing file unless ``overwrite``."""
    path = Path(path)
    _refuse_existing(path, overwrite)
    _write_replacing(path, lambda f: _write_final(f, trace))


def _write_replacing(path: Path, write: Callable[[H5File], object],
                     before_replace: Callable[[], None] = lambda: None) -> None:
    """Run ``write`` on a new file beside ``path``, then rename it over ``path``; on any failure
    the new file is removed and ``path`` is left as it was."""
    tmp = path.with_name(f".{path.name}.partial")
    try:
        with H5File(tmp, "w") as f:
            write(f)
        before_replace()
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise CaptureError(path, f"cannot write: {e.strerror or e}") from None
    except CaptureError as e:  # the temporary file could not be made: name the file the user asked for
        tmp.unlink(missing_ok=True)
        if e.path != str(tmp):
            raise
        raise CaptureError(path, f"cannot write: {e.problem}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_final(f: H5File, trace: Trace) -> None:
    f.set_attrs("/", **_root_attrs(trace.metadata, trace.complete, trace.incomplete_reason, True))
    blob, offsets = trace.strings.to_arrays()
    f.create("strings/blob", blob, 1 << 20)
    f.create("strings/offsets", offsets, CHUNK_ROWS)
    for group, tables in (("", trace.tables), ("truth/", trace.truth)):
        for name, table in tables.items():
            if name in S.OPTIONAL_TABLES and not len(table):
                continue
            for col in table.schema.names:
                if (name, col) in DERIVED_COLUMNS:
                    continue
                data = table[col]
                if (name, col) in DELTA_COLUMNS:
                    anchors = anchor_rows(len(data), _run_begins(trace.tables[name]))
                    f.create(f"{name}/anchor_row", anchors, CHUNK_ROWS)
                    f.create(f"{name}/anchor_value", data[anchors], CHUNK_ROWS)
                    data = delta_encode(data, anchors)
                f.create(f"{group}{name}/{col}", data, CHUNK_ROWS)
    _write_indexes(f, trace)


def _run_begins(table: Table) -> np.ndarray:
    """First rows of each (track, depth) run of a table sorted by them (depth only for slices)."""
    depth = table["depth"] if "depth" in table.schema.names else np.zeros(len(table), np.uint16)
    return SliceRuns.of(table.track, depth).begin


def _write_indexes(f: H5File, trace: Trace) -> None:
    runs = trace.runs
    for col, arr in (("track", runs.track), ("depth", runs.depth), ("begin", runs.begin), ("end", runs.end)):
        f.create(f"slices/runs/{col}", arr, CHUNK_ROWS)
    c = SliceRuns.of(trace.counters.track, np.zeros(len(trace.counters), np.uint16))
    for col, arr in (("track", c.track), ("begin", c.begin), ("end", c.end)):
        f.create(f"counters/runs/{col}", arr, CHUNK_ROWS)


@dataclass(frozen=True)
class CaptureSummary:
    """What ``CaptureWriter.close`` wrote: the file, its rows per table and how it ended."""

    path: Path
    rows: dict[str, int]
    complete: bool
    incomplete_reason: str
    metadata: dict[str, Any]


class CaptureWriter:
    """Stream a capture into ``path`` batch by batch with bounded memory.

    Use the embedded ``builder``'s ``strings`` and ``add_track``/``add_counter_track``/
    ``add_clock`` for the small tables; append the large ones with ``append(table, columns)``
    (raw columns of ``accelview.model.schema``; string columns as ids). Slice ids are the order of
    appending, as with TraceBuilder. ``flush()`` makes everything so far durable; ``close()``
    finalizes, in memory bounded by ``limits`` however large the capture. A file whose writer
    never closed is still readable (marked incomplete).
    """

    def __init__(self, path: str | Path, overwrite: bool = False, metadata: Mapping[str, Any] | None = None,
                 flush_rows: int = 1 << 18, limits: FinalizeLimits | None = None, staging: Path | None = None) -> None:
        """``staging``: stage the rows in that file, not in ``path``, which then holds a placeholder
        (an empty, unfinished capture with ``metadata``: where the records are, say) until the
        final file replaces it whole. A kill at any instant then leaves at ``path`` either the
        placeholder or the final capture, never a half-written file (HDF5 is not written in a
        way that survives a kill in the middle of an append)."""
        self.path = Path(path)
        self.limits = limits or FinalizeLimits()
        _refuse_existing(self.path, overwrite)
        self.staging = staging
        self.builder = TraceBuilder()  # holds the small tables and the string table
        self.builder.metadata.update(metadata or {})
        self._pending: dict[str, list[dict[str, np.ndarray]]] = {}
        self._pending_rows = 0
        self._flush_rows = flush_rows
        self._counts: dict[str, int] = {}
        self._strings_written = 0
        self._small_written: dict[str, int] = {}
        # no chunk cache: appends write whole chunks (see _stage); a cache kept each open column's
        # last chunks (1 MiB a column), and the service's memory grew with the run (120 MiB at 1M
        # events, 175 MiB at 10M; 77 and 80 without)
        attrs = _root_attrs(self.builder.metadata, False, "", False)
        if staging is not None:
            _write_replacing(self.path, lambda f: f.set_attrs("/", **attrs))
        self._f: H5File | None = H5File(self.staged_path, "w", chunk_cache_bytes=0)
        self._f.set_attrs("/", **attrs)
        self._f.flush()

    @property
    def staged_path(self) -> Path:
        """The file the rows are staged in until ``close``."""
        return self.staging if self.staging is not None else self.path

    @property
    def strings(self) -> StringTable:
        """The capture's string table."""
        return self.builder.strings

    def count(self, table: str) -> int:
        """Rows appended so far to a streamed table."""
        return self._counts.get(table, 0)

    def append(self, table: str, columns: Mapping[str, np.ndarray]) -> int:
        """Append rows to a large table (slices, flows, counters, instants, args, truth_*);
        returns the first row's provisional id."""
        sch = S.SCHEMAS[table]
        n = len(next(iter(columns.values())))
        cols = {c: np.broadcast_to(np.asarray(columns.get(c, NO_DEPTH if c == "depth" else -1 if c in (
            "correlation", "args") else 0), dtype=sch.dtype(c)), (n,)) for c in sch.names}
        self._pending.setdefault(table, []).append(cols)
        first = self._counts.get(table, 0)
        self._counts[table] = first + n
        self._pending_rows += n
        if self._pending_rows >= self._flush_rows:
            self._stage(whole_chunks=True)
        return first

    def _stage(self, whole_chunks: bool) -> None:
        """Append the pending rows to the staging area. With ``whole_chunks`` each table's rows go
        up to its last whole chunk only and the rest waits: a compressed chunk is then written
        once, where a part-filled one is read back, inflated and rewritten by the next append."""
        f = self._f
        assert f is not None
        left = 0
        for table, batches in list(self._pending.items()):
            names = S.SCHEMAS[table].names
            cols = {c: batches[0][c] if len(batches) == 1 else np.concatenate([b[c] for b in batches]) for c in names}
            n = len(cols[names[0]])
            staged = self._counts[table] - n
            k = max(0, (staged + n) // CHUNK_ROWS * CHUNK_ROWS - staged) if whole_chunks else n
            if k:
                for c in names:
                    f.append(f"staging/{table}/{c}", cols[c][:k], CHUNK_ROWS)
            if k < n:
                self._pending[table] = [{c: v[k:] for c, v in cols.items()}]
                left += n - k
            else:
                del self._pending[table]
        self._pending_rows = left
        if whole_chunks and left >= self._flush_rows:  # many tables, each short of a chunk
            self._stage(whole_chunks=False)

    def flush(self) -> None:
        """Write everything pending to the staging area and flush the file to disk."""
        if self._f is None:
            return
        f = self._f
        self._stage(whole_chunks=False)
        strings = self.strings.strings()[self._strings_written:]
        if strings:
            blob, offsets = encode_strings(strings)
            base = f.length("staging/strings/blob") if f.has("staging/strings/blob") else 0
            f.append("staging/strings/blob", blob, 1 << 20)
            f.append("staging/strings/offsets", offsets + base, CHUNK_ROWS)
            self._strings_written += len(strings)
        for name, table in self.builder.tables_so_far().items():
            done = self._small_written.get(name, 0)
            if len(table) > done:
                for col in table.schema.names:
                    f.append(f"staging/{name}/{col}", table[col][done:], CHUNK_ROWS)
                self._small_written[name] = len(table)
        f.set_attrs("/", metadata=valid_texts(dict(self.builder.metadata)))
        f.flush()

    def close(self, complete: bool = True, reason: str = "") -> CaptureSummary:
        """Finalize: sort the staged data into the final layout; returns what was written.

        The staged file is closed first and only read from then on, so if this process dies
        while finalizing, the file is left as a closed, recoverable, unfinalized capture."""
        if self._f is None:
            raise RuntimeError("capture writer already closed")
        self.flush()
        self._f.close()
        self._f = None
        metadata = dict(self.builder.metadata)
        rows: dict[str, int] = {}
        with H5File(self.staged_path, "r", chunk_cache_bytes=0) as staged:  # whole chunks are read once

            def finalize(out: H5File) -> None:
                out.set_attrs("/", **_root_attrs(metadata, complete, reason, True))
                rows.update(finalize_staged(staged, out, self.limits))

            _write_replacing(self.path, finalize, before_replace=staged.close)
        if self.staging is not None:  # the final file is in place: the staged copy is not needed
            self.staging.unlink(missing_ok=True)
        return CaptureSummary(self.path, rows, complete, reason, metadata)

    def discard(self) -> None:
        """Give up the staged rows (they cannot be written: a full disk): close the staging file as
        far as it closes and remove it. With a separate ``staging`` file the placeholder stays."""
        if self._f is not None:
            self._f.close()
            self._f = None
        if self.staging is not None:
            self.staging.unlink(missing_ok=True)

    def abandon(self) -> None:
        """Close the file without finalizing (what a crash leaves behind, for tests)."""
        if self._f is not None:
            self.flush()
            self._f.close()
            self._f = None


def build_from_staging(f: H5File, metadata: Mapping[str, Any]) -> Trace:
    """Rebuild a Trace from a file's staging area (used by close() and by crash recovery)."""
    if f.has("staging/strings/blob"):
        strings = StringTable.from_arrays(f.read("staging/strings/blob"), f.read("staging/strings/offsets"))
    else:
        strings = StringTable()
    b = TraceBuilder(strings)
    b.metadata.update(metadata)
    for sch in (*S.TABLES, *S.TRUTH_TABLES):
        if f.has(f"staging/{sch.name}"):
            n = min(f.length(f"staging/{sch.name}/{c}") for c in sch.names)  # a torn append keeps whole rows
            b.add_rows(sch.name, {c: f.read(f"staging/{sch.name}/{c}", 0, n).astype(sch.dtype(c)) for c in sch.names})
    return b.build(source=f.path)
