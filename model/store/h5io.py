"""The one module that talks to h5py: chunked, compressed column datasets and attributes.

Every h5py or HDF5 failure becomes a ``CaptureError`` naming the file, so callers never see an
h5py exception.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import CaptureError

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


def is_hdf5(path: str | Path) -> bool:
    """True when the file starts with the HDF5 signature (at offset 0, the usual place)."""
    try:
        with open(path, "rb") as f:
            return f.read(8) == HDF5_MAGIC
    except OSError:
        return False


def narrowest(data: np.ndarray) -> np.ndarray:
    """``data`` as the smallest signed integer type holding all its values (others unchanged)."""
    if data.dtype.kind not in "iu" or len(data) == 0 or data.dtype.itemsize == 1:
        return data
    t = narrow_dtype(data.dtype, int(data.min()), int(data.max()))
    return data.astype(t) if t != data.dtype else data


def narrow_dtype(dtype: np.dtype, lo: int, hi: int) -> np.dtype:
    """The type ``narrowest`` stores a column of ``dtype`` in whose values lie in [lo, hi]."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu" or dtype.itemsize == 1:
        return dtype
    for t in (np.int8, np.int16, np.int32):
        info = np.iinfo(t)
        if info.min <= lo and hi <= info.max:
            return np.dtype(t) if np.dtype(t).itemsize < dtype.itemsize else dtype
    return dtype


class H5File:
    """An open HDF5 file holding a capture: columns addressed as ``"group/column"`` paths."""

    def __init__(self, path: str | Path, mode: str = "r", chunk_cache_bytes: int | None = None) -> None:
        """Open ``path`` (``mode`` as h5py's). ``chunk_cache_bytes``: the chunk cache each open
        dataset may fill (HDF5's default otherwise); 0 suits one pass over whole chunks."""
        self.path = str(path)
        try:
            # Written in the 1.8 file format: newer ones mark a file "open for write" in its
            # superblock, and a writer killed before closing (kill -9) would leave a file no
            # reader may open; this one stays readable and is recovered from its staging area.
            self._f = h5py.File(self.path, mode, libver=("earliest", "v108") if mode != "r" else None,
                                rdcc_nbytes=chunk_cache_bytes)
        except FileNotFoundError:
            raise CaptureError(path, "no such file") from None
        except (OSError, ValueError) as e:
            raise CaptureError(path, _describe_open_error(path, e)) from None
        self._datasets: dict[str, h5py.Dataset] = {}  # group look-ups cost more than a chunk read
        self._appending: dict[str, h5py.Dataset] = {}  # the columns append() has written to

    # -- context and lifetime ---------------------------------------------------------------
    def __enter__(self) -> H5File:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (idempotent)."""
        with contextlib.suppress(Exception):
            self._f.close()

    def flush(self) -> None:
        """Push everything written so far to disk, so a killed writer leaves it readable."""
        self._f.flush()

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except CaptureError:
            raise
        except (OSError, KeyError, ValueError, TypeError, RuntimeError) as e:
            raise CaptureError(self.path, f"{what}: {_short(e)}") from None

    # -- attributes -------------------------------------------------------------------------
    def attrs(self, node: str = "/") -> dict[str, Any]:
        """Attributes of a group or dataset; JSON-encoded values (``json:`` prefix) are decoded."""
        with self._errors(f"cannot read attributes of {node}"):
            out: dict[str, Any] = {}
            for k, v in self._f[node].attrs.items():
                if isinstance(v, bytes):
                    v = v.decode("utf-8")
                if isinstance(v, str) and v.startswith("json:"):
                    v = json.loads(v[5:])
                elif isinstance(v, np.generic):
                    v = v.item()
                out[k] = v
            return out

    def set_attrs(self, node: str = "/", **values: Any) -> None:
        """Set attributes; dicts and lists are stored as JSON strings."""
        target = self._f.require_group(node) if node not in self._f else self._f[node]
        for k, v in values.items():
            target.attrs[k] = "json:" + json.dumps(v) if isinstance(v, dict | list) else v

    # -- columns ----------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        """True when the dataset or group exists."""
        return name in self._datasets or name in self._f

    def columns(self, group: str) -> list[str]:
        """Names of the datasets directly inside a group ([] when it does not exist)."""
        g = self._f.get(group)
        return [k for k, v in g.items() if isinstance(v, h5py.Dataset)] if g is not None else []

    def create(self, name: str, data: np.ndarray, chunk_rows: int, compress: bool = True) -> None:
        """Create a resizable, chunked column dataset holding ``data``; integer columns are
        stored in the narrowest signed type that holds their values (less to inflate on read)."""
        data = np.ascontiguousarray(narrowest(data))
        chunk = max(1, min(chunk_rows, max(len(data), 1)))
        kw: dict[str, Any] = {"compression": "gzip", "compression_opts": 4, "shuffle": True} if compress else {}
        self._f.create_dataset(name, data=data, maxshape=(None,), chunks=(chunk,), **kw)

    def create_empty(self, name: str, dtype: np.dtype, rows: int, chunk_rows: int) -> None:
        """Create a column of ``rows`` rows laid out as ``create`` lays it out, to be filled with ``write``."""
        chunk = max(1, min(chunk_rows, max(rows, 1)))
        self._f.create_dataset(name, shape=(rows,), dtype=dtype, maxshape=(None,), chunks=(chunk,),
                               compression="gzip", compression_opts=4, shuffle=True)

    def write(self, name: str, lo: int, data: np.ndarray) -> None:
        """Write ``data`` into an existing column from row ``lo`` on (cast to its type)."""
        ds = self._f[name]
        ds[lo : lo + len(data)] = np.ascontiguousarray(data, dtype=ds.dtype)

    def datasets(self) -> list[str]:
        """Paths of every dataset in the file, in HDF5's (alphabetical) order."""
        out: list[str] = []
        self._f.visititems(lambda name, obj: out.append(name) if isinstance(obj, h5py.Dataset) else None)
        return out

    def append(self, name: str, data: np.ndarray, chunk_rows: int) -> None:
        """Append rows to a column, creating it on first use (the staging area: gzip level 1, whole
        chunks at a time, see FORMAT.md)."""
        ds = self._appending.get(name)  # h5py's group look-ups cost ~0.2 ms each, per column per flush
        if ds is None:
            if name not in self._f:
                self._f.create_dataset(name, shape=(0,), dtype=data.dtype, maxshape=(None,), chunks=(chunk_rows,),
                                       compression="gzip", compression_opts=1, shuffle=True)
            ds = self._appending[name] = self._f[name]
        n = ds.shape[0]
        ds.resize((n + len(data),))
        ds[n:] = data

    def _dataset(self, name: str) -> h5py.Dataset:
        ds = self._datasets.get(name)
        if ds is None:
            ds = self._f[name]
            if not isinstance(ds, h5py.Dataset) or ds.ndim != 1:
                raise CaptureError(self.path, f"/{name} is not a one-dimensional dataset")
            if self._f.mode == "r":
                self._datasets[name] = ds
        return ds

    def length(self, name: str) -> int:
        """Number of rows of a column."""
        with self._errors(f"cannot read {name}"):
            return int(self._dataset(name).shape[0])

    def dtype(self, name: str) -> np.dtype:
        """The stored dtype of a column."""
        with self._errors(f"cannot read {name}"):
            return self._dataset(name).dtype

    def read(self, name: str, lo: int | None = None, hi: int | None = None) -> np.ndarray:
        """Rows [lo, hi) of a column (all rows by default); only the chunks needed are read."""
        with self._errors(f"cannot read {name}"):
            ds = self._dataset(name)
            return ds[slice(lo, hi)] if lo is not None or hi is not None else ds[()]


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text[:200]


def _describe_open_error(path: str | Path, e: BaseException) -> str:
    try:
        size = Path(path).stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as oe:
        return f"cannot open: {oe.strerror or oe}"
    if size == 0:
        return "the file is empty"
    if head != HDF5_MAGIC:
        return "not an HDF5 capture (it does not start with the HDF5 signature)"
    text = str(e).lower()
    if "truncated" in text or "eof" in text or "addr overflow" in text or "bad object header" in text:
        return "the file is truncated or damaged (HDF5 could not read its structure)"
    return f"HDF5 could not open it: {_short(e)}"
