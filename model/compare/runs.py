"""One run made ready for comparison: its analysis report, the work it did (device ops and
copies), each piece of work's op family and lane, and its iterations.

Iterations are the run's phases (top-level host annotations: ProfilerStep#N, "decode 7", a
script's ranges) grouped by family; work belongs to the iteration in which the host call that
launched it started (device work runs after the call that launched it: a kernel of step N that
finishes after step N+1 began is still step N's), or, when nothing launched it, the one it
started in. Work outside every phase belongs to the group ``OUTSIDE``.

Lanes are the host's runtime API and driver queues and the device's units, streams, DMA engines
and PCIe directions; a host call that waited for the device (a synchronize, a blocking copy)
counts as waiting, not as work on its lane.

Everything here is O(n) or O(n log phases) over the slices: no sort of all the work."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from accelview.model.analysis.report import Report, analyze
from accelview.model.analysis.roles import Roles
from accelview.model.analysis.stats import slices_of_kinds
from accelview.model.schema import TrackKind
from accelview.model.trace import Trace

from .families import Vocabulary, family

OUTSIDE = "outside phases"  # the group of work no phase holds (the whole run when there are none)
LANE_KINDS = (TrackKind.RUNTIME_API, TrackKind.DRIVER_QUEUE, TrackKind.EXEC_UNIT, TrackKind.GPU_STREAM,
              TrackKind.DMA_ENGINE, TrackKind.PCIE)


@dataclass
class Group:
    """The occurrences of one phase family in one run (sorted by start), and which occurrence
    each work slice and each lane slice belongs to (-1: none)."""

    name: str
    start_ns: np.ndarray
    end_ns: np.ndarray
    occ: np.ndarray  # per work slice of the run
    lane_occ: np.ndarray  # per lane slice of the run
    everything: bool = False  # one occurrence holding all the run's work and lane slices (no phases)

    @property
    def n(self) -> int:
        """How many times the phase ran."""
        return len(self.start_ns)

    @property
    def dur_ns(self) -> np.ndarray:
        """Each occurrence's duration."""
        return self.end_ns - self.start_ns

    def members(self, k: int) -> np.ndarray:
        """Positions of the work slices of occurrence ``k``."""
        return np.flatnonzero(self.occ == k)


@dataclass
class RunData:
    """A trace, its report, and its work keyed for comparison."""

    trace: Trace
    report: Report
    roles: Roles
    work: np.ndarray  # slice ids of device ops and copies (table order)
    op: np.ndarray  # per work slice: op family id (shared vocabulary)
    lane_ids: np.ndarray  # slice ids of depth-0 slices on the lanes compared (host API, queues, device)
    lane: np.ndarray  # per lane slice: lane id (shared lane vocabulary)
    groups: dict[str, Group]

    @cached_property
    def work_time(self) -> np.ndarray:
        """Per work slice: the time that places it in an iteration."""
        return _placing_time(self.trace, self.roles, self.work)

    @cached_property
    def lane_time(self) -> np.ndarray:
        """Per lane slice: the time that places it in an iteration."""
        return _placing_time(self.trace, self.roles, self.lane_ids)

    @cached_property
    def dur(self) -> np.ndarray:
        """Durations of the work slices (integers: the sums and the rank tests take them as float64,
        so a float copy of millions of them is not made here)."""
        return self.trace.slices.dur_ns[self.work]

    @cached_property
    def lane_dur(self) -> np.ndarray:
        """Durations of the lane slices (integers, like ``dur``)."""
        return self.trace.slices.dur_ns[self.lane_ids]


def _placing_time(trace: Trace, roles: Roles, ids: np.ndarray) -> np.ndarray:
    """When the host call that launched each slice started (the slice's own start when none)."""
    root, _ = roles.chain
    r = root[ids]
    own = trace.slices.start_ns[ids]
    return np.where(r >= 0, trace.slices.start_ns[np.maximum(r, 0)], own)


def lane_key(trace: Trace, track: int, multi_device: bool) -> str:
    """A lane's name for matching: its track name (DMA engines as one family), with the device in
    front when several exist."""
    name = family(trace.track_name(track)) if trace.tracks.kind[track] == TrackKind.DMA_ENGINE \
        else trace.track_name(track)
    dev = int(trace.tracks.device[track])
    return f"device {dev} {name}" if multi_device and dev >= 0 else name


def prepare(trace: Trace, ops: Vocabulary, lanes: Vocabulary, report: Report | None = None,
            roles: Roles | None = None) -> RunData:
    """Analyse ``trace`` (unless ``report`` is given) and key its work, lanes and iterations
    (``roles``: the trace's, when the caller has them)."""
    roles = roles or Roles(trace)
    report = report if report is not None else analyze(trace, roles, tables=False)
    s = trace.slices
    work = np.concatenate((roles.device_ops, roles.copies))
    op = ops.of_strings(trace.strings, s.name[work])
    lane_ids = slices_of_kinds(trace, LANE_KINDS)
    waited = np.zeros(len(s), bool)
    waited[roles.blocking_calls] = True  # host time spent waiting is not work
    lane_ids = lane_ids[(s.depth[lane_ids] == 0) & ~waited[lane_ids]]
    used = np.flatnonzero(np.bincount(s.track[lane_ids], minlength=len(trace.tracks)))
    devices = {int(trace.tracks.device[t]) for t in used} - {-1}
    key = np.full(len(trace.tracks), -1, np.int64)
    for t in used.tolist():
        key[t] = lanes.id(lane_key(trace, t, len(devices) > 1))
    run = RunData(trace, report, roles, work, op, lane_ids, key[s.track[lane_ids]], {})
    run.groups = _groups(run)
    return run


def _occurrence(start: np.ndarray, end: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Index of the occurrence [start, end) holding each time, -1 for none (occurrences of one
    family do not overlap)."""
    i = np.searchsorted(start, times, "right") - 1
    ok = (i >= 0) & (times < end[np.maximum(i, 0)])
    return np.where(ok, i, -1).astype(np.int32)


def _groups(run: RunData) -> dict[str, Group]:
    by_family: dict[str, list[tuple[int, int]]] = {}
    for p in run.report.phases[1:]:  # [0] is the whole run
        by_family.setdefault(family(p.name), []).append((p.start_ns, p.end_ns))
    out: dict[str, Group] = {}
    inside = np.zeros(len(run.work), bool)
    lane_inside = np.zeros(len(run.lane_ids), bool)
    for name, spans in by_family.items():
        spans.sort()
        a = np.array([x for x, _ in spans], np.int64)
        z = np.array([y for _, y in spans], np.int64)
        g = Group(name, a, z, _occurrence(a, z, run.work_time), _occurrence(a, z, run.lane_time))
        inside |= g.occ >= 0
        lane_inside |= g.lane_occ >= 0
        out[name] = g
    if not inside.all() or not by_family:
        t0, t1 = run.trace.time_bounds()
        out[OUTSIDE] = Group(OUTSIDE, np.array([t0], np.int64), np.array([t1], np.int64),
                             np.where(inside, np.int32(-1), np.int32(0)),
                             np.where(lane_inside, np.int32(-1), np.int32(0)),
                             everything=not by_family)
    return out
