"""How far each host's and device's clock alignment can be trusted, for the timeline's
"Show clock error" marks: per group lane (a host, a device) whose events were moved onto the
reference clock, the largest error bound of its clock's pieces (``clock_segments``, see
``model.align``), else of its ``clocks`` row. The reference clock and unaligned clocks have none."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema import TrackKind
from ..trace import Trace

GROUP_KINDS = (TrackKind.HOST, TrackKind.DEVICE)


@dataclass(frozen=True)
class ClockError:
    """A lane's clock: its name, its largest error bound (ns) and how many pieces it has."""

    clock: str
    error_ns: float
    segments: int


def clock_errors(trace: Trace) -> dict[int, ClockError]:
    """Host and device tracks whose clock was aligned with a stated error, by track id."""
    tr, clocks, segs = trace.tracks, trace.tables["clocks"], trace.tables["clock_segments"]
    if not len(clocks):
        return {}
    out: dict[int, ClockError] = {}
    for t in np.flatnonzero(np.isin(tr.kind, GROUP_KINDS)).tolist():
        c = int(tr.clock[t])
        if not 0 <= c < len(clocks) or int(clocks.reference[c]):
            continue
        mine = np.flatnonzero(segs.clock == c)
        err = float(segs.error_ns[mine].max()) if len(mine) else float(clocks.error_ns[c])
        if err > 0:
            out[t] = ClockError(trace.strings[int(clocks.name[c])], err, max(len(mine), 1))
    return out
