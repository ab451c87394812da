"""Opening a cluster in the app: several host captures (chosen together, dropped together, or a
folder of them) read as one trace on host0's clock through ``load_cluster``, on the loading
thread like any file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from accelview.model import Trace

from .cli.cluster_input import host_captures


def is_cluster_choice(paths: Sequence[str]) -> bool:
    """Whether ``paths`` stand for a cluster: several files, or one folder holding captures."""
    return len(paths) > 1 or (len(paths) == 1 and bool(host_captures(Path(paths[0]))))


def cluster_label(paths: Sequence[str]) -> str:
    """What the window calls a cluster being opened: its folder, or its files' folder and count."""
    if len(paths) == 1:
        return paths[0]
    folders = {str(Path(p).parent) for p in paths}
    where = folders.pop() if len(folders) == 1 else "several folders"
    return f"{where} ({len(paths)} files)"


def cluster_loader(paths: Sequence[str]) -> Callable[..., Trace]:
    """A loader for ``LoadJob`` that reads ``paths`` as one cluster (its path argument is only
    the label). A set that is not one cluster's hosts fails with load_cluster's one line."""
    files = list(paths)

    def load(_label: str, progress: Callable[[float], None] | None = None,
             cancel: Callable[[], bool] | None = None) -> Trace:
        from accelview.model.cluster import load_cluster

        trace = load_cluster(files)
        if progress is not None:
            progress(1.0)
        return trace

    return load
