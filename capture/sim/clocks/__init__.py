"""Simulated clocks of a cluster and the sync samples a real system would take of them.

Every host and every device has its own clock (:class:`SimClock`: offset, drift, read jitter,
steps); :mod:`.sync` takes host↔device samples (host time before and after a device timestamp
read over PCIe) and host↔host samples (PTP-like two-way exchanges over the network with
asymmetric delays); :mod:`.cluster` draws the clocks of M hosts × N devices from a seed and
states their true alignment to the reference (host0's clock). ``accelview.model.align``
estimates that alignment back from the samples. docs/SIMULATOR.md ("Cluster clocks") is
the API note.
"""


from .cluster import ClusterClocks, SyncSet, device_name, host_name
from .hostmodel import ClusterHostClock
from .simclock import SimClock, Step
from .sync import NetworkPath, pcie_read_samples, ptp_exchange

__all__ = ["ClusterClocks", "ClusterHostClock", "NetworkPath", "SimClock", "Step", "SyncSet", "device_name",
           "host_name", "pcie_read_samples", "ptp_exchange"]
