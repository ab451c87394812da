"""Every domain's alignment to the reference, from each domain's fit against its parent.

A device is fitted against its host (PCIe brackets), a host against the reference host (PTP
brackets), or against another host in a tree of exchanges; composing along the chain places
every domain on the reference clock, the error bounds adding up on the way.

A step of a parent clock shows in every child at once, as the opposite jump. The parent's own
exchanges place it only to within their period (PTP: 62.5 ms); the children's, taken every
millisecond and at different moments, place it to within the overlap of their windows. So
before composing, each parent step that children share is moved there, in the parent's map
and in the children's (whose own clocks did not step: their segments meet at the step).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from .brackets import Brackets
from .fit import ClockFit, fit_clock
from .segments import ClockMap, Segment, compose

SAME_JUMP = 0.05  # a child's jump matches its parent's within this share (and 1 µs)


def moved_boundary(m: ClockMap, k: int, end: int, start: int) -> ClockMap:
    """``m`` with the boundary between segments k and k+1 at ``end`` / ``start``."""
    segs = list(m.segments)
    a, b = segs[k], segs[k + 1]
    segs[k] = Segment(a.start_ns, end, a.offset_ns, a.drift_ppm, a.error_ns)
    segs[k + 1] = Segment(start, b.end_ns, b.offset_ns, b.drift_ppm, b.error_ns)
    return ClockMap(tuple(segs))


def _shared_steps(parent: ClockFit, children: dict[str, ClockFit]) -> tuple[ClockMap, dict[str, ClockMap]]:
    """The parent's and children's maps with each parent step the children share placed where
    they all saw it."""
    pmap, cmaps = parent.map, {n: f.map for n, f in children.items()}
    for k, w in enumerate(parent.steps):
        jump = w.jump_ns  # the parent's domain moved by this against its own parent
        lo, hi = w.domain_ns[0], w.domain_ns[1] - jump  # the parent's pre-step readings around it
        seen = []
        for name, f in children.items():
            for j, cw in enumerate(f.steps):
                a, b = cw.parent_ns[0], cw.parent_ns[1] - jump
                if abs(cw.jump_ns + jump) <= SAME_JUMP * abs(jump) + 1000 and a <= hi and b >= lo:
                    seen.append((name, j, a, b))
        if not seen:
            continue
        a, b = max(s[2] for s in seen), min(s[3] for s in seen)
        at = (a + b) / 2  # the parent's reading just before it stepped
        if jump >= 0:
            pmap = moved_boundary(pmap, k, int(np.floor(at + jump / 2)), int(np.floor(at + jump / 2)))
        else:
            pmap = moved_boundary(pmap, k, int(np.ceil(at)), int(np.floor(at + jump)))
        for name, j, _, _ in seen:
            c = cmaps[name]
            t = int(np.floor(c.segments[j].from_ref(np.array([at]))[0]))
            cmaps[name] = moved_boundary(c, j, t, t)
    return pmap, cmaps


def align_chain(fits: Mapping[str, tuple[str, ClockFit]], reference: str) -> dict[str, ClockMap]:
    """``fits[domain] = (parent, the domain's fit to its parent clock)`` → each domain's map to
    ``reference`` (which maps to itself). Raises ValueError on a domain whose chain of parents
    never reaches the reference."""
    maps = {n: f.map for n, (_, f) in fits.items()}
    for parent in {p for p, _ in fits.values()} - {reference}:
        if parent in fits:
            kids = {n: f for n, (p, f) in fits.items() if p == parent}
            maps[parent], moved = _shared_steps(fits[parent][1], kids)
            maps.update(moved)
    out: dict[str, ClockMap] = {reference: ClockMap.identity()}

    def resolve(name: str, seen: tuple[str, ...]) -> ClockMap:
        if name in out:
            return out[name]
        if name not in fits or name in seen:
            raise ValueError(f"clock domain {name!r} does not reach the reference {reference!r}")
        parent_map = resolve(fits[name][0], (*seen, name))
        out[name] = compose(maps[name], parent_map)
        return out[name]

    for name in fits:
        resolve(name, ())
    return out


def align_domains(samples: Iterable[tuple[str, str, Brackets, float | None]], reference: str) -> dict[str, ClockMap]:
    """Every domain's map to ``reference`` from its sync samples: ``(domain, parent, brackets,
    asymmetry bound or None)`` each, fitted (:func:`.fit.fit_clock`) and chained."""
    return align_chain({d: (p, fit_clock(b, a)) for d, p, b, a in samples}, reference)
