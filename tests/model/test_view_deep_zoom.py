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


def test_deep_zoom_ruler_counts_from_a_round_base_as_perfetto_does():
    from accelview.model.view.timescale import ruler

    r = ruler(TimeScale(65_550_950, 65_550_960, 1700, 0, 1e8))
    assert r.base == 65_550_950 and r.base_label == "65.55095 ms"
    labels = [t.label for t in r.ticks if t.label]
    assert labels[:3] == ["+0 ns", "+1 ns", "+2 ns"]
    r = ruler(TimeScale(2_790_000, 2_790_373, 1700, 0, 3.5e7))
    assert r.base_label == "2.790 ms" and "+20 ns" in [t.label for t in r.ticks]
    wide = ruler(TimeScale(0, 3.5e7, 1700, 0, 3.5e7))  # zoomed out: plain times, no base
    assert wide.base is None and "2 ms" in [t.label for t in wide.ticks]
    chosen = ruler(TimeScale(2_790_000, 2_790_373, 1700, 0, 3.5e7), origin=2_790_100)  # a chosen origin
    assert chosen.base is None and {"-100 ns", "0 ns", "100 ns"} <= {t.label for t in chosen.ticks}


def test_framing_chain_steps_and_held_zoom_are_plain_arithmetic():
    from accelview.model.view.navigate import chain_step, frame_slice
    from accelview.model.view.timescale import held_zoom_factor

    assert frame_slice(100, 200, 0, 10_000) == pytest.approx((0, 300))  # a sliver: a third of the view
    assert frame_slice(1000, 5000, 0, 10_000) is None  # readable already
    assert frame_slice(20_000, 20_100, 0, 10_000) is not None  # out of view
    chain = np.array([5, 7, 9])
    assert chain_step(chain, 7, 1) == (9, "chain 3 / 3")
    assert chain_step(chain, 9, 1) == (9, "end of chain (3 / 3)")
    assert chain_step(chain, 5, -1) == (5, "start of chain (1 / 3)")
    assert held_zoom_factor(1.3, 0) == pytest.approx(1.3)
    assert held_zoom_factor(1.3, 4) > held_zoom_factor(1.3, 1) > 1.3
    assert held_zoom_factor(1.3, 1000) == pytest.approx(1.3**4)
