"""An alignment measured against a simulated cluster's truth: events placed as a capture holds
them, causes after their effects counted, and each domain's error against its parent.

Each domain's events are placed in record order (their true order, as the domain's record
stream would hold them), so that a clock's repeated timestamps after a backward step go to
the right segment (:meth:`accelview.model.align.ClockMap.segment_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from accelview.model.align import ClockMap, Precedence, collective_precedences

from .cluster import REFERENCE, ClusterClocks
from .events import Collectives, EventPairs

Placer = Callable[[str, np.ndarray, np.ndarray], np.ndarray]  # (domain, raw ns, true ns) → reference ns


def segments_in_order(m: ClockMap, raw: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Segment of each raw timestamp, the events taken in their true (record) order."""
    order = np.argsort(true, kind="stable")
    seg = np.empty(len(raw), np.int64)
    seg[order] = m.segment_of(raw[order], in_order=True)
    return seg


def placer(maps: Mapping[str, ClockMap]) -> Placer:
    """Places one domain's events on the reference through ``maps``, in record order."""
    def place(domain: str, raw: np.ndarray, true: np.ndarray) -> np.ndarray:
        m = maps[domain]
        return m.to_ref(raw, segments_in_order(m, raw, true))
    return place


def trace_precedences(maps: Mapping[str, ClockMap], pairs: list[EventPairs], coll: Collectives) -> list[Precedence]:
    """What the trace proves, as the tightening step takes it: every send before its receive,
    every collective arrival before its end on every other participant (segments by record order)."""
    out = [Precedence(p.cause_domain, p.cause_ns, p.effect_domain, p.effect_ns, 0.0,
                      segments_in_order(maps[p.cause_domain], p.cause_ns, p.cause_true),
                      segments_in_order(maps[p.effect_domain], p.effect_ns, p.effect_true))
           for p in pairs if p.kind == "send"]
    seg_a = np.stack([segments_in_order(maps[d], coll.arrival_ns[:, i], coll.arrival_true[:, i])
                      for i, d in enumerate(coll.domains)], axis=1)
    seg_e = np.stack([segments_in_order(maps[d], coll.end_ns[:, i], coll.end_true[:, i])
                      for i, d in enumerate(coll.domains)], axis=1)
    return out + collective_precedences(coll.domains, coll.arrival_ns, coll.end_ns, seg_a, seg_e)


def violations(place: Placer, pairs: list[EventPairs], coll: Collectives) -> int:
    """Effects placed before their causes: completions before launches, receives before sends,
    collective ends before the last participant's arrival."""
    n = 0
    for p in pairs:
        n += int((place(p.effect_domain, p.effect_ns, p.effect_true)
                  < place(p.cause_domain, p.cause_ns, p.cause_true)).sum())
    arr = np.stack([place(d, coll.arrival_ns[:, i], coll.arrival_true[:, i]) for i, d in enumerate(coll.domains)], 1)
    end = np.stack([place(d, coll.end_ns[:, i], coll.end_true[:, i]) for i, d in enumerate(coll.domains)], 1)
    return n + int((end < arr.max(axis=1, keepdims=True)).sum())


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
    return np.abs(np.concatenate(hd)), np.abs(np.concatenate(hh)) if hh else np.zeros(1)


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
    return float(np.concatenate(inside).mean())
