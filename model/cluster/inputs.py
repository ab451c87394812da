"""Which files make a cluster: one capture per host of the same cluster, every host once.

A host capture of a cluster (``accelview profile`` of a cluster workload) names its host and
the cluster's shape in its metadata (``capture.host``, ``capture.host_index``,
``capture.cluster.hosts``). A directory stands for the ``*.h5`` files in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import AccelviewError, CaptureError
from ..trace import Trace


def expand(paths: Sequence[str | Path]) -> list[Path]:
    """``paths`` with each directory replaced by the ``*.h5`` files in it (in name order)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(p.glob("*.h5"))
            if not found:
                raise CaptureError(p, "a directory without captures (*.h5)")
            out += found
        else:
            out.append(p)
    return out


def _capture(trace: Trace) -> dict[str, Any]:
    cap = trace.metadata.get("capture")
    return cap if isinstance(cap, dict) else {}


def is_cluster_capture(trace: Trace) -> bool:
    """Whether ``trace`` is one host's capture of a cluster (not merged yet)."""
    cap = _capture(trace)
    return isinstance(cap.get("cluster"), dict) and isinstance(cap.get("host_index"), int) and "merged" not in \
        trace.metadata


def host_index(trace: Trace) -> int:
    """The host a cluster capture was taken on (0 for host0)."""
    return int(_capture(trace)["host_index"])


def cluster_inputs(paths: Sequence[Path], traces: Sequence[Trace]) -> list[tuple[Path, Trace]]:
    """The host captures ``traces`` (read from ``paths``) in host order, checked: each one a host
    capture of a cluster, of the same shape, every host of it once. Raises ``AccelviewError``
    (one line naming the file) otherwise."""
    by_host: dict[int, tuple[Path, Trace]] = {}
    shape = None
    for p, t in zip(paths, traces, strict=True):
        if not is_cluster_capture(t):
            raise CaptureError(p, "not a host capture of a cluster (accelview profile of a cluster workload writes "
                                  "those); a cluster is read from its hosts' captures only")
        h, hosts = host_index(t), int(_capture(t)["cluster"].get("hosts", 0))
        if shape is None:
            shape = (hosts, p)
        elif hosts != shape[0]:
            raise CaptureError(p, f"from a cluster of {hosts} hosts, but {shape[1]} is from one of {shape[0]}")
        if h in by_host:
            raise CaptureError(p, f"host{h} twice: {by_host[h][0]} is host{h} too")
        by_host[h] = (p, t)
    if shape is None:
        raise AccelviewError("no captures given")
    missing = [f"host{h}" for h in range(shape[0]) if h not in by_host]
    if missing:
        raise CaptureError(shape[1], f"a cluster of {shape[0]} hosts, but {', '.join(missing)} "
                                     f"{'is' if len(missing) == 1 else 'are'} missing")
    return [by_host[h] for h in range(shape[0])]
