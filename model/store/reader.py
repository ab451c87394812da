"""Reading captures: ``open_capture`` reads only metadata and indexes; windows of one track read
only the chunks they need; ``load`` reads everything into a Trace. Every problem with the file
is a ``CaptureError`` naming the file, and nothing half-read is returned as if whole."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .. import schema as S
from ..errors import AccelviewError, CaptureError
from ..jsonvalues import bounded
from ..memory import capture_need, check_fits, table_need
from ..strings import StringTable
from ..table import Table
from ..trace import SliceRuns, Trace, window_in_run
from .format import (
    CHUNK_ROWS,
    DELTA_COLUMNS,
    DERIVED_COLUMNS,
    FORMAT_NAME,
    FORMAT_VERSION,
    OLDEST_READ_VERSION,
    anchor_rows,
    delta_decode,
)
from .h5io import H5File
from .writer import build_from_staging

Progress = Callable[[float], None]
Cancel = Callable[[], bool]


class LoadCancelled(AccelviewError):
    """Loading was cancelled by the user."""


class CaptureFile:
    """An open capture. Cheap to open: metadata, strings, tracks and the indexes only."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._checked_cols: set[str] = set()
        self._f = H5File(path, "r")
        try:
            self._open()
        except BaseException:
            self._f.close()
            raise

    def _open(self) -> None:
        attrs = self._f.attrs("/")
        fmt = attrs.get("format")
        if fmt != FORMAT_NAME:
            raise CaptureError(self.path, "an HDF5 file of another program, not an accelview capture")
        version = attrs.get("format_version")
        if not isinstance(version, int) or version < 1:
            raise CaptureError(self.path, f"has an invalid format version {version!r}")
        if version > FORMAT_VERSION:
            raise CaptureError(
                self.path, f"uses capture format version {version}, newer than this accelview reads "
                f"({FORMAT_VERSION}); upgrade accelview")
        if version < OLDEST_READ_VERSION:
            raise CaptureError(
                self.path, f"uses capture format version {version}, written by a pre-release accelview this one no "
                f"longer reads; capture it again")
        self.version = version
        self.attrs: dict[str, Any] = attrs
        metadata = attrs.get("metadata")
        if not isinstance(metadata, dict | None):
            raise CaptureError(self.path, f"its metadata attribute is a {type(metadata).__name__}, not a JSON object")
        self.metadata: dict[str, Any] = bounded(metadata or {})  # printed and saved again by recursive encoders
        self.finalized = self._flag(attrs, "finalized")
        self.complete = self._flag(attrs, "complete") and self.finalized
        self.incomplete_reason = str(attrs.get("incomplete_reason", "")) or (
            "" if self.finalized else "the recording was not closed (its process ended first); "
                                      "recovered what was flushed" + self._spool_hint())
        if not self.finalized:
            return
        self.strings = self._read_strings("strings")
        self.tracks = self._read_table(S.TRACKS)
        self.runs = SliceRuns(*(self._col(f"slices/runs/{c}", d) for c, d in
                                (("track", "i4"), ("depth", "u2"), ("begin", "i8"), ("end", "i8"))))
        self.n_slices = self._check_lengths("slices", S.SLICES)
        self._check_runs()
        self._anchors = self._read_anchors("slices")
        self._check_anchors("slices", self._anchors[0], self.n_slices, self.runs.begin)
        rows, values = self._anchors
        self._chunk_start = values[rows % CHUNK_ROWS == 0]
        if len(self._chunk_start) != -(-self.n_slices // CHUNK_ROWS):
            raise CaptureError(self.path, "the slice anchor index does not cover every chunk")

    def _flag(self, attrs: dict[str, Any], key: str) -> bool:
        value = attrs.get(key, True)
        if not isinstance(value, bool | int):
            raise CaptureError(self.path, f"its {key} attribute is a {type(value).__name__}, not true or false")
        return bool(value)

    # -- low-level reads with validation ----------------------------------------------------
    def _col(self, name: str, dtype: str, lo: int | None = None, hi: int | None = None) -> np.ndarray:
        if name not in self._checked_cols:
            self._check_col(name, dtype)
            self._checked_cols.add(name)
        return self._f.read(name, lo, hi).astype(dtype, copy=False)

    def _check_col(self, name: str, dtype: str) -> None:
        if not self._f.has(name):
            raise CaptureError(self.path, f"missing dataset /{name}")
        stored, want = self._f.dtype(name), np.dtype(dtype)
        # Integers may be stored narrower than they are held (the writer picks the narrowest type).
        fits = (stored.kind in "iu" and want.kind in "iu" and stored.itemsize <= want.itemsize) or (
            stored.kind == want.kind == "f" and stored.itemsize <= want.itemsize)
        if not fits:
            raise CaptureError(self.path, f"dataset /{name} has type {stored}, expected {want}")

    def _read_anchors(self, table: str) -> tuple[np.ndarray, np.ndarray]:
        rows, values = self._col(f"{table}/anchor_row", "i8"), self._col(f"{table}/anchor_value", "i8")
        if len(rows) != len(values) or (len(rows) and (rows[0] != 0 or (np.diff(rows) <= 0).any())):
            raise CaptureError(self.path, f"damaged anchor index of /{table}")
        return rows, values

    def _check_anchors(self, table: str, rows: np.ndarray, n: int, run_begins: np.ndarray) -> None:
        """The anchors must be exactly the rows the writer anchors: anything else decodes wrong
        timestamps silently."""
        if not np.array_equal(rows, anchor_rows(n, run_begins)):
            raise CaptureError(self.path, f"damaged anchor index of /{table}: it does not anchor every run and chunk")

    def _decode(self, table: str, stored: np.ndarray, first_row: int) -> np.ndarray:
        rows, values = self._anchors if table == "slices" else self._read_anchors(table)
        try:
            return delta_decode(stored, first_row, rows, values)
        except ValueError as e:
            raise CaptureError(self.path, f"damaged anchor index of /{table}: {e}") from None

    def _spool_hint(self) -> str:
        """For a recording whose service spooled the records to convert them later: where the
        rest is, and how to convert it."""
        name = (self.metadata.get("capture") or {}).get("spool")
        spool = Path(self.path).with_name(str(name)) if name else None
        if spool is None or not spool.is_file():
            return ""
        return f"; the rest of its records are in {spool}: accelview convert {spool} {self.path} --force"

    def _read_strings(self, group: str) -> StringTable:
        try:
            return StringTable.from_arrays(self._col(f"{group}/blob", "u1"), self._col(f"{group}/offsets", "i8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise CaptureError(self.path, f"damaged string table: {e}") from None

    def _check_lengths(self, group: str, sch: S.TableSchema) -> int:
        lengths = set()
        for c in sch.names:
            if (sch.name, c) not in DERIVED_COLUMNS:
                if not self._f.has(f"{group}/{c}"):
                    raise CaptureError(self.path, f"missing dataset /{group}/{c}")
                lengths.add(self._f.length(f"{group}/{c}"))
        if len(lengths) > 1:
            raise CaptureError(self.path, f"the columns of /{group} have different lengths {sorted(lengths)}")
        return lengths.pop() if lengths else 0

    def _check_runs(self) -> None:
        r = self.runs
        ok = (len(r.begin) == len(r.end) == len(r.track) == len(r.depth)) and (
            (len(r.begin) == 0 and self.n_slices == 0)
            or (len(r.begin) > 0 and r.begin[0] == 0 and r.end[-1] == self.n_slices
                and np.array_equal(r.begin[1:], r.end[:-1]) and bool((r.end > r.begin).all())))
        if not ok:
            raise CaptureError(self.path, "the slice run index does not cover the slices table")

    def _read_table(self, sch: S.TableSchema, group: str = "", lo: int | None = None,
                    hi: int | None = None) -> Table:
        prefix = f"{group}{sch.name}"
        if group == "" and sch.name == "slices":
            raise ValueError("use load() or window() for slices")
        self._check_lengths(prefix, sch)
        cols = {}
        for c, d in sch.columns:
            data = self._col(f"{prefix}/{c}", "i8" if (sch.name, c) in DELTA_COLUMNS else d, lo, hi)
            if (sch.name, c) in DELTA_COLUMNS:
                data = self._decode(sch.name, data, lo or 0)
            cols[c] = data
        if lo is None and hi is None and any((sch.name, c) in DELTA_COLUMNS for c in sch.names):
            track = cols["track"]
            self._check_anchors(sch.name, self._read_anchors(sch.name)[0], len(track),
                                SliceRuns.of(track, np.zeros(len(track), np.uint16)).begin)
        return Table(sch, cols)

    # -- public queries ---------------------------------------------------------------------
    def window(self, track: int, t0: int, t1: int) -> tuple[np.ndarray, Table]:
        """Slice ids and rows of ``track`` overlapping [t0, t1), read chunk by chunk from disk."""
        self._require_finalized()
        ids: list[np.ndarray] = []
        for _depth, b, e in self.runs.of_track(track):
            lo_b, hi_b = self._candidate_rows(b, e, t0, t1)
            if hi_b <= lo_b:
                continue
            a0 = self._anchor_at_or_before(lo_b)
            start = self._decode("slices", self._col("slices/start_ns", "i8", a0, hi_b), a0)[lo_b - a0:]
            dur = self._col("slices/dur_ns", "i8", lo_b, hi_b)
            lo, hi = window_in_run(start, dur, t0, t1)
            ids.append(np.arange(lo_b + lo, lo_b + hi, dtype=np.int64))
        rows = np.concatenate(ids) if ids else np.empty(0, np.int64)
        return rows, self._slice_rows(rows)

    def _candidate_rows(self, b: int, e: int, t0: int, t1: int) -> tuple[int, int]:
        """Narrow the run [b, e) to whole chunks that can hold the window, from the sparse index."""
        k0, k1 = -(-b // CHUNK_ROWS), (e - 1) // CHUNK_ROWS  # chunks whose first row lies in the run
        if k1 < k0:
            return b, e
        firsts = self._chunk_start[k0 : k1 + 1]
        below = int(np.searchsorted(firsts, t0, "left"))  # chunks starting before t0
        above = int(np.searchsorted(firsts, t1, "left"))  # first chunk starting at/after t1
        lo = b if below == 0 else (k0 + below - 1) * CHUNK_ROWS
        hi = e if above > k1 - k0 else (k0 + above) * CHUNK_ROWS
        return max(lo, b), min(hi, e)

    def _anchor_at_or_before(self, row: int) -> int:
        rows = self._anchors[0]
        return int(rows[np.searchsorted(rows, row, "right") - 1])

    def _slice_rows(self, rows: np.ndarray) -> Table:
        if len(rows) == 0:
            return Table.empty(S.SLICES)
        lo, hi = int(rows[0]), int(rows[-1]) + 1
        if hi - lo > 4 * len(rows) + CHUNK_ROWS:  # spread over depths: read each run's part
            parts = [self._slice_rows(r) for r in np.split(rows, np.flatnonzero(np.diff(rows) != 1) + 1)]
            return Table(S.SLICES, {c: np.concatenate([p[c] for p in parts]) for c in S.SLICES.names})
        full = self._read_slices(lo, hi)
        return full.take(rows - lo)

    def _read_slices(self, lo: int, hi: int) -> Table:
        a0 = self._anchor_at_or_before(lo)
        cols = {"start_ns": self._decode("slices", self._col("slices/start_ns", "i8", a0, hi), a0)[lo - a0:]}
        for c, d in S.SLICES.columns:
            if c not in cols and ("slices", c) not in DERIVED_COLUMNS:
                cols[c] = self._col(f"slices/{c}", d, lo, hi)
        r = self.runs
        r0, r1 = int(np.searchsorted(r.end, lo, "right")), int(np.searchsorted(r.begin, hi, "left"))
        rows = np.minimum(r.end[r0:r1], hi) - np.maximum(r.begin[r0:r1], lo)
        cols["track"], cols["depth"] = np.repeat(r.track[r0:r1], rows), np.repeat(r.depth[r0:r1], rows)
        return Table(S.SLICES, cols)

    def memory_need(self) -> int:
        """Estimated peak memory of ``load``, from the row counts (each checked against the
        file's size first, so a column claiming more rows than the file holds counts nothing
        here and is refused by the read)."""
        if not self.finalized:  # the staging area: every column widened to 8 bytes on the way
            return capture_need(self._rows(name) * 8 for name in self._f.datasets())
        need = [table_need(S.SLICES, self.n_slices)]
        for sch in (*S.TABLES, *S.TRUTH_TABLES):
            if sch is not S.SLICES:
                group = "truth/" if sch in S.TRUTH_TABLES else ""
                need.append(table_need(sch, self._rows(f"{group}{sch.name}/{sch.columns[0][0]}")))
        return capture_need(need)

    def _rows(self, name: str) -> int:
        try:
            return self._f.length(name) if self._f.has(name) else 0
        except CaptureError:
            return 0

    def load(self, progress: Progress | None = None, cancel: Cancel | None = None) -> Trace:
        """Read the whole capture into a Trace and check its invariants; refused before
        reading when it needs more memory than the system has left."""
        check_fits(self.path, self.memory_need())
        if not self.finalized:
            try:
                trace = build_from_staging(self._f, self.metadata)
            except (ValueError, UnicodeDecodeError) as e:
                raise CaptureError(self.path, f"damaged staging area: {e}") from None
            trace.complete, trace.incomplete_reason = False, self.incomplete_reason
            return self._checked(trace)
        steps = [*S.TABLES, *S.TRUTH_TABLES]
        tables: dict[str, Table] = {}
        truth: dict[str, Table] = {}
        for i, sch in enumerate(steps):
            if cancel is not None and cancel():
                raise LoadCancelled(f"{self.path}: loading cancelled")
            if sch is S.TRACKS:
                tables["tracks"] = self.tracks
            elif sch is S.SLICES:
                tables["slices"] = self._read_slices(0, self.n_slices) if self.n_slices else Table.empty(S.SLICES)
            elif sch in S.TRUTH_TABLES:
                if self._f.has(f"truth/{sch.name}"):
                    truth[sch.name] = self._read_table(sch, "truth/")
            elif self.version < S.ADDED_IN_VERSION.get(sch.name, 0) or (
                    sch.name in S.OPTIONAL_TABLES and not self._f.has(sch.name)):  # written without it
                tables[sch.name] = Table.empty(sch)
            else:
                tables[sch.name] = self._read_table(sch)
            if progress is not None:
                progress((i + 1) / len(steps))
        trace = Trace(strings=self.strings, tables=tables, truth=truth, metadata=self.metadata,
                      complete=self.complete, incomplete_reason=self.incomplete_reason, source=self.path)
        return self._checked(trace)

    def _checked(self, trace: Trace) -> Trace:
        problems = trace.self_check()
        if problems:
            more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
            raise CaptureError(self.path, f"invalid capture: {problems[0]}{more}")
        return trace

    def _require_finalized(self) -> None:
        if not self.finalized:
            raise CaptureError(self.path, "the capture was not closed; load() it to recover its data")

    def close(self) -> None:
        """Close the file."""
        self._f.close()

    def __enter__(self) -> CaptureFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_capture(path: str | Path) -> CaptureFile:
    """Open a capture lazily (metadata and indexes only)."""
    return CaptureFile(path)


def load_capture(path: str | Path, progress: Progress | None = None, cancel: Cancel | None = None) -> Trace:
    """Read a whole capture into memory."""
    with CaptureFile(path) as f:
        return f.load(progress, cancel)
