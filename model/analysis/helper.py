"""One computation in a forked helper on the other core, while this process does other work
(``accelview diff`` analyses its two runs at once; ``analyze`` walks the critical path beside
the other passes).

The helper inherits the trace through ``fork`` (nothing is copied) and sends its result back as
plain data: a JSON header and named numpy columns, never pickle. It writes them into an
anonymous memory file made before the fork, then their size into a pipe; this process maps the
file copy-on-write, so the columns are neither copied through a pipe nor made again here. Where
forking is unsafe or not worth it (:func:`~accelview.model.forking.fork_safe`, small traces,
another helper still running), or the helper fails, the caller computes in-process, so results
and errors are the same either way.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import signal
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
from accelview.model.forking import fork_safe, release

MIN_SLICES = 200_000  # below this a helper costs more than it saves
_LEN = struct.Struct("<Q")
_running: set[int] = set()  # helpers started and not yet collected (none is started beside one)

Columns = dict[str, np.ndarray]
Work = Callable[[], tuple[dict[str, Any], Columns]]


class Helper:
    """``work()`` (a JSON-able header and named columns) running in a forked helper."""

    def __init__(self, work: Work) -> None:
        self._file = os.memfd_create("accelview-helper")
        read, write = os.pipe()
        _running.add(id(self))  # before the fork: the helper starts none of its own
        self.pid = os.fork()
        if self.pid == 0:  # the helper: never returns into the caller's code
            status = 1
            try:
                os.close(read)
                size, parts = encode(*work())
                os.ftruncate(self._file, size)
                raw = np.frombuffer(mmap.mmap(self._file, size), np.uint8)
                for at, part in parts:
                    raw[at:at + len(part)] = part
                os.write(write, _LEN.pack(size))
                status = 0
            finally:
                os._exit(status)
        os.close(write)
        self._read = read

    def result(self) -> tuple[dict[str, Any], Columns] | None:
        """The helper's header and columns, or None when it failed (compute in-process then)."""
        try:
            with os.fdopen(self._read, "rb") as f:
                head = f.read(_LEN.size)  # the helper's size line, or nothing when it died
            if len(head) < _LEN.size:
                return None
            size = _LEN.unpack(head)[0]
            return decode(mmap.mmap(self._file, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE))
        finally:
            os.close(self._file)  # the mapping keeps the pages
            _running.discard(id(self))
            release(self.pid)  # reaped later: its memory is torn down on the other core


    def cancel(self) -> None:
        """Stop the helper without its result (the caller failed before it needed it)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.close(self._read)
        os.close(self._file)
        _running.discard(id(self))
        release(self.pid)


def start(work: Work, n_slices: int, min_slices: int | None = None) -> Helper | None:
    """Start ``work`` in a helper, or None where that is unsafe or not worth it: a trace of fewer
    than ``min_slices`` slices (MIN_SLICES by default), or another helper still running."""
    if n_slices < (MIN_SLICES if min_slices is None else min_slices) or _running or not fork_safe() \
            or not hasattr(os, "memfd_create"):
        return None
    return Helper(work)


def _plain(o: Any) -> Any:
    """numpy scalars and arrays in the JSON header as Python values."""
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not plain data")


def encode(head: dict[str, Any], cols: Columns) -> tuple[int, list[tuple[int, np.ndarray]]]:
    """A header and columns as bytes: their size, and (offset, uint8 array) parts that fill it:
    the header's length, the JSON header (with the columns' layout), then each column's raw bytes
    (8-aligned)."""
    layout, offset, data = [], 0, []
    for name, a in cols.items():
        if a.dtype.hasobject:
            raise TypeError(f"{name}: object columns are not plain data")
        a = np.ascontiguousarray(a).reshape(-1)
        layout.append((name, a.dtype.str, len(a), offset))
        data.append((offset, a.view(np.uint8)))
        offset += -(-a.nbytes // 8) * 8
    text = json.dumps({"head": head, "layout": layout}, default=_plain).encode()
    text += b" " * (-len(text) % 8)
    base = _LEN.size + len(text)
    parts = [(0, np.frombuffer(_LEN.pack(len(text)) + text, np.uint8))]
    parts += [(base + at, a) for at, a in data]
    return base + offset, parts


def pack(head: dict[str, Any], cols: Columns) -> bytearray:
    """:func:`encode`'s bytes in one buffer."""
    size, parts = encode(head, cols)
    buf = bytearray(size)
    raw = np.frombuffer(buf, np.uint8)
    for at, part in parts:
        raw[at:at + len(part)] = part
    return buf


def decode(buf: bytearray | mmap.mmap) -> tuple[dict[str, Any], Columns]:
    """The header and columns :func:`encode` took (the columns are views of ``buf``)."""
    n = _LEN.unpack_from(buf)[0]
    text = json.loads(bytes(buf[_LEN.size:_LEN.size + n]))
    base = _LEN.size + n
    return text["head"], {name: np.frombuffer(buf, np.dtype(dtype), count, base + at)
                          for name, dtype, count, at in text["layout"]}
