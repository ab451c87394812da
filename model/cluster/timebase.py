"""Every clock domain of a cluster's host captures placed on host0's clock.

A host capture stores its events on its own host clock; its device clocks were placed there
at capture time from the capture's first estimate (``clocks`` row: offset and drift), which
keeps their raw timestamps recoverable. Here each device is fitted again from its PCIe
samples (``clock_samples``) by :func:`accelview.model.align.fit_clock` (low-delay exchanges,
steps, a robust line, an error bound), each host against host0 from its PTP exchanges (the
``ptp host0`` clock row, docs/FORMAT.md), and the hosts' maps are then narrowed by what the
collectives prove (no participant's collective ends before every participant arrived:
:func:`accelview.model.align.tighten`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..align import Brackets, ClockMap, Precedence, Segment, collective_precedences, compose, fit_clock, tighten
from ..align.segments import OPEN_END, OPEN_START
from ..analysis.collectives import match_collectives, participations
from ..analysis.hostextract import Sends, point_to_point
from ..trace import Trace
from .retime import retimed

PTP_CLOCK = "ptp host0"  # the clocks row of a host's PTP exchanges with host0 (docs/FORMAT.md)
PCIE_ASYMMETRY_BOUND_NS = 100.0  # what a PCIe read cannot see of its path's asymmetry (PTM's figure)
UNSYNCED_ERROR_NS = 50e6  # a host without PTP samples: what NTP leaves between hosts


@dataclass(frozen=True)
class HostAlignment:
    """One host's clocks on host0's: its own (``host_map``: host raw ns → host0 ns) and each
    device clock's (``device_maps[clock row]``: device raw ns → host raw ns), with the
    capture's own estimates (``estimates[clock row]``: offset, drift), through which its
    stored device times are raw again."""

    host: str
    host_map: ClockMap
    device_maps: dict[int, ClockMap] = field(default_factory=dict)
    estimates: dict[int, tuple[float, float]] = field(default_factory=dict)
    synced: bool = True  # whether host_map came from sync samples (else: the trace's collectives only)

    def raw(self, clock: int, stored_ns: np.ndarray) -> np.ndarray:
        """A domain's raw timestamps (float ns) of times stored in the host capture."""
        if clock not in self.estimates:
            return np.asarray(stored_ns, dtype=np.float64)
        offset, drift = self.estimates[clock]
        return offset + np.asarray(stored_ns, dtype=np.float64) * (1.0 + drift * 1e-6)

    def to_host(self, clock: int, stored_ns: np.ndarray) -> np.ndarray:
        """Stored times on the host's raw clock, devices through their new fit."""
        if clock not in self.device_maps:
            return np.asarray(stored_ns, dtype=np.float64)
        return self.device_maps[clock].to_ref(self.raw(clock, stored_ns))

    def clock_map(self, clock: int) -> ClockMap:
        """Domain ``clock``'s map (raw ns → host0 ns; -1: the host's own clock)."""
        if clock in self.device_maps:
            return compose(self.device_maps[clock], self.host_map)
        return self.host_map

    def to_reference(self, clock: int, stored_ns: np.ndarray) -> np.ndarray:
        """Stored times on host0's clock (float ns)."""
        return self.host_map.to_ref(self.to_host(clock, stored_ns))


def _tick_ns(trace: Trace) -> float:
    spec = trace.metadata.get("device_spec")
    mhz = spec.get("timer_mhz") if isinstance(spec, dict) else None
    if mhz is None and isinstance(spec, dict) and isinstance(spec.get("timing"), dict):
        mhz = spec["timing"].get("timer_mhz")
    return 1000.0 / float(mhz) if isinstance(mhz, int | float) and mhz > 0 else 1.0


def _sync_bound(trace: Trace, key: str, default: float | None) -> float | None:
    cap = trace.metadata.get("capture")
    sync = cap.get("cluster", {}).get("sync", {}) if isinstance(cap, dict) else {}
    value = sync.get(key) if isinstance(sync, dict) else None
    return float(value) if isinstance(value, int | float) else default


def _brackets(trace: Trace, clock: int, tick_ns: float = 1.0) -> Brackets:
    s = trace.tables["clock_samples"]
    rows = np.flatnonzero(s.clock == clock)
    domain = s.domain_ts[rows] if tick_ns == 1.0 else np.rint(s.domain_ts[rows] * tick_ns + tick_ns / 2)
    return Brackets(s.ref_send_ns[rows], domain.astype(np.int64), s.ref_recv_ns[rows])


def _line(offset: float, drift: float, error: float) -> ClockMap:
    return ClockMap((Segment(OPEN_START, OPEN_END, offset, drift, error),))


def host_alignment(trace: Trace, host: str, index: int) -> HostAlignment:
    """A host capture's clocks fitted from its samples (host0: its own clock is the reference)."""
    clocks = trace.tables["clocks"]
    names = [trace.strings[int(n)] for n in clocks.name]
    used = set(trace.tracks.clock[trace.tracks.clock >= 0].tolist())
    tick = _tick_ns(trace)
    device_maps, estimates = {}, {}
    for c in sorted(used):
        estimates[c] = (float(clocks.offset_ns[c]), float(clocks.drift_ppm[c]))
        b = _brackets(trace, c, tick)
        device_maps[c] = (fit_clock(b, PCIE_ASYMMETRY_BOUND_NS, extra_error_ns=tick / 2).map if len(b) >= 2 else
                          _line(*estimates[c], float(clocks.error_ns[c])))
    if index == 0:
        return HostAlignment(host, ClockMap.identity(), device_maps, estimates)
    ptp = [i for i, n in enumerate(names) if n == PTP_CLOCK]
    b = _brackets(trace, ptp[0]) if ptp else None
    if b is None or len(b) < 2:
        return HostAlignment(host, _line(0.0, 0.0, UNSYNCED_ERROR_NS), device_maps, estimates, synced=False)
    fit = fit_clock(b, _sync_bound(trace, "ptp_asymmetry_bound_ns", None))
    return HostAlignment(host, fit.map, device_maps, estimates)


def _shift(m: ClockMap, e: float) -> ClockMap:
    """``m`` with every reference time less ``e`` (its error bound grown by as much)."""
    return ClockMap(tuple(Segment(x.start_ns, x.end_ns, x.offset_ns + e * x.scale, x.drift_ppm, x.error_ns + abs(e))
                          for x in m.segments))


def launch_corrected(a: HostAlignment, trace: Trace) -> HostAlignment:
    """``a`` with each device map moved later by the least that puts no device event before the
    host event that caused it (a flow from a host lane to a lane on the device's clock: a
    submission to its op), when the samples left one there."""
    f, sl, clock = trace.flows, trace.slices, trace.tracks.clock.astype(np.int64)
    src_c, dst_c = clock[sl.track[f.src]], clock[sl.track[f.dst]]
    maps = dict(a.device_maps)
    for c in maps:
        into = np.flatnonzero((src_c < 0) & (dst_c == c))
        if len(into):
            slack = float(np.min(a.to_host(c, sl.start_ns[f.dst[into]]) - sl.start_ns[f.src[into]]))
            if slack < 0:
                maps[c] = _shift(maps[c], slack)
    return replace(a, device_maps=maps)


def send_recv_precedences(traces: Sequence[Trace], hosts: Sequence[str]) -> list[Precedence]:
    """Each send and its receive on another host (the k-th of one name and size between the two
    devices, each side naming the other): each side's arrival precedes the other side's end."""
    return _send_recv(hosts, [point_to_point(t, h) for t, h in zip(traces, hosts, strict=True)])


def _send_recv(hosts: Sequence[str], host_sends: Sequence[Sends]) -> list[Precedence]:
    sends: dict[tuple, list] = {}
    recvs: dict[tuple, list] = {}
    for h, mine in zip(hosts, host_sends, strict=True):
        for key, rows in mine.items():
            (sends if key[0].split("/")[0] == h else recvs)[key] = rows
    pairs: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    for key, s in sends.items():
        r = recvs.get(key)
        a, b = key[0].split("/")[0], key[1].split("/")[0]
        if r is None or a == b:
            continue
        pairs.setdefault((a, b), []).extend((*x, *y) for x, y in zip(s, r, strict=False))
    out = []
    for (a, b), rows in pairs.items():
        m = np.rint(np.array(rows)).astype(np.int64)
        out += [Precedence(a, m[:, 0], b, m[:, 3]), Precedence(b, m[:, 2], a, m[:, 1])]
    return out


def tightened(aligns: Sequence[HostAlignment], traces: Sequence[Trace]) -> list[HostAlignment]:
    """The hosts' maps narrowed by what ``traces`` prove (see :func:`tightened_maps`)."""
    local = [retimed(t, a.to_host) for t, a in zip(traces, aligns, strict=True)]
    hosts = [a.host for a in aligns]
    maps = tightened_maps({a.host: a.host_map for a in aligns}, [participations(t) for t in local],
                          [point_to_point(t, h) for t, h in zip(local, hosts, strict=True)])
    return [replace(a, host_map=maps[a.host]) for a in aligns]


def tightened_maps(host_maps: dict[str, ClockMap], parts: Sequence[dict[str, list]],
                   sends: Sequence[Sends], partial: bool = False) -> dict[str, ClockMap]:
    """The hosts' maps (host raw ns → host0 ns; the first host the reference) narrowed by what
    each host's collective participations and sends (on its own clock, devices aligned to it:
    ``participations`` and ``point_to_point``) prove: for each collective and each pair of hosts,
    the last arrival on one precedes the first end on the other; a send's and its receive's
    arrivals each precede the other's end. Only these small extracts are needed, so a fleet's
    hosts make them where their captures lie (``partial``: some of its hosts are missing)."""
    hosts = list(host_maps)
    col = {h: i for i, h in enumerate(hosts)}
    groups: dict[tuple[str, ...], list[tuple[np.ndarray, np.ndarray]]] = {}
    for c in match_collectives(list(zip(hosts, parts, strict=True)), partial):
        arrival, end = np.full(len(hosts), -np.inf), np.full(len(hosts), np.inf)
        for (h, _), a, e in zip(c.participants, c.arrivals.tolist(), c.ends.tolist(), strict=True):
            arrival[col[h]] = max(arrival[col[h]], a)
            end[col[h]] = min(end[col[h]], e)
        present = tuple(h for h in hosts if np.isfinite(arrival[col[h]]))
        if len(present) > 1:
            idx = [col[h] for h in present]
            groups.setdefault(present, []).append((arrival[idx], end[idx]))
    precedences = _send_recv(hosts, sends)
    for present, rows in groups.items():
        arrival = np.rint(np.array([r[0] for r in rows])).astype(np.int64)
        end = np.rint(np.array([r[1] for r in rows])).astype(np.int64)
        precedences += collective_precedences(list(present), arrival, end)
    if not precedences:
        return dict(host_maps)
    return tighten(host_maps, {h: h for h in hosts}, hosts[0], precedences)


def alignment_summary(aligns: Sequence[HostAlignment]) -> dict[str, Any]:
    """Per host, how its clock was placed and its largest error bound (ns), as plain data."""
    return {a.host: {"synced": a.synced, "error_ns": round(max(s.error_ns for s in a.host_map.segments), 1),
                     "devices_error_ns": round(max((s.error_ns for m in a.device_maps.values() for s in m.segments),
                                                   default=0.0), 1)}
            for a in aligns}
