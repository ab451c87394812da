"""Issue 22, the view model at deep zoom and at the trace's edges: a slice covering the view
is covered at every pixel below 1 ns a pixel, and pan and zoom stop near the trace's bounds."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.model import TraceBuilder, TrackKind
from accelview.model.view.lod import TraceLOD
from accelview.model.view.timescale import MIN_SPAN_NS, TimeScale

EPOCH = 1_700_000_000_000_000_000  # epoch-ns timestamps: floats of them are only good to 256 ns


def long_slice_trace():
    b = TraceBuilder()
    t = b.add_track("lane", TrackKind.EXEC_UNIT)
    b.add_slice(t, EPOCH, 80_000, "gate_up_proj")
    b.add_slice(t, EPOCH + 100_000, 5, "tiny")
    return b.build(), t


@pytest.mark.parametrize("span", [373.0, 37.0, 1.0])
@pytest.mark.parametrize("batched", [True, False])
def test_a_covering_slice_covers_every_pixel_below_one_ns_a_pixel(span, batched):
    trace, t = long_slice_trace()
    lod = TraceLOD(trace, origin=EPOCH)
    if not batched:
        lod._g = False  # the per-run path (traces too long to pack)
    width = 1700
    _, frac, names, _, _ = lod.coverage_rows([(t, 0)], 40_000.0 + 0.3, span / width, width)
    assert np.allclose(frac[0], 1.0)
    assert (names[0] == names[0][0]).all() and names[0][0] >= 0


def test_partial_pixels_at_sub_ns_zoom_are_exact():
    trace, t = long_slice_trace()
    lod = TraceLOD(trace, origin=EPOCH)
    p = 0.25  # four pixels a ns: the slice ends at 80 000 ns, inside the view
    _, frac, _, _, _ = lod.coverage_rows([(t, 0)], 79_999.0, p, 16)
    assert np.allclose(frac[0][:4], 1.0) and np.allclose(frac[0][4:16], 0.0)


def test_zoom_reaches_one_ns_of_view():
    sc = TimeScale.fit(0, 10**9, 1000).zoom(1e12)
    assert MIN_SPAN_NS <= 1.0 and sc.span == pytest.approx(1.0)


def test_pan_and_zoom_stop_at_the_trace_bounds_plus_a_small_margin():
    sc = TimeScale.fit(0, 1_000_000, 1000)
    z = sc.zoom(100.0)  # 10 µs of view
    far_right = z.pan_fraction(1e6)
    assert far_right.r1 <= 1_000_000 + 0.1 * z.span and far_right.r1 > 1_000_000
    far_left = z.pan_fraction(-1e6)
    assert far_left.r0 >= -0.1 * z.span and far_left.r0 < 0
    out = sc.zoom(1e-6)  # zooming out stops a little beyond the whole trace
    assert out.span <= 1_000_000 * 1.1 and out.r0 <= 0 and out.r1 >= 1_000_000
