"""What a simulated session's capture says about itself: the device spec and the capture's settings."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..sim.clocks.sync import PCIE_ASYMMETRY_BOUND_NS
from ..sim.device.pcie import Link
from .hostsync import cluster_clock

if TYPE_CHECKING:
    from ..sim.runtime.simulator import Simulator


def session_metadata(sim: Simulator) -> dict[str, Any]:
    """The capture metadata of a session: its device spec with the peaks the analyses read, and
    how it was simulated (the whole run and the service write the same)."""
    spec = sim.spec
    link = Link.from_spec(spec)
    out = {
        "device_spec": {
            **dataclasses.asdict(spec),
            "peak_flops": {d: spec.matrix_flops(d) for d in ("bf16", "fp8", "fp32")},
            "vector_peak_flops": {d: spec.vector_flops(d) for d in ("bf16", "fp8", "fp32")},
            "hbm_bytes_per_s": spec.hbm_bytes_per_s,
            "pcie_bytes_per_s": {d: link.bulk_bandwidth(d) for d in ("h2d", "d2h")},
        },
        "capture": {"simulator": True, "seed": sim.seed, "deterministic": sim.clock.deterministic,
                    "devices": len(sim.devices), "counter_period_ns": sim.counter_period_ns},
    }
    if sim.host_name and sim.fabric is not None:  # a host of a cluster: which, and the cluster's shape and links
        topo = sim.fabric.topology
        out["capture"].update(host=sim.host_name, host_index=sim.host_index,
                              cluster={"hosts": topo.hosts, "devices": topo.devices,
                                       "links": dataclasses.asdict(topo.spec)})
        model = cluster_clock(sim)
        if model is not None:  # what the alignment states as the sync paths' unseen asymmetry
            out["capture"]["cluster"]["sync"] = {"ptp_asymmetry_bound_ns": model.ptp_asymmetry_bound_ns,
                                                 "pcie_asymmetry_bound_ns": PCIE_ASYMMETRY_BOUND_NS}
    return out
