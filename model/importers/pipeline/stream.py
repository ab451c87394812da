"""Stream the ``traceEvents`` array of a Chrome-trace JSON file in batches of complete events.

``EventStream`` reads the file (object form, or array form whose closing ``]`` may be missing;
plain or gzipped) block by block and hands out byte strings that each hold a JSON array of
whole events, so memory follows one batch, not the file; other top-level keys go to
``metadata``. A batch ends at a ``}`` followed by ``,`` or ``]``; where that byte lies inside a
string the prefix does not decode, and ``split`` moves to the previous candidate.

Nothing is buffered without bound: one event or the header before the events longer than
``MAX_EVENT_BYTES`` (a gzip bomb of one long string) is refused, and keys after the events
that are longer are left unread (``tail_skipped``): the events are all read; JSON nested
deeper than the decoder's recursion limit is refused (``nested_too_deep``).
"""

from __future__ import annotations

import gzip
import queue
import re
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from ...errors import CaptureError

try:  # Intel's ISA-L: the same streams, decompressed ~3x faster than zlib
    from isal import isal_zlib as _inflate
except ImportError:  # pragma: no cover - a platform without its wheels
    _inflate = zlib

BLOCK = 4 << 20  # bytes read (uncompressed) per step
TAIL = 0.25  # the part of the file (compressed bytes) cut into smaller batches when a helper takes some
COMPRESSED_CHUNK = 1 << 18  # gzip bytes fed to zlib per call
GZIP_MAGIC = b"\x1f\x8b"
GZIP_WBITS = 16 + zlib.MAX_WBITS
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"
MAX_SPLIT_TRIES = 4  # decode attempts at candidate ends before scanning
_TOKENS = re.compile(rb'\\.|["{}\[\]]')  # an escape pair, a quote, a bracket
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_SEPARATOR = re.compile(rb"[ \t\r\n]*(?:,[ \t\r\n]*)?")  # what may lie between two events
_WHITESPACE = re.compile(rb"[ \t\r\n]*")
_LEADING = re.compile(rb"(?:[ \t\r\n]|\xef\xbb\xbf)*")  # whitespace and a byte order mark before the JSON
_METADATA_PH = re.compile(rb'^[ \t\r\n]*\{[^{}]*"ph"[ \t\r\n]*:[ \t\r\n]*"M"')  # an event that opens with its phase M
PH_PROBE = 256  # bytes of a batch's start looked at for it
MAX_EVENT_BYTES = 64 << 20  # one event, the header or the tail longer than this is refused, not buffered


def open_maybe_gzip(path: Path) -> tuple[BinaryIO, BinaryIO]:
    """Open ``path`` for reading, through gunzip when it starts with the gzip magic.

    Returns (stream to read, underlying raw file) so that progress can use the raw offset."""
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    if raw.read(2) == GZIP_MAGIC:
        raw.seek(0)
        return gzip.GzipFile(fileobj=raw, mode="rb"), raw
    raw.seek(0)
    return raw, raw


def read_blocks(raw: BinaryIO, block: int) -> Iterator[tuple[bytes, int]]:
    """The decompressed content of ``raw`` (gzip, possibly several members, or plain) in blocks
    of exactly ``block`` bytes but the last (batches, and so the result, never depend on how
    zlib happened to cut its output), each with the bytes of ``raw`` consumed to make it. Each
    zlib call is long and releases the GIL. Raises ``EOFError`` for a gzip stream that ends
    early, ``zlib.error`` for a damaged one."""
    data = raw.read(2)
    if data != GZIP_MAGIC:
        data += raw.read(block - len(data))
        while data:
            yield data, raw.tell()
            data = raw.read(block)
        return
    z, fed, pieces, have = _inflate.decompressobj(GZIP_WBITS), False, [], 0
    while True:
        if not data:
            data = raw.read(max(block, COMPRESSED_CHUNK))
            if not data:
                if fed:
                    raise EOFError("compressed file ended before the end-of-stream marker was reached")
                if pieces:
                    yield b"".join(pieces), raw.tell()
                return
        out = z.decompress(data, block - have)
        fed = True
        data = z.unconsumed_tail
        if z.eof:  # a member ends; another may follow (zero padding is skipped, as gzip does)
            data = (z.unused_data + data).lstrip(b"\0")
            z, fed = _inflate.decompressobj(GZIP_WBITS), False
        if out:
            pieces.append(out)
            have += len(out)
            if have == block:
                yield (pieces[0] if len(pieces) == 1 else b"".join(pieces)), raw.tell() - len(data)
                pieces, have = [], 0


class EventStream:
    """Iterate over ``batches()`` of raw JSON arrays of events; then read ``metadata``.

    ``decode(batch)`` is supplied by the caller: it decodes one JSON array (bytes) and raises
    ``msgspec.DecodeError`` when the bytes are not valid JSON (a wrong split)."""

    def __init__(self, path: str | Path, progress: Callable[[float], None] | None = None,
                 block: int | None = None) -> None:
        self.path = Path(path)
        self.progress = progress
        self.block = block or BLOCK
        self.metadata: dict[str, Any] = {}
        self.array_form = False
        self.bytes_read = 0
        self.fraction = 0.0  # of the (compressed) file read
        self.ends_at_event = False  # the last chunk read ends with "}," and the next starts with "{"
        self.tail_skipped = False  # whether the keys after the events (over MAX_EVENT_BYTES) were left unread

    def _error(self, problem: str) -> CaptureError:
        return CaptureError(self.path, problem)

    def _too_long(self, what: str, at: int) -> CaptureError:
        return self._error(f"{what} is longer than {MAX_EVENT_BYTES >> 20} MiB (after byte {at}); "
                           f"not a trace accelview reads")

    def _reader(self) -> Iterator[bytes]:
        """Blocks of the decompressed file, read ahead by a thread: zlib releases the GIL, so
        gunzip overlaps the decoding of the previous block."""
        try:
            raw = open(self.path, "rb")  # noqa: SIM115 - closed by the reading thread
        except OSError as e:
            raise self._error(f"cannot open: {e.strerror or e}") from None
        total = max(self.path.stat().st_size, 1)
        blocks: queue.Queue = queue.Queue(maxsize=2)
        stop = threading.Event()

        def read() -> None:
            with raw:
                it: Iterator[tuple[bytes, int]] | None = None
                carry = b""  # the part-event after a block's last event boundary, put in front of the next
                while not stop.is_set():
                    try:
                        it = it or read_blocks(raw, self.block)
                        block, offset = next(it, (b"", total))  # (block, compressed bytes it took)
                        cut = event_cut(block)
                        item: Any = (b"".join((carry, memoryview(block)[:cut])) if cut else carry + block, offset,
                                     cut > 0)  # (chunk, offset, whether it ends where an event starts)
                        carry = block[cut:] if cut else b""
                    except EOFError:
                        item = self._error("truncated: the gzip stream ends early")
                    except (OSError, zlib.error, _inflate.error) as e:
                        item = self._error(f"not a readable gzip file ({e})")
                    except Exception as e:  # a bug must reach the caller, not leave it waiting
                        item = e
                    while not stop.is_set():
                        try:
                            blocks.put(item, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if not isinstance(item, tuple) or not item[0]:
                        return

        reader = threading.Thread(target=read, name="accelview-gunzip", daemon=True)
        reader.start()
        try:
            while True:
                item = blocks.get()
                if isinstance(item, Exception):
                    raise item
                chunk, offset, self.ends_at_event = item
                if not chunk:
                    return
                self.bytes_read += len(chunk)
                self.fraction = min(offset / total, 1.0)
                if self.progress is not None:
                    self.progress(self.fraction)
                yield chunk
        finally:
            stop.set()
            reader.join()

    def batches(self, decode: Callable[[bytes], Any], remote: Callable[[bytes], Any] | None = None) -> Iterator[Any]:
        """Yield ``decode(b"[" + events + b"]")`` for consecutive runs of whole events.

        ``remote(events)``, when given, is offered each batch but the last first, as a view of
        its comma-separated events (no brackets, no copy), without checking that it is valid
        JSON (its end is a ``}`` followed by ``,`` and ``{``); what it returns, unless None, is
        yielded instead (e.g. a promise of another process's decode)."""
        blocks = self._reader()
        buf, start = self._find_events_start(blocks)
        eof, more, comma = False, False, False
        while True:
            # Half a block at least (a block after the first, whose header is gone), more when
            # the last try found no whole event.
            while not eof and (more or len(buf) - start < self.block // 2):
                more = False
                nxt = next(blocks, None)
                if nxt is None:
                    eof = True
                    continue
                lead = _SEPARATOR.match(buf, start).end()
                if lead == len(buf) and not comma:  # only "," left (chunks end so): no copy of the next one
                    buf, start, comma = nxt, 0, b"," in buf[start:]
                else:
                    buf, start = buf[start:] + nxt, 0
            before = start, comma  # restored when no whole event follows yet (the separator is skipped again)
            start = (_WHITESPACE if comma else _SEPARATOR).match(buf, start).end()  # one comma between events
            comma = False
            if buf[start : start + 1] == b"]":
                self._read_tail(buf[start + 1 :], blocks)
                return
            if eof and start == len(buf):
                if self.array_form:  # Chrome's array form may omit the closing bracket
                    return
                raise self._error("truncated: the traceEvents array is not closed")
            result, piece = None, self._piece(len(buf) - start, eof, buf[start : start + PH_PROBE])
            if remote is not None and piece:  # near the end: smaller batches, so both processes finish together
                result, end, closed = self._split(buf, start, decode, remote, False, start + piece)
            if result is None:
                result, end, closed = self._split(buf, start, decode, None if eof else remote, eof)
            if result is None:
                if eof:
                    raise self._error(self._describe_bad(buf[start:]))
                if len(buf) - start > MAX_EVENT_BYTES:
                    raise self._too_long("an event", self.bytes_read - (len(buf) - start))
                more = True
                start, comma = before  # else a second comma after a read would pass as the first
                continue
            if closed:
                yield result
                self._read_tail(buf[end:], blocks)
                return
            start = end
            yield result

    def _piece(self, left: int, eof: bool, head: bytes) -> int:
        """The size to cut the next batch to (0: as long as it comes): a quarter block in the
        last ``TAIL`` of the file, and at its very end half of what is left (the last, small
        piece is decoded here: it holds the end of the array). Not when the batch starts with
        a metadata event (``head``: its first bytes): metadata costs little to digest
        (repeated runs are collapsed), while every batch costs its copies and hand-overs, and
        PyTorch writes tens of MB of it at the end of a trace."""
        if _METADATA_PH.search(head):
            return 0
        piece = self.block // 4 if self.fraction >= 1 - TAIL or eof else 0
        if eof:
            piece = min(piece, left // 2)
        return piece if piece and left > piece * 3 // 2 else 0

    def _split(self, buf: bytes, start: int, decode: Callable[[bytes], Any], remote: Callable[[bytes], Any] | None,
               eof: bool, limit: int | None = None) -> tuple[Any, int, bool]:
        """Decode the longest run of whole events from ``start`` that ends by ``limit`` (default:
        the buffer's end): (result, end, array closed); (None, 0, False) when there is none yet."""
        pos, tries = len(buf) if limit is None else limit, 0
        while tries < MAX_SPLIT_TRIES:
            p = buf.rfind(b"}", start, pos)
            if p < 0:
                return None, 0, False
            pos = p
            after = buf[p + 1 : p + 65].lstrip(_WS)
            if (not after and not eof) or (after and after[:1] not in (b",", b"]")):
                continue
            tries += 1
            next_event = after[1:].lstrip(_WS)[:1] == b"{" or (  # or the next chunk starts with one
                self.ends_at_event and not after[1:].strip(_WS) and len(buf) - p <= 64)
            if remote is not None and after[:1] == b"," and next_event:
                promised = remote(memoryview(buf)[start : p + 1])
                if promised is not None:
                    return promised, p + 1, False
            result = self._try(buf, start, p + 1, decode)
            if result is not None:
                return result
        end = scan_split(buf[start:])  # every nearby '}' was inside an event: find one by scanning
        result = self._try(buf, start, start + end, decode) if end > 0 else None
        return result if result is not None else (None, 0, False)

    def _try(self, buf: bytes, start: int, end: int, decode: Callable[[bytes], Any]) -> tuple[Any, int, bool] | None:
        text = _batch(buf, start, end)
        try:
            try:
                return decode(text), end, False
            except msgspec.ValidationError:
                raise
            except msgspec.DecodeError as e:
                m = _TRAILING.search(str(e))
                if m:  # the events array closed inside this run: decode up to its ']'
                    n = text.rfind(b"]", 0, int(m.group(1)) - 1) + 1  # msgspec reports 1 + the offset
                    return decode(text[:n]), start + n - 1, True
        except RecursionError:
            raise self._error(nested_too_deep(f"traceEvents after byte {self.bytes_read - len(buf) + start}")) from None
        return None

    def _describe_bad(self, buf: bytes) -> str:
        """What is wrong with the events in ``buf``, the rest of the file."""
        offset = self.bytes_read - len(buf)
        try:
            msgspec.json.decode(b"[" + buf.rstrip(_WS).rstrip(b",") + b"]")
        except RecursionError:
            return nested_too_deep(f"traceEvents after byte {offset}")
        except msgspec.DecodeError as e:
            closed = buf.rstrip(_WS)[-1:] in (b"]", b"}")  # msgspec says "truncated" of some bad strings too
            if "truncated" in str(e).lower() and not closed:
                return f"truncated: the file ends inside an event (after byte {offset})"
            return f"malformed JSON in traceEvents after byte {offset}: {e}"
        return f"malformed JSON in traceEvents after byte {offset}"

    def _find_events_start(self, blocks: Iterator[bytes]) -> tuple[bytes, int]:
        """(the text read so far, where the first event may start in it), the header's keys
        read into ``metadata``. Offsets, not slices: a slice of the first block is a copy."""
        head = b""
        for chunk in blocks:
            head += chunk
            if len(head) > MAX_EVENT_BYTES + self.block:
                raise self._too_long("the header before traceEvents", 0)
            first = _LEADING.match(head).end()
            if first == len(head):
                continue
            if head[first : first + 1] == b"[":
                self.array_form = True
                return head, first + 1
            if head[first : first + 1] != b"{":
                raise self._error("not Chrome trace JSON (does not start with '{' or '[')")
            m = _EVENTS_KEY.search(head, first)
            if m:
                header = head[first : m.start()].rstrip(_WS).rstrip(b",") + b"}"
                self.metadata.update(self._decode_object(header, "header"))
                return head, m.end()
        if not head.strip(_WS):
            raise self._error("empty file")
        if head.lstrip(_WS)[:1] == b"{":
            meta = self._decode_object(head, "document")
            raise self._error(f"no traceEvents array (top-level keys: {', '.join(list(meta)[:8]) or 'none'})")
        raise self._error("not Chrome trace JSON")

    def _read_tail(self, rest: bytes, blocks: Iterator[bytes]) -> None:
        parts, size = [rest], len(rest)
        for chunk in blocks:
            parts.append(chunk)
            size += len(chunk)
            if size > MAX_EVENT_BYTES:  # e.g. a systrace's systemTraceEvents string: the events are read
                self.tail_skipped = True  # and the rest is not read: it may be a gzip bomb
                return
        rest = b"".join(parts).strip(_WS)
        if self.array_form:
            if rest:
                raise self._error("unexpected data after the event array")
            return
        rest = rest.lstrip(b",").lstrip(_WS)
        self.metadata.update(self._decode_object(b"{" + rest, "end"))

    def _decode_object(self, text: bytes, where: str) -> dict[str, Any]:
        try:
            obj = msgspec.json.decode(text)
        except RecursionError:
            raise self._error(nested_too_deep(f"the trace's {where}")) from None
        except msgspec.DecodeError as e:
            if "truncated" in str(e).lower():
                raise self._error(f"truncated: the file ends inside its {where}") from None
            raise self._error(f"malformed JSON in the trace's {where}: {e}") from None
        if not isinstance(obj, dict):
            raise self._error(f"malformed trace {where}")
        return obj


def nested_too_deep(where: str) -> str:
    """The problem of JSON nested deeper than the decoder goes (it stops at Python's recursion
    limit, with a RecursionError, before the stack could overflow)."""
    return f"JSON nested deeper than {sys.getrecursionlimit():,} levels in {where}; not a trace accelview reads"


def event_cut(block: bytes) -> int:
    """Index just past the last ``},`` (and whitespace) in ``block`` that a ``{`` follows (0:
    none near its end): where an event probably starts. Chunks are cut there, so that a batch
    ending at a chunk's end leaves no part-event to copy in front of the next chunk (a wrong
    guess only costs that copy)."""
    pos = len(block)
    for _ in range(MAX_SPLIT_TRIES):
        p = block.rfind(b"}", 0, pos)
        if p < 0:
            return 0
        m = _SEPARATOR.match(block, p + 1)
        if b"," in block[p + 1 : m.end()] and block[m.end() : m.end() + 1] == b"{":
            return m.end()
        pos = p
    return 0


def _batch(buf: bytes, start: int, end: int) -> bytes:
    """``buf[start:end]`` as a JSON array (one copy)."""
    return b"".join((b"[", memoryview(buf)[start:end], b"]"))


def scan_split(buf: bytes) -> int:
    """End (exclusive) of the last whole top-level value in ``buf`` (a run of comma-separated
    events), found by tracking strings and nesting; 0 when there is none. Slower than trying
    candidate ends, so only the fallback."""
    depth, in_string, end = 0, False, 0
    for m in _TOKENS.finditer(buf):
        tok = m.group()
        if in_string:
            if tok == b'"':
                in_string = False
        elif tok == b'"':
            in_string = True
        elif tok in (b"{", b"["):
            depth += 1
        elif tok in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                end = m.end()
            elif depth < 0:  # the closing ']' of the events array
                break
    return end
