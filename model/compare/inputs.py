"""Which pairs of runs a diff can say something true about, checked before comparing them."""

from __future__ import annotations

from ..errors import CaptureError
from ..trace import Trace


def hosts_of(trace: Trace) -> int:
    """How many hosts' runs ``trace`` holds: a merged cluster's hosts, else one."""
    merged = trace.metadata.get("merged")
    hosts = merged.get("hosts") if isinstance(merged, dict) else None
    return len(hosts) if isinstance(hosts, list) and hosts else 1


def check_comparable(a: Trace, b: Trace, path_a: str = "", path_b: str = "") -> None:
    """Raise ``CaptureError`` naming the file for a pair a diff would only mislead about: a run
    with no slices (every op would read as removed or new), or runs of different numbers of hosts
    (one host's run against a merged cluster). ``path_*``: the files (default: the traces' sources)."""
    path_a, path_b = path_a or a.source or "A", path_b or b.source or "B"
    for path, t in ((path_a, a), (path_b, b)):
        if len(t.slices) == 0:
            raise CaptureError(path, "holds no slices: nothing to compare")
    n_a, n_b = hosts_of(a), hosts_of(b)
    if n_a != n_b:
        (many, n_many), (one, n_one) = sorted(((path_a, n_a), (path_b, n_b)), key=lambda x: -x[1])
        raise CaptureError(many, f"a merged cluster of {n_many} hosts, but {one} is a run of {n_one} "
                                 f"host{'s' if n_one > 1 else ''}: compare runs of as many hosts")
