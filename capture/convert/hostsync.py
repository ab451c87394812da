"""A cluster host's sync samples with host0 (PTP exchanges over the network) as capture rows.

A host other than host0 whose clock is a :class:`~accelview.capture.sim.clocks.ClusterHostClock`
records a ``clocks`` row named ``ptp host0`` (its estimate of this host's clock against
host0's, fitted from the exchanges) with the exchanges as its ``clock_samples``: host0's time
before, this host's reading, host0's time after less this host's residence time
(docs/FORMAT.md), and the true alignment in ``truth_clocks``. A capture that is not a cluster
host's gets nothing (single-device captures stay byte-for-byte what they were).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from accelview.model import TraceBuilder
from accelview.model.align import fit_clock

from ..sim.clocks.hostmodel import ClusterHostClock

if TYPE_CHECKING:
    from ..sim.runtime.simulator import Simulator

PTP_CLOCK = "ptp host0"
PTP_LEAD_NS = 1_000_000_000  # exchanges kept from before the capture's start


def cluster_clock(sim: Simulator) -> ClusterHostClock | None:
    """``sim``'s host clock when it is a cluster host's simulated clock."""
    return sim.clock_model if isinstance(sim.clock_model, ClusterHostClock) else None


def add_host_sync(b: TraceBuilder, sim: Simulator, t0_raw: float, t1_raw: float) -> None:
    """The PTP rows of ``sim``'s capture over its raw span [t0, t1) and the second before it
    (nothing for host0 or a host without a simulated cluster clock)."""
    model = cluster_clock(sim)
    if model is None or model.host == 0:
        return
    # the PTP daemon ran before the capture began: its last second of exchanges come along
    s = model.ptp_samples(model.to_true(t0_raw) - PTP_LEAD_NS, model.to_true(t1_raw))
    if len(s) >= 2:
        seg = fit_clock(s, model.ptp_asymmetry_bound_ns).map.segments[0]
        clock = b.add_clock(PTP_CLOCK, False, seg.offset_ns, seg.drift_ppm, seg.error_ns)
    else:
        clock = b.add_clock(PTP_CLOCK, False, 0.0, 0.0, float("inf"))
    b.add_rows("clock_samples", {"clock": np.full(len(s), clock, np.int32), "ref_send_ns": s.parent_send_ns,
                                 "domain_ts": s.domain_ns, "ref_recv_ns": s.parent_recv_ns})
    true = model.true_alignment()
    b.add_truth_clock(clock, true.offset_ns, true.drift_ppm)
