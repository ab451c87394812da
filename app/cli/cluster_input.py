"""What a command's file arguments stand for: one capture or trace, or a cluster (several host
captures, or a directory of them) read as one trace on host0's clock."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from accelview.model.trace import Trace


def host_captures(path: Path) -> list[Path]:
    """The host captures (``*.h5``) in folder ``path``, in name order (empty: not such a folder)."""
    return sorted(path.glob("*.h5")) if path.is_dir() else []


def are_ranks(paths: Sequence[str]) -> bool:
    """Whether ``paths`` are several PyTorch profiler (Kineto) trace files: a multi-rank run's ranks."""
    from accelview.model.importers.kineto import is_rank_file

    return len(paths) > 1 and all(is_rank_file(Path(p)) for p in paths)


def is_cluster(paths: Sequence[str]) -> bool:
    """Whether ``paths`` name a cluster: several files (not a run's ranks), or a directory holding captures."""
    return (len(paths) > 1 and not are_ranks(paths)) or bool(host_captures(Path(paths[0])))


def load_input(paths: Sequence[str]) -> Trace:
    """One trace of ``paths``: a single file (or trace directory) as it is, several Kineto files
    as one multi-rank trace, a cluster merged."""
    if are_ranks(paths):
        from accelview.model.importers.kineto import load_ranks

        return load_ranks(paths)
    if is_cluster(paths):
        from accelview.model.cluster import load_cluster

        return load_cluster(paths)
    from accelview.model.loader import load_trace

    return load_trace(paths[0])
