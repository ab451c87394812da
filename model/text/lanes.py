"""Lane names for text that lists lanes of several ranks, processes or hosts: a lane's own name
(``stream 84``) where it is unique among those listed, else qualified by its root (``rank 0 /
stream 84``), and by its whole path where that is not enough (two devices of one host)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from accelview.model.trace import Trace


def _path(trace: Trace, track: int) -> list[int]:
    """``track`` and its ancestors, root first."""
    parent = trace.tracks.parent
    out = [track]
    while parent[out[-1]] >= 0 and len(out) < 64:
        out.append(int(parent[out[-1]]))
    return out[::-1]


def lane_labels(trace: Trace, tracks: Sequence[int]) -> dict[int, str]:
    """A label per track of ``tracks``, unique among them where their paths differ."""
    paths = {t: _path(trace, t) for t in tracks}

    def name(ids: list[int]) -> str:
        return " / ".join(trace.track_name(i) for i in ids)

    labels = {t: trace.track_name(t) for t in tracks}
    for pick in (lambda p: p[:1] + p[-1:] if len(p) > 1 else p, lambda p: p):
        seen = Counter(labels.values())
        labels = {t: name(pick(paths[t])) if seen[lb] > 1 else lb for t, lb in labels.items()}
    return labels
