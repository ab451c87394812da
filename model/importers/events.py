"""Typed decoding of one batch of Chrome trace events, and exact µs → ns timestamps.

msgspec decodes a batch straight into small Structs (no dict per event, nothing for the
cyclic GC to walk); ``args`` stays raw JSON until an importer asks for it. An event that does
not fit the Struct (a string timestamp, a numeric name) is counted as malformed and skipped,
not thrown. Chrome timestamps are µs, often with a fraction: float64 holds them to the
nanosecond only below 2**43 µs, so larger fractional timestamps are decoded again exactly.
"""

from __future__ import annotations

from decimal import Decimal

import msgspec
import numpy as np

NO_ARGS = msgspec.Raw(b"")
EXACT_LIMIT_US = float(2**43)  # below this, floor + rounded fraction of a float64 µs value is exact to 1 ns


class Event(msgspec.Struct, gc=False):
    """One trace event; fields the importers do not use are skipped by the decoder."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    ts: float = 0.0
    dur: float = 0.0
    pid: int | str = 0
    tid: int | str = 0
    id: int | str | None = None
    id2: dict[str, int | str] | None = None  # {"local": …} or {"global": …}, instead of id
    bp: str = ""
    s: str = ""
    correlation: int = -1  # not Chrome's: accelview's export writes the model's correlation here
    xslice: int = -1  # not Chrome's: in accelview's export, the X event (by order) a flow step binds to
    bind_id: int | str | None = None  # flow v2: an X event that starts (flow_out) or ends (flow_in) a flow
    flow_in: bool = False
    flow_out: bool = False
    args: msgspec.Raw = NO_ARGS  # raw JSON; empty when the event has none


class _ExactTs(msgspec.Struct, gc=False):
    ts: Decimal = Decimal(0)


_decode_events = msgspec.json.Decoder(list[Event]).decode
_decode_raws = msgspec.json.Decoder(list[msgspec.Raw]).decode
_decode_event = msgspec.json.Decoder(Event).decode
_decode_exact = msgspec.json.Decoder(list[_ExactTs]).decode


class Batch:
    """A decoded batch: the events, their exact ns timestamps, and the malformed count."""

    __slots__ = ("events", "malformed", "ts_ns")

    def __init__(self, events: list[Event], ts_ns: np.ndarray, malformed: int) -> None:
        self.events = events
        self.ts_ns = ts_ns
        self.malformed = malformed


def decode_batch(text: bytes) -> Batch:
    """Decode a JSON array of events. Raises ``msgspec.DecodeError`` when ``text`` is not
    JSON (the stream then splits elsewhere); events of the wrong shape are counted."""
    malformed = 0
    try:
        events = _decode_events(text)
    except msgspec.ValidationError:
        events = []
        for raw in _decode_raws(text):
            try:
                events.append(_decode_event(raw))
            except msgspec.ValidationError:
                malformed += 1
        text = b"[" + b",".join(msgspec.json.encode(e) for e in events) + b"]"
    ts = np.fromiter((e.ts for e in events), dtype=np.float64, count=len(events))
    return Batch(events, us_to_ns(ts, text), malformed)


def us_to_ns(ts_us: np.ndarray, text: bytes | None = None) -> np.ndarray:
    """Timestamps in µs (float64) to int64 ns, exact to the nanosecond.

    When some value is fractional and too large for float64 to hold its ns digits, the
    batch's ``text`` is decoded again with exact decimals (slower, only for such traces)."""
    ip = np.floor(ts_us)
    frac = ts_us - ip
    if text is not None and len(ts_us) and np.abs(ts_us).max() >= EXACT_LIMIT_US and frac.any():
        exact = _decode_exact(text)
        return np.fromiter((int((e.ts * 1000).to_integral_value()) for e in exact), dtype=np.int64,
                           count=len(exact))
    return ip.astype(np.int64) * 1000 + np.rint(frac * 1000).astype(np.int64)


def dur_to_ns(dur_us: np.ndarray) -> np.ndarray:
    """Durations in µs (float64) to int64 ns, rounded to the nearest ns."""
    return np.rint(dur_us * 1000.0).astype(np.int64)
