"""The track table of accelview's own Chrome export (its top-level ``accelview`` key), checked
before the importer rebuilds tracks from it: the file is trusted only as far as it checks out,
so a hand-edited or damaged header is one clear error, never a trace that cannot be saved."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...checks import in_parent_loop
from ...schema import TrackKind

TRACK_FIELDS = ("parent", "kind", "name", "host", "device", "sort")
_INT16, _INT32 = 2**15, 2**31


def _int(v: Any, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v < hi


def check_header(header: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first row and field of ``header`` (``tracks`` and
    ``counter_tracks``) that is not what the exporter writes: six-field track rows whose
    parents are tracks of the table without loops, known kinds, text names, int16 devices,
    int32 sort orders; four-field counter rows naming a track and three texts."""
    tracks = header.get("tracks")
    if not isinstance(tracks, list):
        raise ValueError(f"tracks is a {type(tracks).__name__}, not a list")
    n = len(tracks)
    kinds = {int(k) for k in TrackKind}
    for i, row in enumerate(tracks):
        if not isinstance(row, list) or len(row) != len(TRACK_FIELDS):
            raise ValueError(f"track {i} is not a row of {len(TRACK_FIELDS)} fields")
        parent, kind, name, host, device, sort = row
        bad = next((f for f, ok in zip(TRACK_FIELDS, (
            _int(parent, -1, n) and parent != i, _int(kind, 0, 256) and kind in kinds, isinstance(name, str),
            isinstance(host, str), _int(device, -_INT16, _INT16), _int(sort, -_INT32, _INT32)), strict=True)
            if not ok), None)
        if bad is not None:
            raise ValueError(f"track {i} has an invalid {bad} {row[TRACK_FIELDS.index(bad)]!r}"[:200])
    loop = in_parent_loop(np.array([row[0] for row in tracks], dtype=np.int64))
    if loop >= 0:
        raise ValueError(f"track {loop} is its own ancestor")
    counters = header.get("counter_tracks", [])
    if not isinstance(counters, list):
        raise ValueError(f"counter_tracks is a {type(counters).__name__}, not a list")
    for i, row in enumerate(counters):
        if not (isinstance(row, list) and len(row) == 4 and _int(row[0], 0, n)
                and all(isinstance(v, str) for v in row[1:])):
            raise ValueError(f"counter track {i} is not a row of a track id and three texts"[:200])
