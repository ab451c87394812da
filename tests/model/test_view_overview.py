"""The overview strip's model: exact per-pixel busy fractions of the whole run per side."""

from __future__ import annotations

import numpy as np
from accelview.model import TraceBuilder, TrackKind
from accelview.model.view.lod import TraceLOD
from accelview.model.view.lod_overview import overview_busy


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
