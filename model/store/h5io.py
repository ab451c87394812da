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
from h5py import h5d, h5l, h5z

from ..errors import CaptureError

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
MAX_SOFT_LINKS = 8  # soft links followed while resolving one path; more is a loop or a lie
MAX_CHUNK_BYTES = 64 << 20  # accelview writes chunks of at most 1 MiB; one read inflates a whole chunk
MAX_INFLATE = 1100  # deflate expands at most ~1032x: a bound on what a column may claim per stored byte
_SAFE_FILTERS = {h5z.FILTER_DEFLATE, h5z.FILTER_SHUFFLE, h5z.FILTER_FLETCHER32}
_SAFE_LAYOUTS = {h5d.COMPACT, h5d.CONTIGUOUS, h5d.CHUNKED}


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
        self._file_size = Path(self.path).stat().st_size if mode == "r" else 0
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
        except (OSError, KeyError, ValueError, TypeError, RuntimeError, MemoryError) as e:
            raise CaptureError(self.path, f"{what}: {_short(e)}") from None

    # -- attributes -------------------------------------------------------------------------
    def attrs(self, node: str = "/") -> dict[str, Any]:
        """Attributes of a group or dataset; JSON-encoded values (``json:`` prefix) are decoded."""
        with self._errors(f"cannot read attributes of {node}"):
            out: dict[str, Any] = {}
            attrs = self._f[self._resolve(node)].attrs
            for k in attrs:
                v = self._attr(attrs, k)
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
        """True when the dataset or group exists (inside this file: see ``_resolve``)."""
        return name in self._datasets or self._resolve(name, must_exist=False) is not None

    def columns(self, group: str) -> list[str]:
        """Names of the datasets directly inside a group ([] when it does not exist)."""
        where = self._resolve(group, must_exist=False)
        g = self._f[where] if where is not None else None
        if not isinstance(g, h5py.Group):
            return []
        return [k for k in g if isinstance(self._f[self._resolve(f"{where}/{k}")], h5py.Dataset)]

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
            ds = self._f[self._resolve(name)]
            if not isinstance(ds, h5py.Dataset) or ds.ndim != 1:
                raise CaptureError(self.path, f"/{name} is not a one-dimensional dataset")
            if self._f.mode == "r":
                self._check_dataset(name, ds)
                self._datasets[name] = ds
        return ds

    # -- what a file may not do: reach outside itself, or claim more than it holds ----------
    def _refuse(self, problem: str) -> CaptureError:
        return CaptureError(self.path, f"{problem}; accelview reads nothing outside the capture file")

    def _resolve(self, name: str, must_exist: bool = True) -> str | None:
        """The hard-link path of ``name``: soft links are followed inside the file, at most
        MAX_SOFT_LINKS of them; external and user-defined links are refused, never opened."""
        todo, done, hops = [p for p in name.split("/") if p], [], 0
        while todo:
            part = todo.pop(0)
            if part == ".":
                continue
            here = "/" + "/".join([*done, part])
            links = self._f.id.links
            try:  # every component before ``part`` is a hard link, so nothing is followed here
                kind = links.get_info(here.encode()).type if part != ".." else -1
            except (KeyError, ValueError, OSError, RuntimeError):
                kind = None
            if kind == h5l.TYPE_HARD:
                done.append(part)
            elif kind == h5l.TYPE_SOFT:
                hops += 1
                if hops > MAX_SOFT_LINKS:
                    raise CaptureError(self.path, f"{here} goes through more than {MAX_SOFT_LINKS} soft links "
                                                  f"(a loop?)")
                target = links.get_val(here.encode()).decode("utf-8", "replace")
                todo = [p for p in target.split("/") if p] + todo
                if target.startswith("/"):
                    done = []
            elif kind == h5l.TYPE_EXTERNAL:
                raise self._refuse(f"{here} is an external link")
            elif kind is not None:
                raise CaptureError(self.path, f"{here} is a link of a kind accelview does not follow")
            elif must_exist:
                raise CaptureError(self.path, f"missing {here}")
            else:
                return None
        return "/" + "/".join(done)

    def _check_dataset(self, name: str, ds: h5py.Dataset) -> None:
        """Refuse a column stored outside the file (virtual, external raw storage), holding
        references, or claiming more rows than its storage and the file's size can hold."""
        dcpl = ds.id.get_create_plist()
        layout = dcpl.get_layout()
        if layout == h5d.VIRTUAL:
            raise self._refuse(f"/{name} is a virtual dataset")
        if layout not in _SAFE_LAYOUTS:
            raise CaptureError(self.path, f"/{name} has a storage layout accelview does not read")
        if dcpl.get_external_count() > 0:
            raise self._refuse(f"/{name} keeps its data in external files")
        if ds.dtype.kind not in "biuf" or ds.dtype.itemsize > 8:
            raise CaptureError(self.path, f"/{name} holds {ds.dtype} values, not numbers")
        filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
        if any(f not in _SAFE_FILTERS for f in filters):
            raise CaptureError(self.path, f"/{name} uses an HDF5 filter accelview does not write")
        if layout == h5d.CHUNKED and int(np.prod(ds.chunks)) * ds.dtype.itemsize > MAX_CHUNK_BYTES:
            raise CaptureError(self.path, f"/{name} has chunks of {ds.chunks[0]:,} rows, more than a capture holds")
        stored = min(ds.id.get_storage_size(), self._file_size)
        claimed = ds.shape[0] * ds.dtype.itemsize
        bound = stored * (MAX_INFLATE if h5z.FILTER_DEFLATE in filters else 1) + (64 << 10)
        if claimed > bound:
            raise CaptureError(self.path, f"/{name} claims {ds.shape[0]:,} rows ({claimed:,} bytes) but the file "
                                          f"stores {stored:,} bytes of it")

    def _attr(self, attrs: h5py.AttributeManager, key: str) -> Any:
        """One attribute's value, refusing references and sizes the file cannot hold."""
        aid = attrs.get_id(key)
        dtype = aid.dtype
        if h5py.check_dtype(ref=dtype) is not None or (dtype.kind in "OV" and h5py.check_string_dtype(dtype) is None):
            raise CaptureError(self.path, f"attribute {key!r} holds {dtype}, not text or numbers")
        if int(np.prod(aid.shape or ())) * dtype.itemsize > max(self._file_size, 1 << 20):
            raise CaptureError(self.path, f"attribute {key!r} claims more data than the file holds")
        return attrs[key]

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
