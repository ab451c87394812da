"""Collectives as their participants saw them: each collective matched across the devices (and
hosts) that ran it, with every participant's arrival and end, split into *skew* (waiting for the
last participant to arrive) and *transfer* (from the last arrival to the end).

A participant's collective is a slice on its device's ``collective`` execution-unit lane whose
arguments name the collective (``op``: all_reduce, all_gather, reduce_scatter; ``nbytes``;
``ranks``: how many take part). The k-th such slice of one name and shape on each device is one
collective; when more devices than ``ranks`` have it (one communicator per host), each host's are
one. Its arrival is the slice's start plus the kernel's launch time when the capture states it
(``device_spec.timing.op_launch_ns``). Several captures (one per host) are read as one cluster
on the timebase they share.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..schema import TrackKind
from ..trace import Trace

GROUP_OPS = ("all_reduce", "all_gather", "reduce_scatter")
PARTICIPATION_COLUMNS = ("lane", "device", "name", "op", "nbytes", "ranks", "arrival", "end")
Participant = tuple[str, int]  # (host, device)


@dataclass(frozen=True)
class Collective:
    """One collective: its participants in device order, their arrivals and ends (ns)."""

    name: str
    op: str
    nbytes: int
    participants: tuple[Participant, ...]
    arrivals: np.ndarray
    ends: np.ndarray
    busy: np.ndarray | None = None  # per participant, its device's time per category before it arrived

    @property
    def last_arrival_ns(self) -> float:
        """When the last participant arrived."""
        return float(self.arrivals.max())

    @property
    def skew_ns(self) -> np.ndarray:
        """Per participant: the wait for the last arrival."""
        return self.last_arrival_ns - self.arrivals

    @property
    def transfer_ns(self) -> np.ndarray:
        """Per participant: from the last arrival to its end."""
        return np.maximum(self.ends - self.last_arrival_ns, 0.0)


def host_name(trace: Trace) -> str:
    """The host a capture was taken on: its metadata's, else its host lane's name."""
    host = trace.metadata.get("capture", {}).get("host") if isinstance(trace.metadata.get("capture"), dict) else None
    if host:
        return str(host)
    hosts = np.flatnonzero(trace.tracks.kind == int(TrackKind.HOST))
    return trace.track_name(int(hosts[0])) if len(hosts) else ""


def launch_ns(trace: Trace) -> float:
    spec = trace.metadata.get("device_spec")
    timing = spec.get("timing", {}) if isinstance(spec, dict) else {}
    value = timing.get("op_launch_ns", 0.0) if isinstance(timing, dict) else 0.0
    return float(value) if isinstance(value, int | float) else 0.0


def participations(trace: Trace) -> dict[str, list]:
    """Every group-collective slice of ``trace`` as columns (plain lists, JSON-able): ``lane``, ``device``,
    ``name``, ``op``, ``nbytes``, ``ranks``, ``arrival`` and ``end`` (ns on the trace's clock), lane
    by lane in time order. What :func:`match_collectives` matches across hosts; small beside the
    trace, so a fleet's hosts each extract theirs where their capture lies."""
    cols: dict[str, list] = {k: [] for k in PARTICIPATION_COLUMNS}
    launch = launch_ns(trace)
    tracks, sl = trace.tracks, trace.slices
    lanes = np.flatnonzero((tracks.kind == int(TrackKind.EXEC_UNIT)) &
                           (tracks.name == trace.strings.lookup("collective")))
    args_of: dict[int, dict] = {}
    for lane in lanes.tolist():
        rows = np.flatnonzero(sl.track == lane)
        rows = rows[np.argsort(sl.start_ns[rows], kind="stable")]
        device = int(tracks.device[lane])
        for name, a, s, d in zip(sl.name[rows].tolist(), sl.args[rows].tolist(), sl.start_ns[rows].tolist(),
                                 sl.dur_ns[rows].tolist(), strict=True):
            args = args_of.get(a)
            if args is None:
                args = args_of[a] = trace.args(a) if a >= 0 else {}
            op = args.get("op")
            if op not in GROUP_OPS:
                continue
            for k, v in zip(PARTICIPATION_COLUMNS, (lane, device, trace.strings[name], op, int(args.get("nbytes", 0)),
                                                    int(args.get("ranks", 0)), s + launch, s + d), strict=True):
                cols[k].append(v)
    return cols


def find_collectives(traces: Sequence[Trace]) -> list[Collective]:
    """Every collective that can be matched across its participants in ``traces``, in time order."""
    return match_collectives([(host_name(t), participations(t)) for t in traces])


def match_collectives(hosts: Sequence[tuple[str, dict[str, list]]], partial: bool = False) -> list[Collective]:
    """The collectives matched from each host's :func:`participations` (on one timebase): the k-th
    of one name and shape on each device is one collective; with a ``busy`` column (per
    participation, time per category before it arrived) each collective carries its rows.
    ``partial``: some hosts are missing, so a collective may have fewer participants than ranks."""
    seen: dict[tuple, list[tuple[Participant, float, float, tuple]]] = defaultdict(list)
    with_busy = all("busy" in cols for _, cols in hosts)
    for host, cols in hosts:
        count: dict[tuple, int] = defaultdict(int)
        busy = cols["busy"] if with_busy else [()] * len(cols["device"])
        for lane, device, name, op, nbytes, ranks, arrival, end, b in zip(
                *(cols[k] for k in PARTICIPATION_COLUMNS), busy, strict=True):
            key = (name, op, nbytes, ranks)
            seen[(key, count[(lane, key)])].append(((host, device), arrival, end, tuple(b)))
            count[(lane, key)] += 1  # the k-th of its kind on its lane
    out: list[Collective] = []
    for (key, _), parts in seen.items():
        ranks = key[3]
        if ranks < 2:
            continue
        fewer = partial and 2 <= len(parts) < ranks
        groups = [parts] if len(parts) == ranks or fewer else _by_host(parts, ranks)
        for g in groups:
            g = sorted(g)
            out.append(Collective(key[0], key[1], key[2], tuple(p for p, _, _, _ in g),
                                  np.array([a for _, a, _, _ in g]), np.array([e for _, _, e, _ in g]),
                                  np.array([b for _, _, _, b in g], dtype=np.float64)))
    out.sort(key=lambda c: c.last_arrival_ns)
    return out


def _by_host(parts: list[tuple[Participant, float, float]], ranks: int) -> list[list]:
    """Split participants into one communicator per host when each host holds exactly ``ranks``."""
    hosts: dict[str, list] = defaultdict(list)
    for p in parts:
        hosts[p[0][0]].append(p)
    return [g for g in hosts.values() if len(g) == ranks]


def communication_split(collectives: Sequence[Collective]) -> dict[Participant, dict[str, float]]:
    """Per participant: total skew and transfer time (ns) over ``collectives`` and how many it joined."""
    out: dict[Participant, dict[str, float]] = defaultdict(lambda: {"skew_ns": 0.0, "transfer_ns": 0.0,
                                                                    "collectives": 0})
    for c in collectives:
        for p, s, t in zip(c.participants, c.skew_ns.tolist(), c.transfer_ns.tolist(), strict=True):
            row = out[p]
            row["skew_ns"] += s
            row["transfer_ns"] += t
            row["collectives"] += 1
    return dict(out)
