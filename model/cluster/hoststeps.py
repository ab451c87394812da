"""A host clock's steps, found where every one of its devices saw the same jump at once.

A step of a host's clock (NTP setting it) shows in each of its devices' PCIe fits as the
opposite jump at the same moment, and in its PTP fit against host0 only when exchanges were
taken after it (16 a second: a capture of tens of ms may hold none). The devices, read every
100 µs, place it finely. So a jump every device of a host shares (two devices at least, or the
only one when PTP saw the step too) is the host's: the devices' segments are made to meet at
it (their own counters ran on), and the host's map gets the step there: the PTP exchanges
either side of it are fitted apart (a side with too few takes the other side's line, reading
the jump more or less). Device counter resets (each its own jump, to zero) are not shared and stay the
device's.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from ..align import Brackets, ClockFit, ClockMap, Segment, StepWindow, fit_clock
from ..align.chain import moved_boundary
from ..align.segments import OPEN_END, OPEN_START

SAME_JUMP = 0.05  # devices' jumps agree within this share of the jump (and 1 µs)


@dataclass(frozen=True)
class HostStep:
    """The host clock read ``jump_ns`` (within ±``jump_error_ns``) more from its reading
    ``at_ns`` on (on its clock before the step), placed within ±``window_ns``."""

    at_ns: float
    jump_ns: float
    window_ns: float
    jump_error_ns: float


def _agree(a: float, b: float) -> bool:
    return abs(a - b) <= SAME_JUMP * max(abs(a), abs(b)) + 1000.0


def shared_steps(devices: dict[int, ClockFit], host: ClockFit | None) -> list[tuple[HostStep, dict[int, int]]]:
    """Steps every device fit shares (see the module docstring), each with the index of the
    step in each device's fit."""
    if not devices:
        return []
    first, *_ = devices.values()
    out = []
    for w in first.steps:
        jump = -w.jump_ns  # the host's jump
        at_lo, at_hi = w.parent_ns[0], w.parent_ns[1] - jump
        hits: dict[int, int] = {}
        lo, hi = at_lo, at_hi
        for c, f in devices.items():
            for j, cw in enumerate(f.steps):
                a, b = cw.parent_ns[0], cw.parent_ns[1] - jump
                if _agree(-cw.jump_ns, jump) and a <= hi and b >= lo:
                    hits[c] = j
                    lo, hi = max(lo, a), min(hi, b)
                    break
        seen_by_ptp = host is not None and any(_agree(hw.jump_ns, jump) and _near(hw, lo, hi) for hw in host.steps)
        if len(hits) == len(devices) and (len(devices) >= 2 or seen_by_ptp):
            jumps = [-devices[c].steps[j].jump_ns for c, j in hits.items()]
            step = HostStep((lo + hi) / 2, float(np.median(jumps)), max(0.0, (hi - lo) / 2),
                            (max(jumps) - min(jumps)) / 2)
            out.append((step, hits))
    return out


def _near(w: StepWindow, lo: float, hi: float) -> bool:
    """Whether a PTP step window (host readings around it) holds the pre-step readings [lo, hi]."""
    return w.domain_ns[0] <= hi and w.domain_ns[1] - w.jump_ns >= lo


def with_host_steps(ptp: Brackets | None, asymmetry_ns: float | None, devices: dict[int, ClockFit],
                    unsynced: ClockMap) -> tuple[ClockMap, dict[int, ClockMap], list[HostStep]]:
    """The host's map (host raw → reference: fitted from its ``ptp`` exchanges, ``unsynced``
    without two of them) and its devices' maps (device raw → host raw) with each shared step
    placed where the devices saw it, and those steps. The exchanges either side of a step are
    fitted apart; a side with fewer than two takes its neighbour's line moved by the jump."""
    fit = fit_clock(ptp, asymmetry_ns) if ptp is not None and len(ptp) >= 2 else None
    found = shared_steps(devices, fit)
    maps = {c: f.map for c, f in devices.items()}
    if not found:
        return (fit.map if fit is not None else unsynced), maps, []
    for step, hits in found:
        for c, j in hits.items():  # the device ran on: its segments meet at the step
            t = int(np.floor(maps[c].segments[j].from_ref(np.array([step.at_ns]))[0]))
            maps[c] = moved_boundary(maps[c], j, t, t)
    steps = [st for st, _ in found]
    return _host_map(ptp, asymmetry_ns, steps, unsynced), maps, steps


def _host_map(ptp: Brackets | None, asymmetry_ns: float | None, steps: list[HostStep], unsynced: ClockMap) -> ClockMap:
    """The host's map pieced together between its ``steps`` (see :func:`with_host_steps`)."""
    cuts = [0]
    for st in steps:  # the first exchange that read the clock after the step (its reading less the jump is past it)
        after = np.flatnonzero(ptp.domain_ns[cuts[-1]:] - st.jump_ns >= st.at_ns) if ptp is not None else []
        cuts.append(cuts[-1] + int(after[0]) if len(after) else (len(ptp) if ptp is not None else 0))
    cuts.append(len(ptp) if ptp is not None else 0)
    parts: list[list[Segment] | None] = []
    for a, z in itertools.pairwise(cuts):
        part = Brackets(ptp.parent_send_ns[a:z], ptp.domain_ns[a:z], ptp.parent_recv_ns[a:z]) if ptp is not None \
            else None
        parts.append(list(fit_clock(part, asymmetry_ns).map.segments) if part is not None and len(part) >= 2 else None)
    if all(p is None for p in parts):
        parts[0] = list(unsynced.segments)
    for k in range(1, len(parts)):  # a side without exchanges enough: its neighbour's line moved by the jump
        if parts[k] is None and parts[k - 1] is not None:
            parts[k] = [_shifted(parts[k - 1][-1], steps[k - 1], +1)]
    for k in range(len(parts) - 2, -1, -1):
        if parts[k] is None:
            parts[k] = [_shifted(parts[k + 1][0], steps[k], -1)]
    segs: list[Segment] = []
    for k, part in enumerate(parts):
        body = list(part or ())
        if k:
            end, start = _boundary(steps[k - 1])
            segs[-1] = replace(segs[-1], end_ns=end)
            body[0] = replace(body[0], start_ns=start)
        segs += body
    return ClockMap(tuple(segs))


def _boundary(st: HostStep) -> tuple[int, int]:
    """Where the segment before a step ends and the one after starts, in host readings: a forward
    step's unread gap split; after a backward step the next reaches back over the repeated readings."""
    if st.jump_ns >= 0:
        edge = int(np.floor(st.at_ns + st.jump_ns / 2))
        return edge, edge
    return int(np.ceil(st.at_ns)), int(np.floor(st.at_ns + st.jump_ns))


def _shifted(s: Segment, st: HostStep, sign: int) -> Segment:
    """``s`` read ``sign`` × the step's jump more, its error grown by the jump's uncertainty."""
    return Segment(OPEN_START, OPEN_END, s.offset_ns + sign * st.jump_ns, s.drift_ppm, s.error_ns + st.jump_error_ns)
