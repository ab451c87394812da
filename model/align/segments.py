"""A clock domain's alignment to the reference: linear segments, and placing timestamps with them.

Each segment covers a range of domain time and says ``ref = (t − offset_ns) / (1 + drift_ppm·1e-6)``
(docs/FORMAT.md, ``clock_segments``), with ``error_ns`` bounding how far that can be from the
truth. A domain has more than one segment when its clock stepped (an NTP step, a device
counter reset); after a backward step the same domain time occurs twice, and only the order
of the records tells the segments apart (:meth:`ClockMap.segment_of` with ``in_order``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

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
        out = np.zeros(len(t), np.int64)
        cursor = 0
        for k in range(len(self.segments) - 1):
            a, b = self.segments[k], self.segments[k + 1]
            rest = t[cursor:]
            if b.start_ns >= a.end_ns:  # forward
                hits = np.flatnonzero(rest >= b.start_ns)
            else:  # backward: a drop into the next range, or failing that the first time past this one
                drop = np.zeros(len(rest), bool)
                drop[1:] = rest[1:] < rest[:-1] - min((a.end_ns - b.start_ns) // 2, BACKWARD_DROP_NS)
                hits = np.flatnonzero((drop & (rest >= b.start_ns) & (rest < b.end_ns)) | (rest >= a.end_ns))
            if not len(hits):
                break
            cursor += int(hits[0])
            out[cursor:] = k + 1
        return out

    def to_ref(self, t: np.ndarray, segment: np.ndarray | None = None) -> np.ndarray:
        """Reference time (float64 ns) of domain times ``t`` (vectorised), through ``segment``
        (indices as :meth:`segment_of` gives them; found by search when omitted)."""
        t = np.asarray(t)
        seg = self.segment_of(t) if segment is None else np.asarray(segment)
        offset = np.array([s.offset_ns for s in self.segments])[seg]
        scale = np.array([s.scale for s in self.segments])[seg]
        return (t.astype(np.float64) - offset) / scale

    def segment_at_ref(self, r: np.ndarray) -> np.ndarray:
        """Segment index in force at each reference time: the segments follow each other in
        reference time, whatever their domain ranges do."""
        firsts = [s.to_ref(np.array([float(s.start_ns)]))[0] for s in self.segments[1:]]
        return np.searchsorted(np.array(firsts, dtype=np.float64), np.asarray(r, dtype=np.float64), side="right")

    def error_of(self, segment: np.ndarray) -> np.ndarray:
        """The error bound (ns) of each segment index."""
        return np.array([s.error_ns for s in self.segments])[np.asarray(segment)]


def compose(child: ClockMap, parent: ClockMap) -> ClockMap:
    """The child's alignment to the parent's reference, from the child's alignment to the
    parent clock and the parent clock's to the reference. A child segment is split where the
    parent's segments change (by the child's own mapping of the parent's boundaries); errors add."""
    out: list[Segment] = []
    for c in child.segments:
        # Parent-domain range this child segment maps onto, split at the parent's boundaries.
        lo, hi = c.to_ref(np.array([max(c.start_ns, -(1 << 60)), min(c.end_ns, 1 << 60)], np.float64))
        cuts = [p for p in parent.segments if p.end_ns > lo and p.start_ns < hi] or [parent.segments[-1]]
        for i, p in enumerate(cuts):
            start = c.start_ns if i == 0 else int(np.floor(c.from_ref(np.array([p.start_ns]))[0]))
            end = c.end_ns if i == len(cuts) - 1 else int(np.floor(c.from_ref(np.array([p.end_ns]))[0]))
            # child t → parent u = (t − oc)/sc → ref = (u − op)/sp = (t − oc − op·sc)/(sc·sp)
            scale = c.scale * p.scale
            out.append(Segment(start, end, c.offset_ns + p.offset_ns * c.scale, (scale - 1.0) * 1e6,
                               c.error_ns + p.error_ns))
    return ClockMap(tuple(out))


def with_error(m: ClockMap, extra_ns: Sequence[float] | float) -> ClockMap:
    """The map with every segment's error bound raised by ``extra_ns`` (one value, or one per segment)."""
    extra = np.broadcast_to(np.asarray(extra_ns, dtype=np.float64), (len(m),))
    return ClockMap(tuple(replace(s, error_ns=s.error_ns + float(e)) for s, e in zip(m.segments, extra, strict=True)))
