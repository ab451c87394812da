"""The spool: the child's stream as it arrived, kept in a file beside the capture while the
script runs and converted once it has ended (or later, by ``accelview convert``)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from accelview.model.errors import CaptureError

from ..protocol import wire
from ..protocol.payloads import PROTOCOL
from ..protocol.wire import HEADER, KINDS, FrameReader
from .collector import RecordSink


def spool_of(capture: Path) -> Path:
    """Where a spooling service keeps the child's stream of ``capture``: ``.NAME.spool`` beside it."""
    return capture.with_name(f".{capture.name}.spool")


def staging_of(capture: Path) -> Path:
    """Where the service stages the rows of ``capture`` until it is finished: ``.NAME.staging`` beside it."""
    return capture.with_name(f".{capture.name}.staging")


class Spool:
    """The child's stream as it arrived, in a hidden file beside the capture (:func:`spool_of`):
    written while the script runs, read back in chunks to convert once it has ended
    (``existing``: one a service left behind, to convert)."""

    CHUNK = 1 << 20

    def __init__(self, path: Path, existing: bool = False) -> None:
        self.path = path
        # unbuffered: each piece received is in the file (the OS's) at once, so a kill of this
        # process loses nothing it had read from the child
        self.file = open(path, "rb" if existing else "w+b", buffering=-1 if existing else 0)  # noqa: SIM115
        self.size = path.stat().st_size if existing else 0
        self.read = 0

    def write(self, data: bytes) -> None:
        """Append bytes received from the child. The file is unbuffered: a raw write may take only
        part of them (a disk filling up), so this writes until all are in; when one fails, ``size``
        still counts exactly the bytes the file holds."""
        view = memoryview(data)
        while view:
            n = self.file.write(view)
            self.size += n
            view = view[n:]

    def chunks(self) -> Iterator[bytes]:
        """What was written, from the start, a chunk at a time (``read`` counts the bytes so far)."""
        if self.file.writable():
            self.file.flush()
        self.file.seek(0)
        while chunk := self.file.read(self.CHUNK):
            self.read += len(chunk)
            yield chunk

    def remove(self) -> None:
        """Close and delete the spool."""
        self.file.close()
        with contextlib.suppress(OSError):
            self.path.unlink()

    def check(self) -> None:
        """Raise :class:`CaptureError` unless this is a stream this accelview can convert: a
        capture stream, and not an older one whose records are pickled (never loaded)."""
        head = self.file.read(HEADER.size)
        if not head:  # a service stopped before the child sent anything: an empty capture
            return
        if len(head) < HEADER.size or HEADER.unpack(head)[0] not in KINDS:
            raise CaptureError(self.path, "is not a capture service's spool (no capture stream in it)")
        kind, jlen, _ = HEADER.unpack(head)
        if kind != wire.SESSION:  # a child that failed before its session began: nothing to refuse
            return
        try:
            meta = json.loads(self.file.read(jlen))
        except ValueError:
            meta = {}
        if not isinstance(meta, dict) or meta.get("protocol") != PROTOCOL:
            raise CaptureError(self.path, "was written by an older accelview (its records are pickled) and cannot "
                                          "be converted safely; profile the script again")


class CutFrame:
    """The rest of the frame a spool ends inside when the disk filled while that frame was
    arriving (a frame bigger than the pipe, or read while the child wrote it, comes in pieces):
    kept in memory, up to ``limit`` bytes, so that the frame and what the spool holds of it are
    converted, not lost with the bytes that found no room. ``start``: where a frame begins in the
    spool at or before its end (its frames are walked from there to the one the end cuts)."""

    def __init__(self, spool: Spool, start: int, limit: int) -> None:
        self.limit = limit
        fd = spool.file.fileno()
        while start + HEADER.size <= spool.size:
            kind, jlen, plen = HEADER.unpack(os.pread(fd, HEADER.size, start))
            if kind not in KINDS or start + HEADER.size + jlen + plen > spool.size:
                break
            start += HEADER.size + jlen + plen
        self.begun = spool.size - start  # bytes of the cut frame the spool holds (0: it ends between two)
        self.head = os.pread(fd, min(self.begun, HEADER.size), start) if self.begun else b""
        self.data = bytearray()
        self.missing = -1  # bytes of the frame still to come; -1 until its header is known
        self.done = not self.begun

    def add(self, data: bytes) -> None:
        """Bytes that arrived after the spool's end (they go only as far as the frame does)."""
        if self.done:
            return
        if self.missing < 0:
            head = self.head + bytes(self.data[:HEADER.size]) + data[:HEADER.size]
            if len(head) >= HEADER.size:
                kind, jlen, plen = HEADER.unpack_from(head)
                self.missing = HEADER.size + jlen + plen - self.begun
                if kind not in KINDS or self.missing > self.limit:  # damage, or more than memory allows
                    self.data.clear()
                    self.done = True
                    return
        take = data if self.missing < 0 else data[:self.missing - len(self.data)]
        self.data += take
        self.done = 0 <= self.missing <= len(self.data)

    @property
    def tail(self) -> bytes:
        """The frame's bytes the spool lacks, once all of them arrived (else none)."""
        return bytes(self.data) if self.done else b""


def replay(spool: Spool, sink: RecordSink, after_chunk: Callable[[], bool] = lambda: False,
            reader: FrameReader | None = None, tail: bytes = b"") -> FrameReader:
    """Hand the spooled stream's frames to ``sink``, a chunk at a time, until ``after_chunk``
    says stop, then those ``tail`` completes (:class:`CutFrame`); returns the reader (its
    ``pending``: a last frame cut short; ``damaged``: damaged stretches it skipped, converting
    the frames after them)."""
    reader = reader or FrameReader()
    for chunk in spool.chunks():
        for kind, meta, cols in reader.feed(chunk):
            sink.handle(kind, meta, cols)
        if after_chunk():
            return reader
    for kind, meta, cols in reader.feed(tail):
        sink.handle(kind, meta, cols)
    for kind, meta, cols in reader.feed(b"", final=True):  # frames after a damaged one cut short
        sink.handle(kind, meta, cols)
    return reader


def file_size(path: Path) -> int:
    """Size of a file (the capture, so far), 0 if absent."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
