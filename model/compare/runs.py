"""One run made ready for comparison: its analysis report, the work it did (device ops and
copies), each piece of work's op family and lane, and its iterations.

Iterations are the run's phases (top-level host annotations: ProfilerStep#N, "decode 7", a
script's ranges) grouped by family; work belongs to the iteration in which the host call that
launched it started (device work runs after the call that launched it: a kernel of step N that
finishes after step N+1 began is still step N's), or, when nothing launched it, the one it
started in. Work outside every phase belongs to the group ``OUTSIDE``.

Lanes are the host's runtime API and driver queues and the device's units, streams, DMA engines
and PCIe directions; a host call that waited for the device (a synchronize, a blocking copy)
counts as waiting, not as work on its lane."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    """The occurrences of one phase family in one run (sorted by start) and the work in each."""

    name: str
    start_ns: np.ndarray
    end_ns: np.ndarray
    work: list[np.ndarray] = field(default_factory=list)  # per occurrence: positions in RunData.work

    @property
    def n(self) -> int:
        """How many times the phase ran."""
        return len(self.start_ns)

    @property
    def dur_ns(self) -> np.ndarray:
        """Each occurrence's duration."""
        return self.end_ns - self.start_ns


@dataclass
class RunData:
    """A trace, its report, and its work keyed for comparison."""

    trace: Trace
    report: Report
    work: np.ndarray  # slice ids of device ops and copies, by start
    op: np.ndarray  # per work slice: op family id (shared vocabulary)
    lane: np.ndarray  # per lane slice (``lane_ids``): lane id (shared lane vocabulary)
    lane_ids: np.ndarray  # slice ids of depth-0 slices on the lanes compared (host API, queues, device)
    lane_work: np.ndarray  # per lane slice: the time that places it in an iteration
    work_time: np.ndarray  # per work slice: the time that places it in an iteration
    groups: dict[str, Group]

    @property
    def dur(self) -> np.ndarray:
        """Durations of the work slices."""
        return self.trace.slices.dur_ns[self.work]


def _placing_time(trace: Trace, roles: Roles, ids: np.ndarray) -> np.ndarray:
    """When the host call that launched each slice started (the slice's own start when none)."""
    root, _ = roles.chain
    r = root[ids]
    own = trace.slices.start_ns[ids]
    return np.where(r >= 0, trace.slices.start_ns[np.maximum(r, 0)], own)


def lane_key(trace: Trace, track: int, multi_device: bool) -> str:
    """A lane's name for matching: its track name, with the device in front when several exist."""
    name = family(trace.track_name(track)) if trace.tracks.kind[track] == TrackKind.DMA_ENGINE \
        else trace.track_name(track)
    dev = int(trace.tracks.device[track])
    return f"device {dev} {name}" if multi_device and dev >= 0 else name


def prepare(trace: Trace, ops: Vocabulary, lanes: Vocabulary, report: Report | None = None) -> RunData:
    """Analyse ``trace`` (unless ``report`` is given) and key its work, lanes and iterations."""
    report = report if report is not None else analyze(trace)
    roles = Roles(trace)
    s = trace.slices
    work = np.concatenate((roles.device_ops, roles.copies))
    work = work[np.argsort(s.start_ns[work], kind="stable")]
    op = ops.of_strings(trace.strings, s.name[work])
    lane_ids = slices_of_kinds(trace, LANE_KINDS)
    lane_ids = lane_ids[s.depth[lane_ids] == 0]
    lane_ids = lane_ids[~np.isin(lane_ids, roles.blocking_calls)]  # host time spent waiting is not work
    tracks, inverse = np.unique(s.track[lane_ids], return_inverse=True)
    devices = {int(trace.tracks.device[t]) for t in tracks} - {-1}
    keys = np.array([lanes.id(lane_key(trace, int(t), len(devices) > 1)) for t in tracks], np.int64)
    lane = keys[inverse] if len(tracks) else np.empty(0, np.int64)
    run = RunData(trace, report, work, op, lane, lane_ids, _placing_time(trace, roles, lane_ids),
                  _placing_time(trace, roles, work), {})
    run.groups = _groups(run)
    return run


def _groups(run: RunData) -> dict[str, Group]:
    by_family: dict[str, list[tuple[int, int]]] = {}
    for p in run.report.phases[1:]:  # [0] is the whole run
        by_family.setdefault(family(p.name), []).append((p.start_ns, p.end_ns))
    out: dict[str, Group] = {}
    inside = np.zeros(len(run.work), bool)
    for name, spans in by_family.items():
        spans.sort()
        g = Group(name, np.array([a for a, _ in spans], np.int64), np.array([z for _, z in spans], np.int64))
        g.work = _members(g, run.work_time)
        for w in g.work:
            inside[w] = True
        out[name] = g
    rest = np.flatnonzero(~inside)
    if len(rest):
        t0, t1 = run.trace.time_bounds()
        out[OUTSIDE] = Group(OUTSIDE, np.array([t0], np.int64), np.array([t1], np.int64), [rest])
    return out


def _members(g: Group, times: np.ndarray) -> list[np.ndarray]:
    """Positions of ``times`` (sorted or not) inside each occurrence of ``g``."""
    o = np.argsort(times, kind="stable")
    ts = times[o]
    lo = np.searchsorted(ts, g.start_ns, "left")
    hi = np.searchsorted(ts, g.end_ns, "left")
    return [np.sort(o[a:b]) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]


def lane_members(run: RunData, g: Group) -> list[np.ndarray]:
    """Positions in ``run.lane_ids`` of the lane slices of each occurrence of ``g``."""
    if g.name != OUTSIDE:
        return _members(g, run.lane_work)
    inside = np.zeros(len(run.lane_ids), bool)
    for other in run.groups.values():
        if other.name != OUTSIDE:
            for m in _members(other, run.lane_work):
                inside[m] = True
    return [np.flatnonzero(~inside)]
