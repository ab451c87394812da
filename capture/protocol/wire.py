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
MAX_JSON_BYTES = 64 << 20  # a frame's JSON part is small (its records are in the columns); more is damage
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
    columns are read (no object dtype can come from a stream), and they must fill the payload
    exactly: a frame that lies about its columns' types or sizes raises ValueError."""
    out: dict[str, np.ndarray] = {}
    pos = 0
    for name, dt, n in _column_specs(meta):
        if pos + n > len(payload):
            raise ValueError(f"capture stream: column {name!r} runs past its frame")
        out[name] = np.frombuffer(payload[pos:pos + n], dtype=dt).copy()
        pos += n
    if pos != len(payload):
        raise ValueError(f"capture stream: the columns take {pos} of the frame's {len(payload)} payload bytes")
    return out


def _column_specs(meta: Mapping[str, Any]) -> list[tuple[str, np.dtype, int]]:
    """(name, dtype, bytes) of each column a frame's JSON lists; ValueError for a list that is
    not one of numeric columns."""
    specs = meta.get("columns", [])
    if not isinstance(specs, list):
        raise ValueError("capture stream: a frame's columns are not a list")
    out = []
    for spec in specs:
        if not (isinstance(spec, list) and len(spec) == 3 and isinstance(spec[0], str) and isinstance(spec[1], str)):
            raise ValueError(f"capture stream: a column described as {str(spec)[:80]!r}")
        name, dtype, rows = spec
        try:
            dt = np.dtype(dtype)
        except (TypeError, ValueError):
            raise ValueError(f"capture stream: column {name!r} of dtype {dtype!r} refused (numbers only)") from None
        if dt.kind not in "biuf" or dt.hasobject or dt.shape or type(rows) is not int or rows < 0:
            raise ValueError(f"capture stream: column {name!r} of dtype {dtype!r} refused (numbers only)")
        out.append((name, dt, dt.itemsize * rows))
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
    """Accumulates bytes read from the pipe or a spool and yields whole frames (``columns=False``:
    each frame's kind and JSON part only, with no columns: a service that only spools the stream
    reads no more of it than its progress needs).

    A damaged frame (a kind it does not know, a JSON part that does not parse, columns that lie
    about their types or sizes) is skipped, not fatal: the reader looks for the next frame header
    whose JSON parses and whose columns fill its payload, goes on from there, and counts the
    damaged stretch in ``damaged`` (why in ``problems``) and its bytes in ``skipped_bytes``."""

    def __init__(self, columns: bool = True) -> None:
        self._buf = bytearray()
        self.bytes = 0
        self.columns = columns
        self.damaged = 0
        self.skipped_bytes = 0
        self.problems: list[str] = []  # the first few damaged stretches' reasons
        self._in_damage = False  # skipping a damaged stretch: what follows until a frame is the same one

    def feed(self, data: bytes, final: bool = False) -> Iterator[tuple[bytes, dict[str, Any], dict[str, np.ndarray]]]:
        """Add ``data``; yield every frame now complete as (kind, meta, columns). ``final``: no more
        data comes (the end of a spool), so a frame cut short is looked past for frames after it."""
        self._buf += data
        self.bytes += len(data)
        buf = self._buf
        pos = 0
        while len(buf) - pos >= HEADER.size:
            frame, problem, waiting = self._frame_at(buf, pos, final)
            if frame is not None:
                self._in_damage = False
                yield frame[:3]
                pos = frame[3]
                continue
            if waiting and not final:
                break
            nxt = _next_header(buf, pos + 1)
            if nxt < 0:  # nothing after it looks like a frame
                if waiting:  # at the end: a last frame cut short (a killed child's), not damage
                    break
                nxt = max(pos + 1, len(buf) - HEADER.size + 1) if not final else len(buf)
            self._skip(problem or "a frame cut short", nxt - pos)
            pos = nxt
        del buf[:pos]

    def _frame_at(self, buf: bytearray, pos: int, final: bool) -> tuple[Any, str, bool]:
        """(frame and its end, "", False) for a whole valid frame at ``pos``; (None, why, False) for a
        damaged one; (None, "", True) when it looks valid so far and more bytes are needed. A valid
        frame is followed by another frame's kind or by the end: a frame cut short, whose header
        claims the frames after it as its payload, is damage, not a frame that swallows them."""
        kind, jlen, plen = HEADER.unpack_from(buf, pos)
        if kind not in KINDS:
            return None, f"unknown frame kind {bytes(kind)!r}", False
        start = pos + HEADER.size
        if start + jlen > len(buf):
            return None, "", jlen <= MAX_JSON_BYTES
        try:
            meta = json.loads(bytes(buf[start:start + jlen]))
            if not isinstance(meta, dict):
                raise ValueError("the JSON part is not an object")
            specs = _column_specs(meta)
            if sum(n for _, _, n in specs) != plen:
                raise ValueError("the columns do not fill the frame's payload")
        except (ValueError, RecursionError) as e:
            return None, _brief(e), False
        end = start + jlen + plen
        if end > len(buf) or (end < len(buf) < end + 4 and not final):
            return None, "", True
        if end + 4 <= len(buf) and bytes(buf[end:end + 4]) not in KINDS and _frame_inside(buf, start, end):
            return None, "a frame cut short (the frames after it are where its payload would be)", False
        cols: dict[str, np.ndarray] = {}
        if self.columns:
            with memoryview(buf) as view:
                cols = decode_columns(meta, view[start + jlen:end])
        return (kind, meta, cols, end), "", False

    def _skip(self, problem: str, n: int) -> None:
        if not self._in_damage:
            self._in_damage = True
            self.damaged += 1
            if len(self.problems) < 5:
                self.problems.append(problem)
        self.skipped_bytes += n

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame still buffered (a killed child's last, cut-off frame)."""
        return len(self._buf)


def _frame_inside(buf: bytearray, start: int, end: int) -> bool:
    """Whether a frame header whose JSON parses and whose columns fill its payload begins in
    ``buf[start:end]`` (the part a frame's header claims as its own)."""
    q = _next_header(buf, start)
    while 0 <= q < end:
        _, jlen, plen = HEADER.unpack_from(buf, q) if q + HEADER.size <= len(buf) else (b"", -1, 0)
        if jlen >= 0 and q + HEADER.size + jlen <= len(buf):
            try:
                meta = json.loads(bytes(buf[q + HEADER.size:q + HEADER.size + jlen]))
                if isinstance(meta, dict) and sum(n for _, _, n in _column_specs(meta)) == plen:
                    return True
            except (ValueError, RecursionError):
                pass
        q = _next_header(buf, q + 1)
    return False


def _next_header(buf: bytearray, start: int) -> int:
    """Where the next frame kind's four bytes begin at or after ``start`` (-1: none)."""
    found = [i for i in (buf.find(k, start) for k in KINDS) if i >= 0]
    return min(found) if found else -1


def _brief(e: BaseException) -> str:
    return (str(e) or type(e).__name__).splitlines()[0][:160]
