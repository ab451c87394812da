"""An alignment measured against a simulated cluster's truth: events placed as a capture holds
them, causes after their effects counted, and each domain's error against its parent.

Each domain's events are placed in record order (their true order, as the domain's record
stream would hold them), so that a clock's repeated timestamps after a backward step go to
the right segment (:meth:`accelview.model.align.ClockMap.segment_of`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from accelview.model.align import ClockMap, Precedence, collective_precedences

from .cluster import REFERENCE, ClusterClocks
from .events import Collectives, EventPairs

Streams = dict[str, tuple[np.ndarray, np.ndarray]]  # domain → (true ns, raw ns) of its records in order


def record_streams(pairs: list[EventPairs], coll: Collectives) -> Streams:
    """Each domain's records, every event it stamped, in the order it stamped them: what one
    domain's part of a capture holds."""
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for p in pairs:
        parts.setdefault(p.cause_domain, []).append((p.cause_true, p.cause_ns))
        parts.setdefault(p.effect_domain, []).append((p.effect_true, p.effect_ns))
    for i, d in enumerate(coll.domains):
        parts.setdefault(d, []).extend([(coll.arrival_true[:, i], coll.arrival_ns[:, i]),
                                        (coll.end_true[:, i], coll.end_ns[:, i])])
    out = {}
    for d, arrays in parts.items():
        true, raw = np.concatenate([t for t, _ in arrays]), np.concatenate([r for _, r in arrays])
        order = np.argsort(true, kind="stable")
        out[d] = (true[order], raw[order])
    return out


def segments_in_order(m: ClockMap, raw: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Segment of each raw timestamp, the events taken in their true (record) order."""
    order = np.argsort(true, kind="stable")
    seg = np.empty(len(raw), np.int64)
    seg[order] = m.segment_of(raw[order], in_order=True)
    return seg


class Placer:
    """Places a domain's events on the reference through ``maps``: each event in the segment
    its domain's record stream (``streams``) puts it, or, for events outside the streams, in
    the order of the events given."""

    def __init__(self, maps: Mapping[str, ClockMap], streams: Streams | None = None) -> None:
        self.maps, self.streams = maps, streams or {}
        self._segs: dict[str, np.ndarray] = {}

    def segment(self, domain: str, raw: np.ndarray, true: np.ndarray) -> np.ndarray:
        """The clock segment of each event."""
        m = self.maps[domain]
        if domain not in self.streams:
            return segments_in_order(m, raw, true)
        st_true, st_raw = self.streams[domain]
        if domain not in self._segs:
            self._segs[domain] = m.segment_of(st_raw, in_order=True)
        at = np.clip(np.searchsorted(st_true, true), 0, len(st_true) - 1)
        if not np.array_equal(st_raw[at], raw):
            return segments_in_order(m, raw, true)
        return self._segs[domain][at]

    def __call__(self, domain: str, raw: np.ndarray, true: np.ndarray) -> np.ndarray:
        """Reference ns of a domain's events (raw ns, true ns)."""
        return self.maps[domain].to_ref(raw, self.segment(domain, raw, true))


def trace_precedences(maps: Mapping[str, ClockMap], pairs: list[EventPairs], coll: Collectives) -> list[Precedence]:
    """What the trace proves, as the tightening step takes it: every send before its receive,
    every collective arrival before its end on every other participant (segments by record order)."""
    seg = Placer(maps, record_streams(pairs, coll)).segment
    out = [Precedence(p.cause_domain, p.cause_ns, p.effect_domain, p.effect_ns, 0.0,
                      seg(p.cause_domain, p.cause_ns, p.cause_true), seg(p.effect_domain, p.effect_ns, p.effect_true))
           for p in pairs if p.kind == "send"]
    if not coll.domains:
        return out
    seg_a = np.stack([seg(d, coll.arrival_ns[:, i], coll.arrival_true[:, i]) for i, d in enumerate(coll.domains)], 1)
    seg_e = np.stack([seg(d, coll.end_ns[:, i], coll.end_true[:, i]) for i, d in enumerate(coll.domains)], 1)
    return out + collective_precedences(coll.domains, coll.arrival_ns, coll.end_ns, seg_a, seg_e)


def violations(place: Placer, pairs: list[EventPairs], coll: Collectives) -> int:
    """Effects placed before their causes: completions before launches, receives before sends,
    collective ends before the last participant's arrival."""
    n = 0
    for p in pairs:
        n += int((place(p.effect_domain, p.effect_ns, p.effect_true)
                  < place(p.cause_domain, p.cause_ns, p.cause_true)).sum())
    if not coll.domains:
        return n
    arr = np.stack([place(d, coll.arrival_ns[:, i], coll.arrival_true[:, i]) for i, d in enumerate(coll.domains)], 1)
    end = np.stack([place(d, coll.end_ns[:, i], coll.end_true[:, i]) for i, d in enumerate(coll.domains)], 1)
    return n + int((end < arr.max(axis=1, keepdims=True, initial=-np.inf)).sum())


def placement_errors(clocks: ClusterClocks, place: Placer, seconds: float, seed: int,
                     instants: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    """|error| (ns) at the same true instants of each device against its host and of each host
    against host0 (so a constant shift of everything does not count)."""
    rng = np.random.default_rng([seed, 31])
    true = np.sort(rng.integers(0, int(seconds * 1e9), instants))
    hd, hh = [], []
    ref = place(REFERENCE, clocks.clock(REFERENCE).read(true), true)
    for dom, parent in clocks.domains():
        here = place(dom, clocks.clock(dom).read(true), true)
        if "/" in dom:
            hd.append(here - place(parent, clocks.clock(parent).read(true), true))
        else:
            hh.append(here - ref)
    return (np.abs(np.concatenate(hd)) if hd else np.zeros(1)), (np.abs(np.concatenate(hh)) if hh else np.zeros(1))


def within_bounds(clocks: ClusterClocks, maps: Mapping[str, ClockMap], seconds: float, seed: int,
                  instants: int = 20_000) -> float:
    """Share of (domain, instant) placements against host0's true reading that fall within the
    error bound of the segment that placed them."""
    rng = np.random.default_rng([seed, 37])
    true = np.sort(rng.integers(0, int(seconds * 1e9), instants))
    ref = clocks.clock(REFERENCE).read(true)
    inside = []
    for dom, _ in clocks.domains():
        raw = clocks.clock(dom).read(true)
        seg = segments_in_order(maps[dom], raw, true)
        inside.append(np.abs(maps[dom].to_ref(raw, seg) - ref) <= maps[dom].error_of(seg))
    return float(np.concatenate(inside).mean()) if inside else 1.0
