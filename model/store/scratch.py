"""Scratch space on disk for work bigger than memory: raw column files in a private folder.

Columns are plain native-endian arrays, one file each, read and written with
``numpy.fromfile``/``tofile`` (never memory-mapped: mapped pages would count against the
process's resident memory). A ``ColumnStore`` holds rows of several columns; a ``Spool``
holds one column and its value range, to be copied into an HDF5 column of the narrowest type.
A store's files stay open until it is deleted.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from glob import escape as glob_escape
from itertools import count
from pathlib import Path
from typing import BinaryIO

import numpy as np

Columns = dict[str, np.ndarray]


class Scratch:
    """A private folder beside a given path, removed with everything in it by ``close``.

    Its name holds the process id (``.NAME.PID.XXXX.scratch``): folders left beside the same
    path by a process that no longer runs (killed while finalizing) are removed on creation."""

    def __init__(self, beside: str | Path) -> None:
        beside = Path(beside)
        stem = beside.name.lstrip(".")
        _remove_orphans(beside.parent, stem)
        self.dir = Path(tempfile.mkdtemp(prefix=f".{stem}.{os.getpid()}.", suffix=".scratch", dir=beside.parent))
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


def _remove_orphans(folder: Path, stem: str) -> None:
    """Delete ``.STEM.PID.*.scratch`` folders in ``folder`` whose process is gone."""
    mine = re.compile(rf"\.{re.escape(stem)}\.(\d+)\.[^.]+\.scratch")  # mkdtemp's random part has no dot
    for d in folder.glob(f".{glob_escape(stem)}.*.scratch"):
        m = mine.fullmatch(d.name)
        if m and not _alive(int(m.group(1))):
            shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's
        return True
    return True


class ColumnStore:
    """Rows of named columns of fixed dtypes, appended in blocks and read back by row range.

    One file per column, open until ``delete``: a block is written and read without
    interleaving its columns, and a read of some columns touches only theirs."""

    def __init__(self, scratch: Scratch, dtypes: Mapping[str, np.dtype | str]) -> None:
        self.dtypes = {c: np.dtype(d) for c, d in dtypes.items()}
        self._paths = {c: scratch.path(c) for c in self.dtypes}
        self._files: dict[str, BinaryIO] = {}
        self.rows = 0

    def _file(self, column: str) -> BinaryIO:
        fh = self._files.get(column)
        if fh is None:
            fh = self._files[column] = open(self._paths[column], "w+b")  # noqa: SIM115 (closed by delete)
        return fh

    def append(self, cols: Mapping[str, np.ndarray]) -> None:
        """Append a block (every column of the store, all of one length)."""
        n = len(cols[next(iter(self.dtypes))])
        for c, dtype in self.dtypes.items():
            data = np.ascontiguousarray(cols[c], dtype=dtype)
            if len(data) != n:
                raise ValueError(f"column {c} has {len(data)} rows, expected {n}")
            fh = self._file(c)
            fh.seek(self.rows * dtype.itemsize)
            fh.write(memoryview(data).cast("B"))
        self.rows += n

    def read(self, lo: int, hi: int, columns: tuple[str, ...] | None = None) -> Columns:
        """Rows [lo, hi) of the given columns (all by default)."""
        n = max(min(hi, self.rows) - lo, 0)
        out = {}
        for c in columns or tuple(self.dtypes):
            data = out[c] = np.empty(n, self.dtypes[c])
            if n:
                fh = self._file(c)
                fh.seek(lo * data.itemsize)
                fh.readinto(memoryview(data).cast("B"))
        return out

    def overwrite(self, column: str, lo: int, data: np.ndarray) -> None:
        """Replace the values of one column from row ``lo`` on."""
        data = np.ascontiguousarray(data, dtype=self.dtypes[column])
        fh = self._file(column)
        fh.seek(lo * data.itemsize)
        fh.write(memoryview(data).cast("B"))

    def blocks(self, rows: int) -> Iterator[Columns]:
        """All rows, ``rows`` at a time."""
        for lo in range(0, self.rows, rows):
            yield self.read(lo, lo + rows)

    def delete(self) -> None:
        """Close and remove the files (the store is empty afterwards)."""
        for fh in self._files.values():
            fh.close()
        self._files.clear()
        for p in self._paths.values():
            p.unlink(missing_ok=True)
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
