"""The wire protocol between the profiled child and the capture service (docs/CAPTURE.md).

A stream of frames over a pipe. Each frame is a 12-byte header ``<4sII`` (kind, length of
the JSON part, length of the binary part), a UTF-8 JSON object, then the binary part: the
raw little-endian bytes of the columns the JSON lists as ``[[name, dtype, rows], ...]``
under ``"columns"``, back to back. The writer hands the arrays' own memory to ``writev``;
the reader copies each column once.

From the profiled child: ``SESS`` (the traced session: its device model and capture
config), ``RECS`` (one drain's packed raw records, :mod:`.payloads`), ``END `` (the script's
exit status). The service's collector turns records into the capture's own kinds, which
:class:`.ingest.Ingest` applies: ``HELO`` (session metadata), ``STRS`` (strings interned
since the last frame), ``ROWS`` (rows of one table), ``CLCK`` (latest clock estimates),
``STAT`` (counts: events, dropped records). A frame cut short by a killed child is ignored
by :class:`FrameReader`.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

HEADER = struct.Struct("<4sII")
# byte orders that are little-endian here: "<", and on a little-endian machine native ("=") and none ("|")
_NATIVE = ("<", "|", "=") if sys.byteorder == "little" else ("<", "|")
Buffer = bytes | memoryview
HELLO, STRINGS, ROWS, CLOCKS, STATS, END = b"HELO", b"STRS", b"ROWS", b"CLCK", b"STAT", b"END "
SESSION, RECORDS = b"SESS", b"RECS"
KINDS = (HELLO, STRINGS, ROWS, CLOCKS, STATS, END, SESSION, RECORDS)
_IOV_MAX = 512  # buffers per writev, below every system's IOV_MAX
_JSON = json.JSONEncoder(separators=(",", ":")).encode  # one encoder (json.dumps with options makes one a call)


def encode(kind: bytes, meta: Mapping[str, Any], columns: Mapping[str, np.ndarray | bytes] | None = None) -> list[
        Buffer]:
    """One frame as a list of buffers (write them in order): the header, the JSON part, and each
    column's bytes as a view of the array (no copy; little-endian, as this machine's are). A
    column given as ``bytes`` goes as they are, a ``uint8`` column (the child's packed records:
    no numpy on its path)."""
    head = dict(meta)
    payload: list[Buffer] = []
    if columns:
        specs = []
        for k, v in columns.items():
            if type(v) is bytes:
                specs.append([k, "|u1", len(v)])
                payload.append(v)
                continue
            v = np.ascontiguousarray(v)
            if v.dtype.byteorder not in _NATIVE:
                v = v.astype(v.dtype.newbyteorder("<"))
            specs.append([k, v.dtype.str, len(v)])
            payload.append(v.reshape(-1).view(np.uint8).data)
        head["columns"] = specs
    text = _JSON(head).encode()
    return [HEADER.pack(kind, len(text), sum(map(len, payload))), text, *payload]


def decode_columns(meta: Mapping[str, Any], payload: memoryview) -> dict[str, np.ndarray]:
    """The columns of a frame's binary part (copies, so the buffer can be reused). Only numeric
    columns are read (no object dtype can come from a stream), each within the payload."""
    out: dict[str, np.ndarray] = {}
    pos = 0
    for name, dtype, rows in meta.get("columns", ()):
        dt = np.dtype(dtype)
        if dt.kind not in "biuf" or dt.hasobject or dt.shape or not isinstance(rows, int) or rows < 0:
            raise ValueError(f"capture stream: column {name!r} of dtype {dtype!r} refused (numbers only)")
        n = dt.itemsize * rows
        if pos + n > len(payload):
            raise ValueError(f"capture stream: column {name!r} runs past its frame")
        out[name] = np.frombuffer(payload[pos:pos + n], dtype=dt).copy()
        pos += n
    return out


class FrameWriter:
    """Writes frames to a file descriptor (blocking: a slow service slows the child, nothing is lost)."""

    def __init__(self, fd: int, on_broken: Callable[[], None] | None = None) -> None:
        self.fd = fd
        self.bytes = 0
        self.broken = False
        self.on_broken = on_broken  # called once when the reader has gone

    def send(self, kind: bytes, meta: Mapping[str, Any], columns: Mapping[str, np.ndarray | bytes] | None = None
             ) -> None:
        """Send one frame; after the reader has gone (EPIPE) frames are discarded and ``on_broken`` runs.
        The frame's buffers go to the pipe as they are (``writev``), not joined into one copy first."""
        if self.broken:
            return
        views = [memoryview(b) for b in encode(kind, meta, columns) if len(b)]
        size = sum(map(len, views))
        try:
            while views:
                n = os.writev(self.fd, views[:_IOV_MAX])
                while views and n >= len(views[0]):
                    n -= len(views.pop(0))
                if n:
                    views[0] = views[0][n:]
        except OSError:
            self.broken = True
            if self.on_broken is not None:
                self.on_broken()
            return
        self.bytes += size

    def close(self) -> None:
        """Close the descriptor."""
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def detach(self) -> None:
        """In a process forked from the writer's: close its copy of the descriptor (the reader
        sees the end of the stream when the writer's own process ends, however long a fork
        lives) and discard every frame it would send (it would interleave with the writer's)."""
        self.broken, self.on_broken = True, None
        self.close()


class FrameReader:
    """Accumulates bytes read from the pipe and yields whole frames (``columns=False``: each
    frame's kind and JSON part only, with no columns: a service that only spools the stream
    reads no more of it than its progress needs)."""

    def __init__(self, columns: bool = True) -> None:
        self._buf = bytearray()
        self.bytes = 0
        self.columns = columns

    def feed(self, data: bytes) -> Iterator[tuple[bytes, dict[str, Any], dict[str, np.ndarray]]]:
        """Add ``data``; yield every frame now complete as (kind, meta, columns)."""
        self._buf += data
        self.bytes += len(data)
        buf = self._buf
        pos = 0
        while len(buf) - pos >= HEADER.size:
            kind, jlen, plen = HEADER.unpack_from(buf, pos)
            end = pos + HEADER.size + jlen + plen
            if end > len(buf):
                break
            if kind not in KINDS:
                raise ValueError(f"capture stream: unknown frame kind {kind!r} (not an accelview child?)")
            start = pos + HEADER.size
            meta = json.loads(bytes(buf[start:start + jlen]))
            cols: dict[str, np.ndarray] = {}
            if self.columns:
                with memoryview(buf) as view:
                    cols = decode_columns(meta, view[start + jlen:end])
            yield kind, meta, cols
            pos = end
        del buf[:pos]

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame still buffered (a killed child's last, cut-off frame)."""
        return len(self._buf)
