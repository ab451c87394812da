"""What the trace proves about host offsets: causes never follow their effects.

A receive cannot precede its send, and a collective cannot end on one participant before the
last one arrived. In domain times mapped through the current alignment, each such pair
between hosts A and B bounds the two hosts' remaining errors: with ``est = true + e``,
``true_effect ≥ true_cause + min_gap`` gives ``e_B − e_A ≤ est_effect − est_cause − min_gap``.
With the sync bounds ``|e_X| ≤ error_X`` (the reference host's e is 0 by definition) these are
difference constraints; per window of reference time, shortest paths give each host's
feasible interval, and each host in turn is fixed at the middle of what is left of its
interval (so the corrections satisfy every constraint together). Each host's map, and the
maps of the domains chained through it, shift by its correction, taken at each window's middle
and linear in between (so a map stays continuous and one clock's records keep their order);
the new error bound is what is left of the intervals either side. A window whose constraints
contradict the sync bounds (an event placed in the wrong clock segment, a wrong minimum gap)
is left as the sync samples placed it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .segments import ClockMap, Segment


@dataclass(frozen=True)
class Precedence:
    """Events on ``cause_domain`` that happened no later than ``min_gap_ns`` before the
    matching events on ``effect_domain`` (domain ns, matched by position)."""

    cause_domain: str
    cause_ns: np.ndarray
    effect_domain: str
    effect_ns: np.ndarray
    min_gap_ns: float = 0.0
    cause_segment: np.ndarray | None = None  # clock segments of the events (ClockMap.segment_of)
    effect_segment: np.ndarray | None = None


def collective_precedences(domains: list[str], arrival_ns: np.ndarray, end_ns: np.ndarray,
                           arrival_segment: np.ndarray | None = None,
                           end_segment: np.ndarray | None = None) -> list[Precedence]:
    """A collective ends on no participant before every participant has arrived: for
    collectives as rows and ``domains`` as columns of ``arrival_ns`` and ``end_ns`` (domain ns;
    their clock segments alike, when known), each participant's arrival precedes every other
    participant's end."""
    def col(a: np.ndarray | None, i: int) -> np.ndarray | None:
        return None if a is None else a[:, i]

    return [Precedence(domains[q], arrival_ns[:, q], domains[p], end_ns[:, p], 0.0, col(arrival_segment, q),
                       col(end_segment, p))
            for q in range(len(domains)) for p in range(len(domains)) if p != q]


def _closed(d: np.ndarray) -> np.ndarray:
    """Shortest paths of the difference constraints ``e_j − e_i ≤ d[i, j]`` (Floyd–Warshall)."""
    for k in range(len(d)):
        d = np.minimum(d, d[:, k:k + 1] + d[k:k + 1, :])
    return d


def _fix_in_turn(d: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Each node's error estimate and bound on it, node 0 being the reference (e_0 = 0): each
    node in turn fixed at the middle of its remaining interval; None when the constraints
    contradict each other."""
    d = _closed(d)
    if (np.diag(d) < 0).any():
        return None
    n = len(d)
    e, bound = np.zeros(n), np.full(n, np.inf)
    for x in range(1, n):
        hi, lo = d[0, x], -d[x, 0]
        e[x] = (hi + lo) / 2 if np.isfinite(hi) and np.isfinite(lo) else min(max(0.0, lo), hi)
        bound[x] = max(hi - e[x], e[x] - lo)
        d[0, x], d[x, 0] = min(d[0, x], e[x]), min(d[x, 0], -e[x])
        d = np.minimum(d, np.minimum(d[:, [0]] + d[[0], :], d[:, [x]] + d[[x], :]))
    return e, bound


def tighten(maps: Mapping[str, ClockMap], host_of: Mapping[str, str], reference: str,
            precedences: list[Precedence], window_ns: float = 1e9) -> dict[str, ClockMap]:
    """The maps shifted per window of reference time so that no cause follows its effect (see the
    module docstring). ``host_of`` names each domain's host (a host names itself)."""
    hosts = sorted({host_of[k] for k in maps} - {reference})
    node = {reference: 0, **{h: i + 1 for i, h in enumerate(hosts)}}
    n = len(node)
    slack: dict[tuple[int, int, int], float] = {}
    for p in precedences:
        a, b = node[host_of[p.cause_domain]], node[host_of[p.effect_domain]]
        if a == b or not len(p.cause_ns):
            continue
        rc = maps[p.cause_domain].to_ref(p.cause_ns, p.cause_segment)
        re = maps[p.effect_domain].to_ref(p.effect_ns, p.effect_segment)
        s = re - rc - p.min_gap_ns
        for w_of in (rc, re):  # the pair bounds the windows of both its ends
            w = np.floor(w_of / window_ns).astype(np.int64)
            if w[0] == w[-1] and (w == w[0]).all():  # all in one window (a short capture)
                pairs = [(int(w[0]), float(s.min()))]
            else:
                order = np.lexsort((s, w))
                first = np.concatenate(([True], w[order][1:] != w[order][:-1]))
                pairs = list(zip(w[order][first].tolist(), s[order][first].tolist(), strict=True))
            for wi, si in pairs:
                key = (int(wi), a, b)
                slack[key] = min(slack.get(key, np.inf), float(si))
    if not slack:
        return dict(maps)
    corrections: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for w in sorted({k[0] for k in slack}):
        mid_ref = np.array([(w + 0.5) * window_ns])
        bound = np.zeros(n)
        for h, i in node.items():
            if i:
                bound[i] = float(maps[h].error_of(maps[h].segment_at_ref(mid_ref))[0])
        with_bounds = np.full((n, n), np.inf)
        np.fill_diagonal(with_bounds, 0.0)
        for (wk, a, b), s in slack.items():
            if wk == w:
                with_bounds[a, b] = min(with_bounds[a, b], s)
        with_bounds[0, 1:] = np.minimum(with_bounds[0, 1:], bound[1:])
        with_bounds[1:, 0] = np.minimum(with_bounds[1:, 0], bound[1:])
        fixed = _fix_in_turn(with_bounds)
        if fixed is not None:
            e, new_bound = fixed
            corrections[w] = (e, np.minimum(new_bound, bound + np.abs(e)))
    return {name: _shifted(m, node.get(host_of[name], 0), corrections, window_ns, maps[host_of[name]])
            for name, m in maps.items()}


def _shifted(m: ClockMap, x: int, corrections: dict[int, tuple[np.ndarray, np.ndarray]], window_ns: float,
             host_map: ClockMap) -> ClockMap:
    """``m`` less node ``x``'s correction, which runs through each corrected window's value at
    the window's middle and linearly between them (held beyond the first and last), so that
    the map stays continuous and keeps the records of one clock in order."""
    if x == 0 or not corrections:
        return m
    ws = sorted(corrections)
    centre = np.array([(w + 0.5) * window_ns for w in ws])
    value = np.array([corrections[w][0][x] for w in ws])
    bound = np.array([corrections[w][1][x] for w in ws])
    out: list[Segment] = []
    for s in m.segments:
        r0, r1 = s.to_ref(np.array([float(max(s.start_ns, -(1 << 60))), float(min(s.end_ns, 1 << 60))]))
        inside = centre[(centre > r0) & (centre < r1)]
        cuts = [s.start_ns, *(int(np.floor(s.from_ref(np.array([c]))[0])) for c in inside), s.end_ns]
        for lo, hi in itertools.pairwise(cuts):
            if hi <= lo:
                continue
            a_ref, b_ref = s.to_ref(np.array([float(max(lo, -(1 << 60))), float(min(hi, 1 << 60))]))
            mid = (max(a_ref, r0) + min(b_ref, r1)) / 2
            k = int(np.searchsorted(centre, mid))  # between centres k−1 and k
            if 0 < k < len(ws):
                slope = (value[k] - value[k - 1]) / (centre[k] - centre[k - 1])
                base, err = value[k - 1] - slope * centre[k - 1], max(bound[k - 1], bound[k])
            else:
                j = min(k, len(ws) - 1)
                slope, base, err = 0.0, value[j], bound[j]
            host_err = float(host_map.error_of(host_map.segment_at_ref(np.array([mid])))[0])
            # new ref = ref − (base + slope·ref) = (t − offset − base·scale/(1 − slope)) / (scale/(1 − slope))
            scale = s.scale / (1.0 - slope)
            out.append(Segment(lo, hi, s.offset_ns + base * scale, (scale - 1.0) * 1e6,
                               max(0.0, s.error_ns - host_err) + float(err)))
    return ClockMap(tuple(out))
