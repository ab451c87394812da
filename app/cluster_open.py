"""Opening a cluster in the app: several host captures (chosen together, dropped together, or a
folder of them) read as one trace on host0's clock through ``load_cluster``, on the loading
thread like any file; several PyTorch profiler traces the same way, as one run's ranks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from accelview.model import Trace

from .cli.cluster_input import are_ranks, host_captures


def is_cluster_choice(paths: Sequence[str]) -> bool:
    """Whether ``paths`` stand for a cluster: several files, or one folder holding captures."""
    return len(paths) > 1 or (len(paths) == 1 and bool(host_captures(Path(paths[0]))))


SET_LABEL_END = " files)"  # ends the label of a set of files, which is no path to reopen


def cluster_label(paths: Sequence[str]) -> str:
    """What the window calls a cluster being opened: its folder (also when the files are all the
    captures in it), else its files' folder and count."""
    folders = {str(Path(p).parent) for p in paths}
    if len(paths) == 1:
        return paths[0]
    if len(folders) == 1:
        folder = folders.pop()
        if {Path(p).resolve() for p in paths} == {p.resolve() for p in host_captures(Path(folder))}:
            return folder
        return f"{folder} ({len(paths)}{SET_LABEL_END}"
    return f"several folders ({len(paths)}{SET_LABEL_END}"


def is_set_label(path: str) -> bool:
    """Whether ``path`` is the label of a set of files (``cluster_label``), not a file or folder."""
    return path.endswith(SET_LABEL_END) and not Path(path).exists()


def cluster_loader(paths: Sequence[str]) -> Callable[..., Trace]:
    """A loader for ``LoadJob`` that reads ``paths`` as one cluster, or as one multi-rank run when
    they are PyTorch profiler traces (its path argument is only the label). A set that is
    neither fails with load_cluster's one line."""
    files = list(paths)

    def load(_label: str, progress: Callable[[float], None] | None = None,
             cancel: Callable[[], bool] | None = None) -> Trace:
        if are_ranks(files):
            from accelview.model.importers.kineto import load_ranks

            return load_ranks(files, progress)
        from accelview.model.cluster import load_cluster

        trace = load_cluster(files)
        if progress is not None:
            progress(1.0)
        return trace

    return load
