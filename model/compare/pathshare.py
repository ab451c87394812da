"""The critical path split by iteration: per occurrence of a group, the time the path spent on
each resource (execution units, DMA engines, the runtime API, waiting), so that a diff can say
which stage of the step grew."""

from __future__ import annotations

import numpy as np
from accelview.model.analysis.critical_path import CriticalPath
from accelview.model.schema import TrackKind
from accelview.model.trace import Trace

from .runs import Group

WAITING = "waiting"


def path_resources(trace: Trace, path: CriticalPath) -> np.ndarray:
    """The resource of each step of the path: a track kind's label, or "waiting"."""
    kinds = trace.tracks.kind[trace.slices.track[path.slice_id]] if len(path.slice_id) else np.empty(0, np.uint8)
    labels = np.array([TrackKind(int(k)).label for k in range(int(kinds.max()) + 1)] if len(kinds) else [""],
                      dtype=object)
    out = labels[kinds] if len(kinds) else np.empty(0, object)
    out[path.kind == 1] = WAITING
    return out


def per_iteration(path: CriticalPath, resources: np.ndarray, g: Group) -> dict[str, np.ndarray]:
    """Resource → time on the path inside each occurrence of ``g``."""
    names, code = np.unique(resources, return_inverse=True) if len(resources) else (np.empty(0, object),
                                                                                   np.empty(0, np.int64))
    out = np.zeros((g.n, len(names)))
    for i, (s, e) in enumerate(zip(g.start_ns.tolist(), g.end_ns.tolist(), strict=True)):
        lo = int(np.searchsorted(path.end_ns, s, "right"))
        hi = int(np.searchsorted(path.start_ns, e, "left"))
        if hi > lo:
            inside = np.minimum(path.end_ns[lo:hi], e) - np.maximum(path.start_ns[lo:hi], s)
            out[i] = np.bincount(code[lo:hi], weights=np.clip(inside, 0, None), minlength=len(names))
    return {str(n): out[:, j] for j, n in enumerate(names)}
