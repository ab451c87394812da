"""The overview strip's model: exact per-pixel busy fractions of the whole run per side."""

from __future__ import annotations

import numpy as np
from accelview.model import Trace, TraceBuilder, TrackKind
from accelview.model.view.lod import TraceLOD
from accelview.model.view.lod_overview import GROUPS, track_groups


def overview_busy(trace: Trace, origin: int, span: float, width: int) -> tuple[list[str], np.ndarray]:
    """The reference the overview cache is held to, computed another way: (row names, busy)
    where busy[g, i] is the mean busy fraction, over row g's tracks that
    have slices, of bucket i of ``width`` equal buckets of [0, span) ns from ``origin``: the
    exact overlap of every depth-0 slice with each bucket. Rows without tracks are left out."""
    width = max(int(width), 1)
    sl = trace.slices
    if not len(sl) or span <= 0:
        return [], np.zeros((0, width))
    top = sl.depth == 0
    tracks = sl.track[top].astype(np.int64)
    groups = track_groups(trace)
    g = groups[tracks]
    s = np.clip((sl.start_ns[top] - origin).astype(np.float64), 0, span)
    e = np.clip(s + sl.dur_ns[top].astype(np.float64), 0, span)
    p = span / width
    n = len(GROUPS) * width
    bs = g * width + np.minimum((s / p).astype(np.int64), width - 1)
    be = g * width + np.minimum((e / p).astype(np.int64), width - 1)
    x0 = (bs % width) * p
    same = bs == be
    # A slice inside one bucket adds its length there; one crossing buckets adds its head to
    # the first, its tail to the last and a whole bucket to each one between (a difference
    # array of counts), all in bincounts, never a Python loop over slices.
    busy = np.zeros(n, np.float64)
    busy += np.bincount(bs[same], weights=(e - s)[same], minlength=n)
    c = ~same
    busy += np.bincount(bs[c], weights=(x0[c] + p - s[c]), minlength=n)
    busy += np.bincount(be[c], weights=(e[c] - (be[c] % width) * p), minlength=n)
    steps = np.bincount(bs[c] + 1, minlength=n + 1) - np.bincount(be[c], minlength=n + 1)
    busy += np.cumsum(steps)[:n] * p
    has = np.flatnonzero(np.bincount(tracks, minlength=len(groups)))
    lanes = np.bincount(groups[has], minlength=len(GROUPS))
    keep = np.flatnonzero(lanes > 0)
    frac = busy.reshape(len(GROUPS), width)[keep] / p / lanes[keep, None]
    return [GROUPS[i][0] for i in keep.tolist()], np.clip(frac, 0, 1)


def two_sided():
    """A host thread busy over [0, 250) and [500, 600); a device unit over [100, 1000)."""
    b = TraceBuilder()
    host = b.add_track("h", TrackKind.HOST, host="h")
    th = b.add_track("t", TrackKind.HOST_THREAD, parent=host, host="h")
    dev = b.add_track("d", TrackKind.DEVICE, parent=host, host="h", device=0)
    unit = b.add_track("u", TrackKind.EXEC_UNIT, parent=dev, host="h", device=0)
    b.add_slice(th, 0, 250, "a", "c")
    b.add_slice(th, 10, 20, "nested", "c")  # depth 1: never counted twice
    b.add_slice(th, 500, 100, "b", "c")
    b.add_slice(unit, 100, 900, "k", "c")
    return b.build()


def test_overview_is_the_exact_busy_fraction_of_each_bucket_per_side():
    names, busy = overview_busy(two_sided(), 0, 1000.0, 10)
    assert names == ["host", "device"]
    np.testing.assert_allclose(busy[0], [1, 1, 0.5, 0, 0, 1, 0, 0, 0, 0])
    np.testing.assert_allclose(busy[1], [0] + [1] * 9)


def test_overview_of_a_slice_inside_one_pixel_is_its_share_of_it():
    _, busy = overview_busy(two_sided(), 0, 1000.0, 1)
    np.testing.assert_allclose(busy[:, 0], [0.35, 0.9])


def test_the_lod_gives_the_same_overview_from_its_coverage_machinery_and_caches_it():
    tr = two_sided()
    lod = TraceLOD(tr)
    for width in (10, 7, 333):
        names, busy = lod.overview(0.0, 1000.0, width)
        assert names == ["host", "device"]
        np.testing.assert_allclose(busy, overview_busy(tr, 0, 1000.0, width)[1], atol=1e-6)
    a = lod.overview(0.0, 1000.0, 10)
    assert lod.overview(0.0, 1000.0, 10)[1] is a[1]  # a warm frame computes nothing
    assert lod.overview(0.0, 1000.0, 20)[1].shape == (2, 20)
