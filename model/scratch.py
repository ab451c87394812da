"""Scratch space on disk for work bigger than memory: raw column files in a private folder.

Rows are plain native-endian records, one file per store, read and written with
``numpy.fromfile``/``tofile`` (never memory-mapped: mapped pages would count against the
process's resident memory). A ``ColumnStore`` holds rows of several columns; a ``Spool``
holds one column and its value range, to be copied into an HDF5 column of the narrowest type.
Files stay open while they are appended to; ``seal`` (or a read) closes them.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from itertools import count
from pathlib import Path
from typing import BinaryIO

import numpy as np

Columns = dict[str, np.ndarray]


class Scratch:
    """A private folder beside a given path, removed with everything in it by ``close``."""

    def __init__(self, beside: str | Path) -> None:
        beside = Path(beside)
        self.dir = Path(tempfile.mkdtemp(prefix=f".{beside.name}.", suffix=".scratch", dir=beside.parent))
        self._names = count()

    def path(self, stem: str) -> Path:
        """A fresh file path inside the folder."""
        return self.dir / f"{next(self._names)}.{stem}"

    def close(self) -> None:
        """Delete the folder and its files."""
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ColumnStore:
    """Rows of named columns of fixed dtypes, appended in blocks and read back by row range.

    Rows are stored as records (the columns interleaved) in one file, so a block is one write
    and one read; the columns read back are views of the record array."""

    def __init__(self, scratch: Scratch, dtypes: Mapping[str, np.dtype | str]) -> None:
        self.dtypes = {c: np.dtype(d) for c, d in dtypes.items()}
        widest_first = sorted(self.dtypes.items(), key=lambda cd: -cd[1].itemsize)  # no padding between fields
        self._record = np.dtype(widest_first, align=True)
        self._path = scratch.path("rows")
        self._out: BinaryIO | None = None
        self.rows = 0

    def append(self, cols: Mapping[str, np.ndarray]) -> None:
        """Append a block (every column of the store, all of one length)."""
        n = len(cols[next(iter(self.dtypes))])
        records = np.empty(n, self._record)
        for c in self.dtypes:
            records[c] = cols[c]
        if self._out is None:
            self._out = open(self._path, "ab")  # noqa: SIM115 (held until sealed or deleted)
        records.tofile(self._out)
        self.rows += n

    def seal(self) -> None:
        """Finish appending for now (closes the file; appending again reopens it)."""
        if self._out is not None:
            self._out.close()
            self._out = None

    def _records(self, lo: int, hi: int) -> np.ndarray:
        self.seal()
        n = max(min(hi, self.rows) - lo, 0)
        return np.fromfile(self._path, self._record, n, offset=lo * self._record.itemsize) if n else (
            np.empty(0, self._record))

    def read(self, lo: int, hi: int, columns: tuple[str, ...] | None = None) -> Columns:
        """Rows [lo, hi) of the given columns (all by default)."""
        records = self._records(lo, hi)
        return {c: records[c] for c in columns or tuple(self.dtypes)}

    def overwrite(self, column: str, lo: int, data: np.ndarray) -> None:
        """Replace the values of one column from row ``lo`` on."""
        records = self._records(lo, lo + len(data))
        records[column] = data
        with open(self._path, "r+b") as fh:
            fh.seek(lo * self._record.itemsize)
            records.tofile(fh)

    def blocks(self, rows: int) -> Iterator[Columns]:
        """All rows, ``rows`` at a time."""
        for lo in range(0, self.rows, rows):
            yield self.read(lo, lo + rows)

    def delete(self) -> None:
        """Remove the file (the store is empty afterwards)."""
        self.seal()
        self._path.unlink(missing_ok=True)
        self.rows = 0


class ValueRanges:
    """The smallest and largest value seen of each integer column (what its stored type needs)."""

    def __init__(self) -> None:
        self._lo: dict[str, int] = {}
        self._hi: dict[str, int] = {}

    def update(self, cols: Mapping[str, np.ndarray]) -> None:
        """Take in a block of rows."""
        for c, v in cols.items():
            if v.dtype.kind in "iu" and len(v):
                lo, hi = int(v.min()), int(v.max())
                self._lo[c] = min(self._lo.get(c, lo), lo)
                self._hi[c] = max(self._hi.get(c, hi), hi)

    def get(self, column: str) -> tuple[int, int] | None:
        """(smallest, largest) value of a column; None when no integer values were seen."""
        return (self._lo[column], self._hi[column]) if column in self._lo else None


class Spool:
    """One column written in order, with the range of its integer values."""

    def __init__(self, scratch: Scratch, dtype: np.dtype | str) -> None:
        self.dtype = np.dtype(dtype)
        self._store = ColumnStore(scratch, {"v": self.dtype})
        self._ranges = ValueRanges()

    @property
    def rows(self) -> int:
        """Values appended so far."""
        return self._store.rows

    @property
    def range(self) -> tuple[int, int] | None:
        """(smallest, largest) value appended; None for none or a non-integer column."""
        return self._ranges.get("v")

    def append(self, data: np.ndarray) -> None:
        """Append values (cast to the spool's dtype)."""
        data = np.asarray(data, dtype=self.dtype)
        if len(data):
            self._ranges.update({"v": data})
            self._store.append({"v": data})

    def blocks(self, rows: int) -> Iterator[np.ndarray]:
        """The values, ``rows`` at a time."""
        for b in self._store.blocks(rows):
            yield b["v"]

    def delete(self) -> None:
        """Remove the file."""
        self._store.delete()
