"""The participants of a selected collective, for the timeline to highlight: every device's
slice of the same collective (matched by ``model.analysis.collectives``, the analyses' own
matcher), each participant's arrival, and the last arrival the others waited for (their skew).

Works on one capture (one host's devices) and on a merged cluster trace (hosts as its top-level
tracks), which it reads host by host as the analyses do, through the splitter it is given
(``model.cluster.split_hosts``; the view model sits beside the cluster package, not above it).
Pure numpy; built lazily, once a trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..analysis.collectives import find_collectives, host_name
from ..schema import TrackKind
from ..trace import Trace, track_roots


@dataclass(frozen=True)
class CollectiveMarks:
    """One collective as the timeline draws it: its slices (one per participant, in participant
    order), their arrivals (absolute ns) and the last arrival."""

    name: str
    op: str
    slices: np.ndarray
    arrivals: np.ndarray
    last_arrival_ns: float

    @property
    def skew_ns(self) -> np.ndarray:
        """Per participant: how long it waited for the last one to arrive."""
        return self.last_arrival_ns - self.arrivals



class CollectiveIndex:
    """Which collective each collective slice of a trace belongs to (computed on first use)."""

    def __init__(self, trace: Trace, split: Callable[[Trace], Sequence[Trace]] | None = None) -> None:
        """``split``: a merged cluster trace's hosts as traces of their own, in host order."""
        self.trace = trace
        self.split = split
        self._of: dict[int, int] | None = None
        self._marks: list[CollectiveMarks] = []

    def of(self, sid: int) -> CollectiveMarks | None:
        """The collective slice ``sid`` takes part in, None when it is no matched collective."""
        if sid < 0 or sid >= len(self.trace.slices):
            return None
        if self._of is None:
            if self.trace.track_name(int(self.trace.slices.track[sid])) != "collective":
                return None  # not on a collective lane: no need to match them all yet
            self._build()
        i = self._of.get(int(sid))
        return None if i is None else self._marks[i]

    def all(self) -> list[CollectiveMarks]:
        """Every matched collective, in time order."""
        if self._of is None:
            self._build()
        return list(self._marks)

    def _build(self) -> None:
        trace = self.trace
        tr, sl = trace.tracks, trace.slices
        self._of = {}
        name = trace.strings.lookup("collective")
        lanes = np.flatnonzero((tr.kind == int(TrackKind.EXEC_UNIT)) & (tr.name == name))
        if not len(lanes) or not len(sl):
            return
        merged = "merged" in trace.metadata and self.split is not None
        root = track_roots(tr.parent.astype(np.int64))
        host = host_name(trace)
        lane_of = {(trace.track_name(int(root[t])) if merged else host, int(tr.device[t])): int(t)
                   for t in lanes.tolist()}
        ends = sl.start_ns.astype(np.int64) + sl.dur_ns.astype(np.int64)
        by_lane = {}
        for t in lane_of.values():
            rows = np.flatnonzero(sl.track == t)
            by_lane[t] = rows[np.argsort(ends[rows], kind="stable")]
        for c in find_collectives(self.split(trace) if merged else [trace]):
            ids = []
            for (h, d), end in zip(c.participants, c.ends.tolist(), strict=True):
                t = lane_of.get((h, d))
                rows = by_lane.get(t, np.empty(0, np.int64))
                k = int(np.searchsorted(ends[rows], round(end)))
                if k < len(rows) and ends[rows[k]] == round(end):
                    ids.append(int(rows[k]))
            if len(ids) != len(c.participants):
                continue
            marks = CollectiveMarks(c.name, c.op, np.array(ids, np.int64), c.arrivals.astype(np.float64),
                                    c.last_arrival_ns)
            for sid in ids:
                self._of[sid] = len(self._marks)
            self._marks.append(marks)
