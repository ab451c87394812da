"""A clock domain's alignment to the reference: linear segments, and placing timestamps with them.

Each segment covers a range of domain time and says ``ref = (t − offset_ns) / (1 + drift_ppm·1e-6)``
(docs/FORMAT.md, ``clock_segments``), with ``error_ns`` bounding how far that can be from the
truth. A domain has more than one segment when its clock stepped (an NTP step, a device
counter reset); after a backward step the same domain time occurs twice, and only the order
of the records tells the segments apart (:meth:`ClockMap.segment_of` with ``in_order``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

OPEN_START = -(1 << 62)  # the first segment reaches back to any earlier timestamp
OPEN_END = 1 << 62  # and the last forward to any later one
BACKWARD_DROP_NS = 10_000  # records of one clock out of order by less than this are not a step


@dataclass(frozen=True)
class Segment:
    """One linear piece: domain times ``[start_ns, end_ns)`` map to the reference as
    ``(t − offset_ns) / (1 + drift_ppm·1e-6)``, within ``error_ns``."""

    start_ns: int
    end_ns: int
    offset_ns: float
    drift_ppm: float
    error_ns: float

    @property
    def scale(self) -> float:
        """Domain ns per reference ns."""
        return 1.0 + self.drift_ppm * 1e-6

    def to_ref(self, t: np.ndarray) -> np.ndarray:
        """Reference time (float64 ns) of domain times ``t``."""
        return (np.asarray(t, dtype=np.float64) - self.offset_ns) / self.scale

    def from_ref(self, r: np.ndarray) -> np.ndarray:
        """Domain time (float64 ns) of reference times ``r``."""
        return self.offset_ns + np.asarray(r, dtype=np.float64) * self.scale


@dataclass(frozen=True)
class ClockMap:
    """A domain's segments in time order (contiguous in the order the clock ran)."""

    segments: tuple[Segment, ...]

    @classmethod
    def identity(cls) -> ClockMap:
        """The reference clock itself."""
        return cls((Segment(OPEN_START, OPEN_END, 0.0, 0.0, 0.0),))

    def __len__(self) -> int:
        return len(self.segments)

    def segment_of(self, t: np.ndarray, in_order: bool = False) -> np.ndarray:
        """Segment index of each domain time. Without ``in_order``, the latest segment whose
        range holds it (the nearest one when none does). With ``in_order`` the times are records
        in the order the clock produced them: they move to the next segment at the first record
        past a forward step's boundary, or at the first drop back into the next segment's range
        after a backward step (where both ranges hold the repeated times; with no drop seen, at the
        first record past the earlier segment's end, so at most the step's size of records is
        placed by the wrong segment)."""
        t = np.asarray(t, dtype=np.int64)
        if not in_order:
            holder = np.full(len(t), -1, np.int64)
            nearest = np.zeros(len(t), np.int64)
            dist = np.full(len(t), np.inf)
            for k, s in enumerate(self.segments):
                holder[(t >= s.start_ns) & (t < s.end_ns)] = k
                gap = np.maximum(s.start_ns - t, t - s.end_ns).astype(np.float64)
                closer = gap < dist
                nearest[closer], dist[closer] = k, gap[closer]
            return np.where(holder >= 0, holder, nearest)
        # Runs of segments between backward steps: within a run, ranges rise and a search finds them.
        runs = [[0]]
        for k in range(1, len(self.segments)):
            if self.segments[k].start_ns < self.segments[k - 1].end_ns:
                runs.append([])
            runs[-1].append(k)
        run = np.zeros(len(t), np.int64)
        cursor = 0
        for r in range(len(runs) - 1):
            a_end = self.segments[runs[r][-1]].end_ns
            b_start, b_end = self.segments[runs[r + 1][0]].start_ns, self.segments[runs[r + 1][-1]].end_ns
            rest = t[cursor:]
            drop = np.zeros(len(rest), bool)
            drop[1:] = rest[1:] < rest[:-1] - min((a_end - b_start) // 2, BACKWARD_DROP_NS)
            hits = np.flatnonzero((drop & (rest >= b_start) & (rest < b_end)) | (rest >= a_end))
            if not len(hits):
                break
            cursor += int(hits[0])
            run[cursor:] = r + 1
        out = np.zeros(len(t), np.int64)
        for r, members in enumerate(runs):
            sel = run == r
            starts = np.array([self.segments[k].start_ns for k in members], dtype=np.int64)
            out[sel] = members[0] + np.clip(np.searchsorted(starts, t[sel], side="right") - 1, 0, len(members) - 1)
        return out

    def to_ref(self, t: np.ndarray, segment: np.ndarray | None = None) -> np.ndarray:
        """Reference time (float64 ns) of domain times ``t`` (vectorised), through ``segment``
        (indices as :meth:`segment_of` gives them; found by search when omitted)."""
        t = np.asarray(t)
        if len(self.segments) == 1:  # one line: no segment to find
            return self.segments[0].to_ref(t)
        seg = self.segment_of(t) if segment is None else np.asarray(segment)
        offset = np.array([s.offset_ns for s in self.segments])[seg]
        scale = np.array([s.scale for s in self.segments])[seg]
        return (t.astype(np.float64) - offset) / scale

    def from_ref(self, r: np.ndarray, segment: np.ndarray | None = None) -> np.ndarray:
        """Raw domain timestamps (int64) of reference times ``r``, through ``segment`` (the
        segment in force at each reference time when omitted): the inverse of :meth:`to_ref`,
        which keeps a merged capture's raw timestamps recoverable."""
        r = np.asarray(r, dtype=np.float64)
        seg = self.segment_at_ref(r) if segment is None else np.asarray(segment)
        offset = np.array([s.offset_ns for s in self.segments])[seg]
        scale = np.array([s.scale for s in self.segments])[seg]
        return np.rint(offset + r * scale).astype(np.int64)

    def segment_at_ref(self, r: np.ndarray) -> np.ndarray:
        """Segment index in force at each reference time: the segments follow each other in
        reference time, whatever their domain ranges do; each change at the reference time
        halfway between where the one before ends and the next begins (the step's moment, for a
        step placed by :func:`.chain.align_chain`)."""
        segs = self.segments
        edges = [(a.to_ref(np.array([float(a.end_ns)]))[0] + b.to_ref(np.array([float(b.start_ns)]))[0]) / 2
                 for a, b in itertools.pairwise(segs)]
        return np.searchsorted(np.array(edges, dtype=np.float64), np.asarray(r, dtype=np.float64), side="right")

    def error_of(self, segment: np.ndarray) -> np.ndarray:
        """The error bound (ns) of each segment index."""
        return np.array([s.error_ns for s in self.segments])[np.asarray(segment)]


def compose(child: ClockMap, parent: ClockMap) -> ClockMap:
    """The child's alignment to the parent's reference, from the child's alignment to the
    parent clock and the parent clock's to the reference; errors add. Both run in time order,
    so one walk pairs them: a child segment is split where it runs past a forward step of the
    parent, and moves on past a backward step of the parent only where the child's segments meet
    and its parent times drop by about the parent's step (:func:`.chain.align_chain` splits the
    child there)."""
    out: list[Segment] = []
    ps = parent.segments
    k, prev_hi, prev_end = 0, None, None
    for c in child.segments:
        lo, hi = c.to_ref(np.array([max(c.start_ns, -(1 << 60)), min(c.end_ns, 1 << 60)], np.float64))
        while k + 1 < len(ps):
            nxt, forward = ps[k + 1], ps[k + 1].start_ns >= ps[k].end_ns
            # The parent stepped back where the child ran on (its segments meet) but its parent
            # times dropped by about the parent's step.
            dropped = prev_end == c.start_ns and lo < prev_hi - (ps[k].end_ns - nxt.start_ns) / 2
            if (forward and lo >= nxt.start_ns) or (not forward and dropped):
                k += 1
                continue
            break
        start = c.start_ns
        while True:
            p = ps[k]
            split = k + 1 < len(ps) and ps[k + 1].start_ns >= p.end_ns and hi > p.end_ns
            end = int(np.floor(c.from_ref(np.array([float(p.end_ns)]))[0])) if split else c.end_ns
            # child t → parent u = (t − oc)/sc → ref = (u − op)/sp = (t − oc − op·sc)/(sc·sp)
            scale = c.scale * p.scale
            out.append(Segment(start, end, c.offset_ns + p.offset_ns * c.scale, (scale - 1.0) * 1e6,
                               c.error_ns + p.error_ns))
            if not split:
                break
            start, k = end, k + 1
        prev_hi, prev_end = hi, c.end_ns
    return ClockMap(tuple(out))

