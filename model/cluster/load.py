"""``load_cluster``: a cluster's host captures read as one trace on host0's clock."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..memory import check_fits
from ..trace import Trace
from .inputs import cluster_inputs, expand, is_cluster_capture
from .merge import merge_aligned
from .retime import retimed
from .timebase import HostAlignment, host_alignment, launch_corrected, tightened


def align_cluster(traces: Sequence[Trace]) -> tuple[list[Trace], list[HostAlignment]]:
    """Host captures (in host order, host0 first) each moved onto host0's clock, with the
    alignments that moved them."""
    aligns = [launch_corrected(host_alignment(t, f"host{i}", i), t) for i, t in enumerate(traces)]
    aligns = tightened(aligns, traces)
    return [retimed(t, a.to_reference) for t, a in zip(traces, aligns, strict=True)], aligns


def load_cluster(paths: Sequence[str | Path] | str | Path) -> Trace:
    """One trace of a cluster from its host captures (files, or a directory of them): every
    event on host0's clock, the hosts (``host0`` …) its top-level tracks, each clock domain's
    map stored in ``clock_segments``. A single merged capture is returned as it is. Raises
    ``AccelviewError`` (one line) for files that are not one cluster's hosts, each once."""
    from ..loader import load_trace, memory_need

    files = expand([paths] if isinstance(paths, str | Path) else list(paths))
    if len(files) > 1:  # the hosts' traces and their merge are held at once
        check_fits(files[0].parent if len({f.parent for f in files}) == 1 else files[0],
                   2 * sum(memory_need(p) for p in files))
    traces = [load_trace(p) for p in files]
    if len(traces) == 1 and "merged" in traces[0].metadata:
        return traces[0]
    ordered = cluster_inputs(files, traces)
    aligned, aligns = align_cluster([t for _, t in ordered])
    return merge_aligned(aligned, aligns, [p for p, _ in ordered])


__all__ = ["align_cluster", "is_cluster_capture", "load_cluster"]
