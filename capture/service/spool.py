"""The spool: the child's stream as it arrived, kept in a file beside the capture while the
script runs and converted once it has ended (or later, by ``accelview convert``)."""

from __future__ import annotations

import contextlib
import json
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
        """Append bytes received from the child."""
        self.file.write(data)
        self.size += len(data)

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


def replay(spool: Spool, sink: RecordSink, after_chunk: Callable[[], bool] = lambda: False,
            reader: FrameReader | None = None) -> FrameReader:
    """Hand the spooled stream's frames to ``sink``, a chunk at a time, until ``after_chunk``
    says stop; returns the reader (its ``pending``: a last frame cut short; ``damaged``: damaged
    stretches it skipped, converting the frames after them)."""
    reader = reader or FrameReader()
    for chunk in spool.chunks():
        for kind, meta, cols in reader.feed(chunk):
            sink.handle(kind, meta, cols)
        if after_chunk():
            return reader
    for kind, meta, cols in reader.feed(b"", final=True):  # frames after a damaged one cut short
        sink.handle(kind, meta, cols)
    return reader


def file_size(path: Path) -> int:
    """Size of a file (the capture, so far), 0 if absent."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
