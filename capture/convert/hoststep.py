"""A cluster host's capture as its stepped clock wrote it.

The simulation runs on the host's clock without its steps (its work goes on whatever NTP does
to the clock); a real capture holds what the clock read. So every time on the host's clock
(its threads, queues, network links and their counters, and the host side of its devices'
PCIe sync reads) moves by each step it lies after
(:meth:`~accelview.capture.sim.clocks.ClusterHostClock.stamp`). Device times stay as the
device counters read them (stored through the capture's estimate, which keeps them raw). The
truth states the steps: ``truth_clock_segments`` of the ``ptp host0`` row (the host against
host0) and of each device (the device against its stepped host).
"""

from __future__ import annotations

import numpy as np
from accelview.model import Trace
from accelview.model.align import ClockMap, Segment
from accelview.model.builder import TraceBuilder
from accelview.model.cluster.retime import retimed
from accelview.model.table import Table

from ..sim.clocks.hostmodel import ClusterHostClock
from .hostsync import PTP_CLOCK


def stepped(trace: Trace, b: TraceBuilder, model: ClusterHostClock) -> Trace:
    """``trace`` (built by ``b``) as the host's stepped clock wrote it (nothing when it never stepped)."""
    if not model.steps:
        return trace
    out = retimed(trace, lambda c, t: model.stamp(t) if c < 0 else t)
    names = [trace.strings[int(n)] for n in trace.tables["clocks"].name]
    ptp = names.index(PTP_CLOCK) if PTP_CLOCK in names else -1
    s = trace.tables["clock_samples"].columns()
    dev = s["clock"] != ptp  # a device read: host times before and after (PTP rows hold host0's)
    for k in ("ref_send_ns", "ref_recv_ns"):
        s[k] = np.where(dev, model.stamp(s[k]), s[k])
    out.tables["clock_samples"] = Table(trace.tables["clock_samples"].schema, s)
    truth = trace.truth["truth_clocks"]
    maps = [(c, model.true_map() if c == ptp else _device_map(o, d, model.steps))
            for c, o, d in zip(truth.clock.tolist(), truth.offset_ns.tolist(), truth.drift_ppm.tolist(), strict=True)]
    segs = [(c, x) for c, m in maps for x in m.segments]
    b.add_rows_after_build(out, "truth_clock_segments", {
        "clock": np.array([c for c, _ in segs], np.int32), **{
            k: np.array([getattr(x, k) for _, x in segs]) for k in ("start_ns", "end_ns", "offset_ns", "drift_ppm",
                                                                     "error_ns")}})
    return out


def _device_map(offset: float, drift: float, steps: list[tuple[float, int]]) -> ClockMap:
    """A device counter's true map to its host's stepped clock: the host read each step's jump
    more from the device reading it stepped at on."""
    scale = 1.0 + drift * 1e-6
    segs, start, jumped = [], -(1 << 62), 0
    for at, jump in steps:
        edge = int(np.floor(offset + scale * at))  # the device's reading when its host stepped
        segs.append(Segment(start, edge, offset - scale * jumped, drift, 0.0))
        start, jumped = edge, jumped + jump
    segs.append(Segment(start, 1 << 62, offset - scale * jumped, drift, 0.0))
    return ClockMap(tuple(segs))
