"""The GPU-trace part of a report (imported PyTorch/Kineto traces): HTA's temporal breakdown,
idle time by cause per stream, kernel statistics, launch delays and queue length, and
communication/compute overlap, as plain JSON-able values (``accelview.model.analysis.gpu``)."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

import numpy as np
from accelview.model.analysis import gpu
from accelview.model.schema import TrackKind
from accelview.model.trace import Trace


def _plain(obj: Any) -> dict[str, Any]:
    """A dataclass as a dict of its scalar fields (arrays left out)."""
    return {f.name: v for f in fields(obj) if not isinstance(v := getattr(obj, f.name), np.ndarray)}


def gpu_section(trace: Trace, top: int = 20) -> dict[str, Any] | None:
    """The GPU analyses of ``trace``, or None when it has no GPU stream lanes."""
    if not (trace.tracks.kind == TrackKind.GPU_STREAM).any():
        return None
    overlap = gpu.comm_compute_overlap(trace)
    return {
        "temporal_breakdown": [asdict(b) for b in gpu.temporal_breakdown(trace)],
        "idle_by_stream": [{**asdict(s), "stream_name": trace.track_name(s.stream), "total": s.total}
                           for s in gpu.idle_time_breakdown(trace)],
        "kernels": [asdict(k) for k in gpu.kernel_statistics(trace)[:top]],
        "launches": [{**_plain(s), "stream_name": trace.track_name(s.stream)} for s in gpu.launch_statistics(trace)],
        "comm_compute_overlap": [{**asdict(o), "ratio": None if np.isnan(o.ratio) else o.ratio} for o in overlap],
    }
