"""Clock maps as rows of a capture's ``clock_segments`` table (docs/FORMAT.md), and back.

A capture's ``clocks`` row *i* is clock domain *i*; its segments are the ``clock_segments`` rows
with ``clock == i``, in the order the clock ran (not by ``start_ns``: after a backward step a
later segment starts lower). The simulator's truth goes to ``truth_clock_segments`` alike.
"""

from __future__ import annotations

import numpy as np

from ..builder import TraceBuilder
from ..table import Table
from .segments import ClockMap, Segment


def add_segments(builder: TraceBuilder, clock: int, m: ClockMap, truth: bool = False) -> None:
    """Write ``m`` as clock ``clock``'s rows of ``clock_segments`` (``truth_clock_segments``)."""
    s = m.segments
    builder.add_rows("truth_clock_segments" if truth else "clock_segments", {
        "clock": np.full(len(s), clock, np.int32),
        "start_ns": np.array([x.start_ns for x in s], np.int64),
        "end_ns": np.array([x.end_ns for x in s], np.int64),
        "offset_ns": np.array([x.offset_ns for x in s], np.float64),
        "drift_ppm": np.array([x.drift_ppm for x in s], np.float64),
        "error_ns": np.array([x.error_ns for x in s], np.float64),
    })


def maps_of(table: Table) -> dict[int, ClockMap]:
    """Each clock's map from a ``clock_segments`` (or ``truth_clock_segments``) table."""
    out: dict[int, list[Segment]] = {}
    for c, a, z, o, d, e in zip(table["clock"].tolist(), table["start_ns"].tolist(), table["end_ns"].tolist(),
                                table["offset_ns"].tolist(), table["drift_ppm"].tolist(),
                                table["error_ns"].tolist(), strict=True):
        out.setdefault(int(c), []).append(Segment(int(a), int(z), float(o), float(d), float(e)))
    return {c: ClockMap(tuple(segs)) for c, segs in out.items()}
