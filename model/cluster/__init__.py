"""A cluster's host captures (one per host, each in its host's raw time) read as one trace on
host0's clock.

- :mod:`.inputs` - which files make a cluster, checked (every host once, nothing else);
- :mod:`.timebase` - every clock domain of every host placed on host0's clock: devices from
  their PCIe samples, hosts from their PTP exchanges with host0, narrowed by what the
  collectives prove (``accelview.model.align``);
- :mod:`.retime` - a capture's events moved through those maps;
- :mod:`.merge` - the aligned host captures as one trace, the hosts its top-level tracks;
- :mod:`.split` - a merged trace taken apart again, host by host, for the cluster analyses.

``load_cluster(paths)`` does all of it; docs/ALIGNMENT.md ("Cluster captures") is the note.
"""

from .inputs import cluster_inputs, is_cluster_capture
from .load import align_cluster, load_cluster
from .split import split_hosts
from .timebase import HostAlignment

__all__ = ["HostAlignment", "align_cluster", "cluster_inputs", "is_cluster_capture", "load_cluster", "split_hosts"]
