"""Typed decoding of one batch of Chrome trace events, and exact µs → ns timestamps.

msgspec decodes a batch straight into small Structs (no dict per event, nothing for the
cyclic GC to walk); ``args`` stays raw JSON until an importer asks for it. An event that does
not fit the Struct (a string timestamp, a numeric name) is counted as malformed and skipped,
not thrown. Chrome timestamps are µs, often with a fraction: float64 holds them to the
nanosecond only below 2**43 µs, so larger fractional timestamps are decoded again exactly.
Timestamps beyond ±2**61 ns are out of range (the digest drops and counts those events) and
durations are clamped to it, so no value wraps around int64.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

import msgspec
import numpy as np

NO_ARGS = msgspec.Raw(b"")
_FRACTIONAL_TS = re.compile(rb'"ts"[ \t\r\n]*:[ \t\r\n]*-?[0-9]+\.[0-9]*[1-9]')  # a timestamp with a fraction
EXACT_LIMIT_US = float(2**43)  # below this, floor + rounded fraction of a float64 µs value is exact to 1 ns


class Event(msgspec.Struct, gc=False):
    """One trace event; fields the importers do not use are skipped by the decoder. The first
    fields follow the order PyTorch's profiler writes them in (the decoder looks keys up fastest so)."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = 0.0
    dur: float = 0.0
    args: msgspec.Raw = NO_ARGS  # raw JSON; empty when the event has none
    id: int | str | None = None
    bp: str = ""
    id2: dict[str, int | str] | None = None  # {"local": …} or {"global": …}, instead of id
    s: str = ""
    correlation: int = -1  # not Chrome's: accelview's export writes the model's correlation here
    xslice: int = -1  # not Chrome's: in accelview's export, the X event (by order) a flow step binds to
    bind_id: int | str | None = None  # flow v2: an X event that starts (flow_out) or ends (flow_in) a flow
    flow_in: bool = False
    flow_out: bool = False


class _ExactTs(msgspec.Struct, gc=False):
    ts: Decimal = Decimal(0)


_decode_events = msgspec.json.Decoder(list[Event]).decode
_decode_raws = msgspec.json.Decoder(list[msgspec.Raw]).decode
_decode_event = msgspec.json.Decoder(Event).decode
_decode_exact = msgspec.json.Decoder(list[_ExactTs]).decode


def decode_events(text: bytes) -> tuple[list[Event], int, bytes]:
    """Decode a JSON array of events: (events, malformed count, the JSON they came from).

    Raises ``msgspec.DecodeError`` when ``text`` is not JSON (the stream then splits
    elsewhere); events of the wrong shape are counted and left out, and the returned JSON is
    then the kept events encoded again (so that it still lines up with them)."""
    try:
        return _decode_events(text), 0, text
    except msgspec.ValidationError:
        pass
    events, malformed = [], 0
    for raw in _decode_raws(text):
        try:
            events.append(_decode_event(raw))
        except msgspec.ValidationError:
            malformed += 1
    return events, malformed, b"[" + b",".join(msgspec.json.encode(e) for e in events) + b"]"


MAX_NS = 2**61  # the largest |timestamp| and duration kept (73 years): starts, ends and offsets stay in int64
_MAX_US = MAX_NS / 1000


def in_range_us(ts_us: np.ndarray) -> np.ndarray:
    """Per value (µs, float64): whether it is finite and within ±``MAX_NS`` once in ns."""
    return np.abs(ts_us) <= _MAX_US  # NaN compares false


def event_times_us(selected: Sequence[Event]) -> np.ndarray:
    """The events' ``ts`` as float64 µs."""
    return np.array([e.ts for e in selected], dtype=np.float64)


def timestamps_ns(ts: np.ndarray, index: np.ndarray, text: bytes) -> np.ndarray:
    """Exact int64 ns timestamps of the events at ``index`` of the batch whose JSON is ``text``,
    from their ``ts`` (µs, float64, each ``in_range_us``; read again from the text, exactly,
    only when float64 lacks the digits)."""
    ip = np.floor(ts)
    frac = ts - ip
    # float64 may have rounded every fraction away (x.999 near 2**51 µs): then the text says so
    if len(ts) and np.abs(ts).max() >= EXACT_LIMIT_US and (frac.any() or _FRACTIONAL_TS.search(text)):
        exact = _decode_exact(text)
        return np.fromiter((int((exact[i].ts * 1000).to_integral_value()) for i in index.tolist()),
                           dtype=np.int64, count=len(index))
    return ip.astype(np.int64) * 1000 + np.rint(frac * 1000).astype(np.int64)


def dur_to_ns(dur_us: np.ndarray, stats: dict[str, int]) -> np.ndarray:
    """Durations in µs (float64) to int64 ns, rounded to the nearest ns; negative ones clamped
    to 0, longer than ``MAX_NS`` (or not finite) to ``MAX_NS``, each counted in ``stats``."""
    with np.errstate(over="ignore", invalid="ignore"):
        ns = dur_us * 1000.0
    neg, long = ns < 0, ~(ns <= MAX_NS)  # NaN is long
    for key, mask, value in (("negative_durations_clamped", neg, 0.0), ("durations_clamped", long & ~neg, MAX_NS)):
        if mask.any():
            stats[key] = stats.get(key, 0) + int(mask.sum())
            ns[mask] = value
    return np.rint(ns).astype(np.int64)
