"""Collapse runs of identical metadata events in a batch before it is decoded.

Some profilers repeat a few metadata events hundreds of thousands of times, and decoding them
costs more than all the slices (docs/IMPORT.md). Identical events are identical bytes: a unit
repeated at least ``MIN_REPEATS`` times back to back that decodes on its own as whole metadata
events is kept once with its count, so the collapsed text decodes to the same events, fewer of
them. Metadata written after other events (as PyTorch does) is split off the batch first.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from .events import Event

MIN_REPEATS = 4  # copies of a unit that make a run
MAX_UNIT = 1 << 16  # bytes of one unit, at most
PROBE = 64  # bytes of a unit's start searched for to find its period
MAX_CANDIDATES = 3  # periods tried at one position
MAX_SINGLES = 16  # single events stepped over between runs before giving up
MAX_STRIDE = 256  # copies of a unit compared at once
TAIL = 4096  # bytes at a batch's end looked at for a metadata event
BISECT_BYTES = 256  # how close the search for the first of a batch's last metadata events gets
_WS = b" \t\r\n"
_EVENT_END = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")  # a '}' that may end an event, and the next '{'
_FIRST = re.compile(rb"\[[ \t\r\n]*")
_METADATA = re.compile(rb'"ph"[ \t\r\n]*:[ \t\r\n]*"M"')
_decode = msgspec.json.Decoder(list[Event]).decode


def collapse_repeats(text: bytes | bytearray) -> tuple[bytes | None, bytes | bytearray, np.ndarray | None]:
    """(the events before the first metadata event as a JSON array, or None when there are
    none; the rest, with each run of repeated metadata events kept once; how many events each
    of the first events of that rest stands for) — (None, text, None) when nothing was
    collapsed. ``text`` is a batch: a JSON array of events."""
    first = _FIRST.match(text)
    if first is None:
        return None, text, None
    pos = first.end()
    if _single_at(text, pos) is None:  # perhaps after other events
        found = _first_metadata(text, pos)
        if found is None:
            return None, text, None
        pos = found
    start = pos
    pieces: list[bytes] = []
    weights: list[int] = []
    units: dict[bytes, int | None] = {}  # unit bytes -> events in it (None: not a unit to collapse)
    singles, runs = 0, 0
    while singles <= MAX_SINGLES:
        run = _run_at(text, pos, units)
        if run is not None:
            size, copies, events = run
            pieces.append(text[pos : pos + size])
            weights += [copies] * events
            pos += size * copies
            runs += 1
            singles = 0
            continue
        end = _single_at(text, pos)
        if end is None:
            break
        pieces.append(text[pos:end])
        weights.append(1)
        pos = end
        singles += 1
    if not runs:
        return None, text, None
    head = None if start == first.end() else b"".join([text[:start].rstrip(_WS)[:-1], b"]"])  # without its last comma
    return head, b"".join([b"[", *pieces, text[pos:]]), np.asarray(weights, dtype=np.int64)


def _first_metadata(text: bytes | bytearray, pos: int) -> int | None:
    """Where the metadata events that end a batch start (after other events from ``pos``), or
    None when the batch does not end with one. Found by bisection over byte offsets (metadata
    written last is contiguous; were it not, fewer events would be collapsed, never wrongly)."""
    if _METADATA.search(text, max(pos, len(text) - TAIL)) is None:
        return None
    lo, hi = pos, _event_after(text, max(pos, len(text) - TAIL))
    if hi is None or _single_at(text, hi) is None:
        return None
    while hi - lo > BISECT_BYTES:  # the event at or after lo is not metadata, the one at hi is
        mid = _event_after(text, (lo + hi) // 2)
        if mid is None or mid >= hi:
            break
        if _single_at(text, mid) is None:
            lo = mid + 1
        else:
            hi = mid
    q = _event_after(text, lo)  # the few events left between: the first metadata one among them
    while q is not None and q < hi and _single_at(text, q) is None:
        q = _event_after(text, q + 1)
    return hi if q is None else min(q, hi)


def _event_after(text: bytes | bytearray, pos: int) -> int | None:
    """The '{' of the first event that starts after another one ends, at or after ``pos``."""
    m = _EVENT_END.search(text, pos)
    return None if m is None else m.end() - 1


def _run_at(text: bytes, pos: int, units: dict[bytes, int | None]) -> tuple[int, int, int] | None:
    """(unit size, copies, events per unit) of a run starting at ``pos``, or None."""
    probe = text[pos : pos + PROBE]
    limit = min(len(text), pos + MAX_UNIT + PROBE)
    q = pos
    for _ in range(MAX_CANDIDATES):
        q = text.find(probe, q + 1, limit)
        if q < 0:
            return None
        size = q - pos
        unit = bytes(text[pos:q])
        copies = _copies(text, unit, pos)
        if copies < MIN_REPEATS:
            continue
        if unit not in units:
            units[unit] = _metadata_events(unit)
        events = units[unit]
        if events:
            return size, copies, events
    return None


def _copies(text: bytes, unit: bytes, pos: int) -> int:
    """How many times ``unit`` repeats back to back from ``pos`` (comparing up to
    ``MAX_STRIDE`` copies at once, doubling and halving the stride)."""
    copies, stride, size = 1, 1, len(unit)
    while True:
        if text.startswith(unit * stride, pos + copies * size):
            copies += stride
            stride = min(stride * 2, MAX_STRIDE)
        elif stride > 1:
            stride //= 2
        else:
            return copies


def _metadata_events(unit: bytes) -> int | None:
    """How many events ``unit`` (events, each followed by a comma) holds when all are
    well-formed metadata events; None otherwise."""
    body = unit.rstrip(_WS)
    if not body.endswith(b","):
        return None
    evs = _events(body[:-1])
    return len(evs) if evs and all(e.ph == "M" for e in evs) else None


def _events(body: bytes) -> list[Event] | None:
    """The events of ``body`` (comma-separated), None when it is not JSON of well-formed events."""
    try:
        return _decode(b"[" + body + b"]")
    except msgspec.DecodeError:  # also a ValidationError: an event of the wrong shape
        return None


def _single_at(text: bytes, pos: int) -> int | None:
    """Where the next event starts when one whole metadata event, followed by a comma and
    another event, starts at ``pos``; None otherwise."""
    for i, m in enumerate(_EVENT_END.finditer(text, pos, min(len(text), pos + MAX_UNIT))):
        evs = _events(text[pos : m.start() + 1])
        if evs is not None:  # a whole event (or more: then the first was not followed by a comma)
            return m.end() - 1 if len(evs) == 1 and evs[0].ph == "M" else None
        if i == MAX_CANDIDATES:  # every '}' so far was inside the event
            return None
    return None
