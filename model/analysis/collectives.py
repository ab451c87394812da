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


def _launch_ns(trace: Trace) -> float:
    spec = trace.metadata.get("device_spec")
    timing = spec.get("timing", {}) if isinstance(spec, dict) else {}
    value = timing.get("op_launch_ns", 0.0) if isinstance(timing, dict) else 0.0
    return float(value) if isinstance(value, int | float) else 0.0


def find_collectives(traces: Sequence[Trace]) -> list[Collective]:
    """Every collective that can be matched across its participants in ``traces``, in time order."""
    seen: dict[tuple, list[tuple[Participant, float, float]]] = defaultdict(list)
    for trace in traces:
        host, launch = host_name(trace), _launch_ns(trace)
        tracks = trace.tracks
        lanes = np.flatnonzero((tracks.kind == int(TrackKind.EXEC_UNIT)) &
                               (tracks.name == trace.strings.lookup("collective")))
        sl = trace.slices
        args_of: dict[int, dict] = {}
        for lane in lanes.tolist():
            rows = np.flatnonzero(sl.track == lane)
            rows = rows[np.argsort(sl.start_ns[rows], kind="stable")]
            count: dict[tuple, int] = defaultdict(int)
            device = int(tracks.device[lane])
            for name, a, s, d in zip(sl.name[rows].tolist(), sl.args[rows].tolist(), sl.start_ns[rows].tolist(),
                                     sl.dur_ns[rows].tolist(), strict=True):
                args = args_of.get(a)
                if args is None:
                    args = args_of[a] = trace.args(a) if a >= 0 else {}
                op = args.get("op")
                if op not in GROUP_OPS:
                    continue
                key = (trace.strings[name], op, int(args.get("nbytes", 0)), int(args.get("ranks", 0)))
                seen[(key, count[key])].append(((host, device), s + launch, s + d))
                count[key] += 1
    out: list[Collective] = []
    for (key, _), parts in seen.items():
        ranks = key[3]
        if ranks < 2:
            continue
        groups = [parts] if len(parts) == ranks else _by_host(parts, ranks)
        for g in groups:
            g = sorted(g)
            out.append(Collective(key[0], key[1], key[2], tuple(p for p, _, _ in g),
                                  np.array([a for _, a, _ in g]), np.array([e for _, _, e in g])))
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
