"""``bench_alignment.py --from-sim``: the alignment measured on a real simulated cluster capture
(``accelview.capture.sim.workloads.run_cluster``: every host its own clock with offset and
drift, PCIe reads of each device's counter with the given jitter, PTP exchanges with host0
over paths with asymmetric delays), aligned as ``accelview merge`` aligns it
(``accelview.model.cluster.align_cluster``) and checked against the truth the captures keep:

- host-device error: each device clock against its host at instants over the capture (the
  device's true map is its ``truth_clocks`` row);
- host-host error: each host's clock against host0's (its ``ptp host0`` row's truth);
- causality violations in the aligned captures: a flow's effect (a driver submission, a device
  op) starting before its cause (the API call that launched it) across clock domains; a
  receive ending before its send arrived (or the send before its receive); a collective (or
  send/recv) ending on a participant before the last participant arrived, in the slices
  (arrival = start + launch time) and in ``truth_collectives``.

Baselines on the same captures: offset-only (Perfetto: the nearest earlier snapshot every
30 s, one exchange for a device, the mean of five for a host, no drift) and min-timestamp shift
(HTA: each host's events less its first one, devices as the capture placed them).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import numpy as np
from accelview.capture.sim import workloads
from accelview.model.align import ClockMap, Segment
from accelview.model.align.segments import OPEN_END, OPEN_START
from accelview.model.analysis.collectives import find_collectives
from accelview.model.cluster import HostAlignment, align_cluster
from accelview.model.cluster.retime import retimed
from accelview.model.cluster.timebase import PTP_CLOCK, _brackets, _tick_ns, send_recv_precedences
from accelview.model.trace import Trace

INSTANTS = 2000


def _truth_line(trace: Trace, clock: int) -> Segment:
    t = trace.truth["truth_clocks"]
    r = int(np.flatnonzero(t.clock == clock)[0])
    return Segment(OPEN_START, OPEN_END, float(t.offset_ns[r]), float(t.drift_ppm[r]), 0.0)


def _ptp_row(trace: Trace) -> int:
    names = [trace.strings[int(n)] for n in trace.tables["clocks"].name]
    return names.index(PTP_CLOCK)


def errors(traces: Sequence[Trace], aligns: Sequence[HostAlignment], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """|error| (ns) of each device against its host and each host against host0, at instants over
    each host's capture."""
    rng = np.random.default_rng([seed, 41])
    hd, hh = [], []
    for i, (t, a) in enumerate(zip(traces, aligns, strict=True)):
        lo, hi = t.time_bounds()
        host_t = np.sort(rng.uniform(lo, hi, INSTANTS))
        for c, m in a.device_maps.items():
            true = _truth_line(t, c)
            dev_raw = true.from_ref(host_t)
            hd.append(m.to_ref(dev_raw) - host_t)
        if i:
            true = _truth_line(t, _ptp_row(t))
            hh.append(a.host_map.to_ref(host_t) - true.to_ref(host_t))
    return (np.abs(np.concatenate(hd)) if hd else np.zeros(1)), (np.abs(np.concatenate(hh)) if hh else np.zeros(1))


def _launch_ns(trace: Trace) -> float:
    timing = trace.metadata.get("device_spec", {}).get("timing", {})
    return float(timing.get("op_launch_ns", 0.0))


def violations(aligned: Sequence[Trace]) -> dict[str, int]:
    """Effects placed before their causes in the aligned captures (see the module docstring)."""
    launch = 0
    for t in aligned:
        f, sl, clock = t.flows, t.slices, t.tracks.clock
        cross = clock[sl.track[f.src]] != clock[sl.track[f.dst]]
        launch += int((sl.start_ns[f.dst[cross]] < sl.start_ns[f.src[cross]]).sum())
    sends = sum(int((p.effect_ns < p.cause_ns).sum())
                for p in send_recv_precedences(aligned, [f"host{h}" for h in range(len(aligned))]))
    coll = 0
    for c in find_collectives(aligned):
        coll += int((c.ends < c.arrivals.max()).sum())
    truth = 0
    rows: dict[int, list[tuple[int, int]]] = {}
    for t in aligned:
        tc = t.truth["truth_collectives"]
        for k, a, e in zip(tc.collective.tolist(), tc.arrival_ns.tolist(), tc.end_ns.tolist(), strict=True):
            rows.setdefault(k, []).append((a, e))
    for parts in rows.values():
        last = max(a for a, _ in parts)
        truth += sum(e < last for _, e in parts)
    return {"launch": launch, "send/recv": sends, "collective": coll, "truth": truth}


def _snapshot(b, mean_of: int, snapshot_ns: float = 30e9) -> ClockMap:
    """Offset only, from the exchanges nearest each 30 s of parent time, held until the next."""
    mid = b.mid
    grid = np.arange(mid[0], mid[-1] + 1, snapshot_ns)
    segs = []
    for k, g in enumerate(grid):
        near = np.argsort(np.abs(mid - g))[:mean_of]
        offset = float(np.mean(b.domain_ns[near] - mid[near]))
        segs.append([OPEN_START if k == 0 else int(b.domain_ns[near].min()), OPEN_END, offset])
    for k in range(len(segs) - 1):
        segs[k][1] = segs[k + 1][0]
    return ClockMap(tuple(Segment(s, e, o, 0.0, 0.0) for s, e, o in segs))


def offset_only(traces: Sequence[Trace], aligns: Sequence[HostAlignment]) -> list[HostAlignment]:
    """What Perfetto does, from the same samples."""
    out = []
    for i, (t, a) in enumerate(zip(traces, aligns, strict=True)):
        dev = {c: _snapshot(_brackets(t, c, _tick_ns(t)), 1) for c in a.device_maps}
        host = _snapshot(_brackets(t, _ptp_row(t)), 5) if i else ClockMap.identity()
        out.append(HostAlignment(a.host, host, dev, a.estimates))
    return out


def min_shift(traces: Sequence[Trace], aligns: Sequence[HostAlignment]) -> list[HostAlignment]:
    """What HTA does: each host less its first timestamp; devices as the capture placed them."""
    first0 = traces[0].time_bounds()[0]
    out = []
    for t, a in zip(traces, aligns, strict=True):
        as_captured = {c: ClockMap((Segment(OPEN_START, OPEN_END, o, d, 0.0),)) for c, (o, d) in a.estimates.items()}
        shift = ClockMap((Segment(OPEN_START, OPEN_END, float(t.time_bounds()[0] - first0), 0.0, 0.0),))
        out.append(HostAlignment(a.host, shift, as_captured, a.estimates))
    return out


def _report(label: str, traces: Sequence[Trace], aligns: Sequence[HostAlignment], seed: int) -> None:
    hd, hh = errors(traces, aligns, seed)
    v = violations([retimed(t, a.to_reference) for t, a in zip(traces, aligns, strict=True)])
    print(f"[{label}]")
    print(f"host-device error: median {np.median(hd):.0f} ns, p99 {np.percentile(hd, 99):.0f} ns")
    print(f"host-host error: median {np.median(hh):.0f} ns, p99 {np.percentile(hh, 99):.0f} ns")
    print(f"causality violations: {sum(v.values())} (launches {v['launch']}, receives {v['send/recv']}, "
          f"collectives {v['collective']}, truth_collectives {v['truth']})")


def run(args: argparse.Namespace) -> None:
    """Simulate the cluster workload, align its host captures, print the figures."""
    params = {"hosts": args.hosts, "devices": args.devices, "drift_ppm": args.drift_ppm, "jitter_ns": args.jitter_ns}
    if args.workload == "dp-straggler":
        params["steps"] = args.steps
    t0 = time.perf_counter()
    cluster = workloads.run_cluster(args.workload, params, seed=args.seed)
    traces = cluster.traces()
    sim_s = time.perf_counter() - t0
    lo, hi = traces[0].time_bounds()
    samples = sum(len(t.tables["clock_samples"]) for t in traces)
    print(f"{args.workload} from the simulator: {args.hosts} hosts x {args.devices} devices, {(hi - lo) / 1e9:.2f} s, "
          f"drift up to {args.drift_ppm:g} ppm, PCIe read jitter {args.jitter_ns:g} ns, seed {args.seed}: "
          f"{sum(len(t.slices) for t in traces):,} slices, {samples:,} sync samples ({sim_s:.1f} s to simulate)")
    t0 = time.perf_counter()
    _, aligns = align_cluster(traces)
    fit_s = time.perf_counter() - t0
    _report("accelview", traces, aligns, args.seed)
    print(f"(fit, chain and tighten: {fit_s:.2f} s)")
    _report("offset-only (Perfetto)", traces, offset_only(traces, aligns), args.seed)
    _report("min-timestamp shift (HTA)", traces, min_shift(traces, aligns), args.seed)
