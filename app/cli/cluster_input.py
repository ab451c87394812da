"""What a command's file arguments stand for: one capture or trace, or a cluster (several host
captures, or a directory of them) read as one trace on host0's clock."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from accelview.model.trace import Trace


def host_captures(path: Path) -> list[Path]:
    """The host captures (``*.h5``) in folder ``path``, in name order (empty: not such a folder)."""
    return sorted(path.glob("*.h5")) if path.is_dir() else []


def is_cluster(paths: Sequence[str]) -> bool:
    """Whether ``paths`` name a cluster: several files, or a directory holding captures."""
    return len(paths) > 1 or bool(host_captures(Path(paths[0])))


def load_input(paths: Sequence[str]) -> Trace:
    """One trace of ``paths``: a single file (or trace directory) as it is, a cluster merged."""
    if is_cluster(paths):
        from accelview.model.cluster import load_cluster

        return load_cluster(paths)
    from accelview.model.loader import load_trace

    return load_trace(paths[0])
