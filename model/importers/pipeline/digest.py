"""One batch of JSON trace events → compact columns, ready to merge into a file's collection.

``digest_batch`` is a pure function of the batch's bytes and returns plain data (numpy
columns, short lists, local string tables), so a helper process can make digests as well as
the importing one. Complete events (X), the bulk of every trace, become columns; metadata
events (M) are reduced to the last of each (name, pid, tid), runs of repeated ones collapsed
before decoding (``repeats``); the rarer phases are passed on as events, to be handled one by
one by the collector.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from ...schema import ArgKind
from .args import dict_rows
from .events import NO_ARGS, Event, decode_events, dur_to_ns, event_times_us, in_range_us, timestamps_ns
from .interner import Interner
from .repeats import collapse_repeats

FLOW_PHASES = frozenset("stf")
ARG_PHASES = frozenset("BiIRCbnSF")  # the rarer phases whose arguments are kept (F: as ever, though it ends)
_decode_any = msgspec.json.Decoder().decode
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def decode_args(raws: list[bytes], stats: dict[str, int]) -> list[Any]:
    """Decode events' raw ``args`` at once; when that fails, one by one, each one that does not
    decode (invalid UTF-8, a number beyond float64) becoming ``{}`` and counted."""
    try:
        return _decode_any(b"[" + b",".join(raws) + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    out: list[Any] = []
    for raw in raws:
        try:
            out.append(_decode_any(raw))
        except (msgspec.DecodeError, msgspec.ValidationError):
            out.append({})
            stats["unreadable_args"] = stats.get("unreadable_args", 0) + 1
    return out


def _in_range(d: Digest, evs: list[Event], index: np.ndarray) -> tuple[list[Event], np.ndarray, np.ndarray]:
    """The events whose timestamps are in range (``in_range_us``), their ``index`` and their
    timestamps (µs); the others counted."""
    ts = event_times_us(evs)
    ok = in_range_us(ts)
    if ok.all():
        return evs, index, ts
    d.stats["timestamps_out_of_range"] = d.stats.get("timestamps_out_of_range", 0) + int((~ok).sum())
    return [e for e, keep in zip(evs, ok.tolist(), strict=True) if keep], index[ok], ts[ok]


def _int64s(values: list[int], d: Digest, what: str) -> np.ndarray:
    """``values`` as int64, those beyond it -1 and counted as ``{what}_out_of_range``."""
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        bad = [not INT64_MIN <= v <= INT64_MAX for v in values]
        d.stats[f"{what}_out_of_range"] = d.stats.get(f"{what}_out_of_range", 0) + sum(bad)
        return np.array([-1 if b else v for v, b in zip(values, bad, strict=True)], dtype=np.int64)


@dataclass
class Digest:
    """What one batch holds. String columns are ids into ``strings`` (names, argument keys and
    string values) or ``cats``; ``x["thread"]`` indexes ``threads`` ((pid, tid) pairs);
    ``x["args"]`` numbers the batch's argument sets from 0 (-1: none)."""

    events: int = 0  # decoded events, malformed ones excluded
    malformed: int = 0
    strings: list[str] = field(default_factory=list)
    cats: list[str] = field(default_factory=list)
    threads: list[tuple] = field(default_factory=list)
    x: dict[str, np.ndarray] = field(default_factory=dict)  # thread, ts, dur, name, cat, corr, args
    args: dict[str, np.ndarray] = field(default_factory=dict)  # set, key, kind, int, real, str
    arg_sets: int = 0
    flows_v2: list[tuple] = field(default_factory=list)  # (index among the X events, ts, phase, bind_id)
    others: list[tuple] = field(default_factory=list)  # (index in the batch, ts, Event, its args)
    meta: list[tuple] = field(default_factory=list)  # (name, pid, tid, value): the last of each, in order
    meta_events: int = 0
    stats: dict[str, int] = field(default_factory=dict)


def digest_batch(text: bytes, skip_args: frozenset[str] = frozenset(),
                 skip_flow_cats: frozenset[str] = frozenset(), keep_marked: tuple[bytes, ...] = ()) -> Digest:
    """Decode a JSON array of events (``msgspec.DecodeError`` when it is not JSON) and digest
    it. ``skip_args``: categories of X events whose arguments are dropped, but for events whose
    raw arguments hold one of ``keep_marked`` (``b'"flops"'``); ``skip_flow_cats``: flow
    categories that are only counted."""
    gc_was_on = gc.isenabled()
    gc.disable()  # a batch makes many small objects and no cycles: the collector would only slow it down
    try:
        return _digest(text, skip_args, skip_flow_cats, keep_marked)
    finally:
        if gc_was_on:
            gc.enable()


def _digest(text: bytes, skip_args: frozenset[str], skip_flow_cats: frozenset[str],
            keep_marked: tuple[bytes, ...] = ()) -> Digest:
    head, collapsed, weights = collapse_repeats(text)
    try:
        evs, malformed, rest = decode_events(collapsed)
        first = 0  # where the collapsed events start
        if head is not None:
            evs_before, malformed_before, before = decode_events(head)
            first, evs, malformed = len(evs_before), evs_before + evs, malformed_before + malformed
            if malformed:  # the weights no longer line up: decode the batch as it is
                raise msgspec.DecodeError
            rest = b"".join((before[:-1], b",", rest[1:]))  # the JSON the events came from, for exact timestamps
        text = rest
    except msgspec.DecodeError:
        if weights is None:
            raise
        weights = None  # not JSON: decode the batch as it is, so that errors and their offsets are its own
        evs, malformed, text = decode_events(text)
    d = Digest(events=len(evs), malformed=malformed)
    if not evs:
        return d
    copies = np.ones(len(evs), dtype=np.int64)  # events of the batch each decoded one stands for
    if weights is not None:  # runs of repeated metadata kept once (first in the collapsed part; malformed ones later)
        copies[first : first + len(weights)] = weights
        d.events = int(copies.sum())
    is_x, is_m = _phase_masks(evs)
    strings = Interner()
    xi = np.flatnonzero(is_x)
    if len(xi):
        _complete(d, evs if len(xi) == len(evs) else [evs[i] for i in xi.tolist()], xi, text, strings, skip_args,
                  keep_marked)
    mi = np.flatnonzero(is_m)
    if len(mi):
        _metadata(d, evs if len(mi) == len(evs) else [evs[i] for i in mi.tolist()])
        d.meta_events = int(copies[mi].sum())
    oi = np.flatnonzero(~(is_x | is_m))
    if len(oi):
        _others(d, [evs[i] for i in oi.tolist()], oi, (np.cumsum(copies) - copies)[oi] if weights is not None else oi,
                text, skip_flow_cats)
    d.strings = list(strings)
    return d


def _others(d: Digest, evs: list[Event], index: np.ndarray, position: np.ndarray, text: bytes,
            skip_flow_cats: frozenset[str]) -> None:
    """Events of the rarer phases, each with its timestamp, its index in the batch as written
    (``position``) and its arguments (decoded all at once, for the phases that keep them)."""
    skipped = [e.ph in FLOW_PHASES and e.cat in skip_flow_cats for e in evs]
    if any(skipped):
        for e in (e for e, skip in zip(evs, skipped, strict=True) if skip):
            key = f"flow_events_replaced_{e.cat}"
            d.stats[key] = d.stats.get(key, 0) + 1
        kept = [i for i, skip in enumerate(skipped) if not skip]
        evs, index, position = [evs[i] for i in kept], index[kept], position[kept]
    evs, kept_at, ts = _in_range(d, evs, np.arange(len(evs)))
    index, position = index[kept_at], position[kept_at]
    with_args = [i for i, e in enumerate(evs) if e.args and e.ph in ARG_PHASES]
    args: list[Any] = [{}] * len(evs)
    if with_args:
        for i, a in zip(with_args, decode_args([evs[i].args for i in with_args], d.stats), strict=True):
            args[i] = a if isinstance(a, dict) else {"value": a}
    for e in evs:
        e.args = NO_ARGS  # decoded: the raw text is not needed (nor pickled)
    d.others = list(zip(position.tolist(), timestamps_ns(ts, index, text).tolist(), evs, args, strict=True))


def _phase_masks(evs: list[Event]) -> tuple[np.ndarray, np.ndarray]:
    """(is X, is M) per event, from one joined string when every phase is one ASCII letter."""
    phases = [e.ph for e in evs]
    joined = "".join(phases)
    if len(joined) == len(evs) and joined.isascii():
        code = np.frombuffer(joined.encode(), dtype=np.uint8)
        return code == ord("X"), code == ord("M")
    arr = np.asarray(phases, dtype=object)
    return arr == "X", arr == "M"


def _complete(d: Digest, evs: list[Event], index: np.ndarray, text: bytes, strings: Interner,
              skip_args: frozenset[str], keep_marked: tuple[bytes, ...] = ()) -> None:
    """Columns of the complete events; their kept arguments as typed rows. (List comprehensions:
    the fastest way to read one field of many Structs.)"""
    evs, index, ts = _in_range(d, evs, index)
    n = len(evs)
    if not n:
        return
    dur = dur_to_ns(np.array([e.dur for e in evs], dtype=np.float64), d.stats)
    # A top-level correlation is accelview's (Kineto's is in args). Reading the field of every
    # event costs less than looking for its key in the batch's bytes.
    corr = _int64s([e.correlation for e in evs], d, "correlations")
    # A batch holds few distinct (pid, tid, cat, name): each is looked up once, as one key, and
    # the tables get their values in order of first use, as if each column were interned alone.
    combos: dict[tuple, int] = {}
    combo = np.array([combos.setdefault((e.pid, e.tid, e.cat, e.name), len(combos)) for e in evs], dtype=np.int32)
    pids, tids, cat_values, names = zip(*combos, strict=True)
    cats, threads = Interner(), Interner()
    cat = cats.ids(cat_values)[combo]
    thread = threads.pair_ids(pids, tids)[combo]
    name = strings.ids(names)[combo]
    arg_ids = np.full(n, -1, dtype=np.int32)
    kept_cats = [c for c in cats if c not in skip_args]
    if kept_cats or keep_marked:
        kept = np.isin(cat, [cats[c] for c in kept_cats]) if len(kept_cats) < len(cats) else np.ones(n, bool)
        if keep_marked and not kept.all():
            skipped = np.flatnonzero(~kept).tolist()
            raws = [bytes(evs[j].args) for j in skipped]
            blob = b"\n".join(raws)  # one search in most batches, which hold no marker at all
            if any(m in blob for m in keep_marked):
                kept[[j for j, r in zip(skipped, raws, strict=True) if any(m in r for m in keep_marked)]] = True
        raws = [evs[j].args for j in np.flatnonzero(kept).tolist()]
        keep = np.flatnonzero(kept)[np.array([len(r) for r in raws], dtype=np.int64) > 0].tolist()
        if keep:
            _arguments(d, keep, decode_args([evs[j].args for j in keep], d.stats), corr, arg_ids, strings)
    d.x = {"thread": thread, "ts": timestamps_ns(ts, index, text), "dur": dur, "name": name, "cat": cat,
           "corr": corr, "args": arg_ids}
    d.cats, d.threads = list(cats), list(threads)
    if any(e.bind_id is not None for e in evs):  # Perfetto's flow v2: the step is the slice itself
        for j, e in enumerate(evs):
            if e.bind_id is not None and (e.flow_in or e.flow_out):
                phase = "t" if e.flow_in and e.flow_out else "f" if e.flow_in else "s"
                d.flows_v2.append((j, int(d.x["ts"][j]), phase, e.bind_id))


def _arguments(d: Digest, keep: list[int], decoded: list[Any], corr: np.ndarray, arg_ids: np.ndarray,
               strings: Interner) -> None:
    """The argument sets (decoded) of the events ``keep``; ``args.correlation`` fills ``corr``."""
    sets = [a for a in decoded if type(a) is dict and a]
    if len(sets) < len(decoded):
        keep = [j for j, a in zip(keep, decoded, strict=True) if type(a) is dict and a]
    if not sets:
        return
    arg_ids[keep] = np.arange(len(sets), dtype=np.int32)
    d.args = rows = dict_rows(sets, strings.ids)
    d.arg_sets = len(sets)
    key = strings.get("correlation")
    if key is not None:  # an integer correlation (not a bool), where the event has none of its own
        at = np.flatnonzero((rows["key"] == key) & (rows["kind"] == ArgKind.INT))
        owner = rows["set"][at]
        ints = np.array([type(sets[i]["correlation"]) is int for i in owner.tolist()], dtype=bool)
        events = np.asarray(keep, dtype=np.int64)[owner[ints]]
        values = rows["int"][at[ints]]
        free = corr[events] < 0
        corr[events[free]] = values[free]


def _metadata(d: Digest, evs: list[Event]) -> None:
    """The last event of each (name, pid, tid), in the order of those last events, with its value."""
    last = dict(zip([(e.name, e.pid, e.tid) for e in evs], range(len(evs)), strict=True))
    for i in sorted(last.values()):
        e = evs[i]
        args = decode_args([e.args], d.stats)[0] if e.args else {}
        if not isinstance(args, dict):
            args = {"value": args}
        d.meta.append((e.name, e.pid, e.tid, args.get("name", args.get("labels", args.get("sort_index")))))
