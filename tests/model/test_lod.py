"""Level-of-detail, time↔pixel arithmetic, lane layout and navigation queries, without Qt."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from accelview.capture.synthetic import demo_trace, large_trace
from accelview.model import TraceBuilder, TrackKind
from accelview.model.view.lanes import HEADER_H, ROW_H, LaneLayout
from accelview.model.view.lod import TraceLOD, colour_index, counter_minmax
from accelview.model.view.navigate import chain_of, find_slices, step_in_chain
from accelview.model.view.timescale import (
    MIN_SPAN_NS,
    TimeScale,
    format_time,
    ruler_ticks,
    tick_step,
    unit_for,
)


def one_lane(starts, durs, names=None):
    b = TraceBuilder()
    t = b.add_track("lane", TrackKind.EXEC_UNIT)
    for i, (s, d) in enumerate(zip(starts, durs, strict=True)):
        b.add_slice(t, s, d, names[i] if names else f"k{i % 3}")
    return b.build(), t


# -- timescale ---------------------------------------------------------------------------------
def test_scale_maps_both_ways_and_zoom_keeps_anchor():
    sc = TimeScale(1000.0, 2000.0, 100, 0.0, 10_000.0)
    assert sc.x_of(1500) == 50
    assert sc.t_of(25) == 1250
    z = sc.zoom(2.0, at_x=25)
    assert z.span == pytest.approx(500)
    assert z.t_of(25) == pytest.approx(1250)
    assert sc.zoom(0.5).span == pytest.approx(2000)


def test_scale_pan_and_limits():
    sc = TimeScale.fit(0, 1000, 200)
    assert sc.t0 < 0 < 1000 < sc.t1
    z = sc.zoom(4)  # the whole trace fits: panning a zoomed-in view moves it
    p = z.pan_px(20)
    assert p.t0 == pytest.approx(z.t0 + 20 * z.ns_per_px)
    far = sc.with_window(10**9, 10**9 + 100)  # cannot fly off the trace
    assert far.t0 <= 1000 + far.span
    deep = sc.zoom(1e9)
    assert deep.span == pytest.approx(MIN_SPAN_NS)
    assert sc.zoom(1e-9).span <= 4 * 1000 + 1


def test_units_and_formatting():
    assert unit_for(500) == ("ns", 1.0)
    assert unit_for(2_000)[0] == "µs"
    assert unit_for(3e6)[0] == "ms"
    assert unit_for(4e9)[0] == "s"
    # Ruler labels carry the step's precision, not format_duration's three significant digits.
    assert format_time(12_350_000, 50_000) == "12.35 ms" or format_time(12_350_000, 50_000) == "12350 µs"
    assert format_time(1_500, 500) == "1500 ns"
    assert format_time(2_000_000, 1_000_000) == "2 ms"


@pytest.mark.parametrize("span", [37.0, 1e3, 7.7e5, 3e8, 1.2e11])
def test_ruler_ticks_adapt_and_do_not_crowd(span):
    sc = TimeScale(1000.0, 1000.0 + span, 1200, 0.0, 1e12)
    ticks = ruler_ticks(sc, origin=1000.0, min_px=90)
    major = [t for t in ticks if t.label]
    assert 2 <= len(major) <= 1200 // 90 + 1
    xs = [t.x for t in major]
    assert all(b - a >= 89.9 for a, b in itertools.pairwise(xs))
    assert len({t.label for t in major}) == len(major)  # distinct labels
    step = tick_step(sc.ns_per_px, 90)
    assert str(step)[0] in "125"


# -- coverage ------------------------------------------------------------------------------------
def brute_busy(starts, durs, a, b):
    return sum(max(0, min(s + d, b) - max(s, a)) for s, d in zip(starts, durs, strict=True))


def test_coverage_matches_brute_force_and_keeps_subpixel_slices():
    rng = np.random.default_rng(3)
    durs = rng.integers(1, 50, 400)
    gaps = rng.integers(0, 80, 400)
    starts = np.cumsum(durs + gaps) - durs
    trace, t = one_lane(starts.tolist(), durs.tolist())
    lod = TraceLOD(trace)
    p = 97.0  # ns per pixel: most slices are narrower than a pixel
    cov = lod.coverage(t, 0, 0.0, p, 200)
    assert cov is not None
    for i in range(0, 200, 7):
        a, b = round(i * p), round((i + 1) * p)
        assert cov.frac[i] == pytest.approx(brute_busy(starts, durs, a, b) / (b - a), abs=1e-6)
        assert (cov.name[i] >= 0) == (cov.frac[i] > 0)
    # A lone 1 ns slice in a 10 µs/px view still shows.
    trace2, t2 = one_lane([5_000_000], [1])
    cov2 = TraceLOD(trace2).coverage(t2, 0, 0.0, 10_000.0, 1000)
    assert (cov2.frac > 0).sum() == 1


def test_coverage_cache_reused_while_panning_at_one_zoom():
    trace = large_trace(20_000, lanes=2)
    lod = TraceLOD(trace)
    a = lod.coverage(1, 0, 0.0, 50.0, 400)
    entry = lod._cache[0]
    b = lod.coverage(1, 0, 50.0 * 100, 50.0, 400)  # a quarter screen to the right
    assert lod._cache[0] is entry
    assert np.array_equal(a.frac[100:], b.frac[: len(a.frac) - 100])
    lod.coverage(1, 0, 0.0, 60.0, 400)  # a zoom recomputes
    assert lod._cache[0] is not entry


def test_wide_slices_are_exactly_those_long_enough_in_window():
    rng = np.random.default_rng(5)
    durs = np.exp(rng.uniform(0, 12, 3000)).astype(np.int64) + 1
    starts = np.cumsum(durs + rng.integers(0, 100, 3000)) - durs
    trace, t = one_lane(starts.tolist(), durs.tolist())
    lod = TraceLOD(trace)
    t0, t1 = float(starts[500]), float(starts[900])
    for min_dur in (1.0, 100.0, 5000.0, 1e5):
        got = lod.wide_slices(t, 0, t0, t1, min_dur)
        sl = trace.slices
        want = np.flatnonzero((sl.dur_ns >= min_dur) & (sl.start_ns < t1) & (sl.start_ns + sl.dur_ns > t0))
        assert np.array_equal(got, want)


def test_hit_testing():
    trace, t = one_lane([100, 300], [100, 50])
    lod = TraceLOD(trace)
    assert lod.slice_at(t, 0, 150) == 0
    assert lod.slice_at(t, 0, 320) == 1
    assert lod.slice_at(t, 0, 250) == -1
    assert lod.slice_at(t, 0, 205, tol_ns=10) == 0
    assert lod.slice_at(t, 0, 290, tol_ns=15) == 1
    assert lod.slice_at(t, 5, 150) == -1


def test_busy_fraction():
    trace, t = one_lane([0, 200], [100, 100])
    lod = TraceLOD(trace)
    assert lod.busy_fraction(t, 0, 400) == pytest.approx(0.5)
    assert lod.busy_fraction(t, 50, 250) == pytest.approx(0.5)
    assert lod.busy_fraction(t, 100, 200) == 0


def test_colours_are_stable_and_ignore_trailing_numbers():
    assert colour_index("matmul_12") == colour_index("matmul_13") == colour_index("matmul")
    assert 0 <= colour_index("x") < 24
    trace, _ = one_lane([0, 10], [5, 5], ["alpha", "beta"])
    lod = TraceLOD(trace)
    ids = np.array([trace.strings.lookup("alpha"), -1, trace.strings.lookup("beta")])
    c = lod.colours(ids)
    assert c[1] == -1 and c[0] == colour_index("alpha") and c[2] == colour_index("beta")


def test_counter_minmax_keeps_spikes_and_held_values():
    ts = np.array([0, 10, 11, 500, 900], np.int64)
    vals = np.array([1.0, 50.0, 2.0, 3.0, 0.5])
    lo, hi = counter_minmax(ts, vals, 0.0, 100.0, 10)
    assert hi[0] == 50 and lo[0] == 1  # the spike inside bucket 0 survives
    assert lo[1] == hi[1] == 2  # held value, no sample in bucket
    assert hi[5] == 3 and lo[5] == 2
    assert lo[9] == 0.5
    lo2, hi2 = counter_minmax(ts, vals, -300.0, 100.0, 3)
    assert np.isnan(hi2[0]) and np.isnan(lo2[1])


# -- layout and navigation -------------------------------------------------------------------------
def test_lane_layout_follows_tree_and_hides_and_collapses():
    tr = demo_trace(steps=2, layers=1)
    lod = TraceLOD(tr)
    full = LaneLayout(tr, lod)
    names = [(tr.track_name(ln.track), ln.depth) for ln in full.lanes]
    assert names[0] == ("host0", -1)
    assert ("MainThread", 1) in names and ("matrix engine", 0) in names
    assert all(ln.h in (ROW_H, HEADER_H) for ln in full.lanes)
    ys = [ln.y for ln in full.lanes]
    assert ys == sorted(ys)
    ln = full.lanes[3]
    assert full.lane_at(ln.y + 1) == ln
    assert full.lane_of(ln.track, ln.depth) == ln
    host = full.lanes[0].track
    collapsed = LaneLayout(tr, lod, collapsed={host})
    assert [x.track for x in collapsed.lanes if x.track == host] and len(collapsed.lanes) < len(full.lanes)
    hidden = LaneLayout(tr, lod, hidden={host})
    assert all(tr.track_name(x.track) != "MainThread" for x in hidden.lanes)
    assert full.visible(0, 30)[0] == full.lanes[0]


def test_search_and_chain():
    tr = demo_trace(steps=2, layers=1)
    hits = find_slices(tr, "ATTENTION")
    assert {tr.strings[tr.slices.name[h]] for h in hits} == {"attention", "submit attention"}
    assert len(hits) == 4
    assert np.all(np.diff(tr.slices.start_ns[hits]) >= 0)
    assert len(find_slices(tr, "")) == 0 and len(find_slices(tr, "no such kernel")) == 0
    kernel = next(int(h) for h in hits if tr.strings[tr.slices.name[h]] == "attention")
    chain, flows = chain_of(tr, kernel)
    lanes = {tr.track_name(tr.slices.track[c]) for c in chain}
    assert lanes == {"MainThread", "driver queue 0", "matrix engine"}
    assert len(flows) == 2
    assert step_in_chain(chain, int(chain[0]), 1) == chain[1]
    assert step_in_chain(chain, int(chain[-1]), 1) == chain[-1]


def test_ruler_uses_one_unit():
    sc = TimeScale(3_000_000.0, 5_000_000.0, 1200, 0.0, 1e9)
    labels = [t.label for t in ruler_ticks(sc, 0.0) if t.label]
    assert labels and all(lab.endswith(" ms") for lab in labels)
    assert "3.5 ms" in labels or "4 ms" in labels or "4.0 ms" in labels


def test_wide_slices_through_the_class_index():
    rng = np.random.default_rng(9)
    n = 20_000
    durs = np.where(rng.random(n) < 0.01, rng.integers(5_000, 50_000, n), rng.integers(1, 40, n)).astype(np.int64)
    starts = np.cumsum(durs + rng.integers(0, 20, n)) - durs
    b = TraceBuilder()
    t = b.add_track("lane", TrackKind.EXEC_UNIT)
    b.add_slices(t, starts, durs, np.full(n, b.strings.intern("k"), np.int32), depth=np.zeros(n, np.uint16))
    trace = b.build()
    lod = TraceLOD(trace)
    t0, t1 = float(starts[100]), float(starts[n - 100])  # > 4096 slices in the window
    sl = trace.slices
    for min_dur in (100.0, 4_000.0, 30_000.0):
        got = lod.wide_slices(t, 0, t0, t1, min_dur)
        want = np.flatnonzero((sl.dur_ns >= min_dur) & (sl.start_ns < t1) & (sl.start_ns + sl.dur_ns > t0))
        assert np.array_equal(got, want)


def test_batched_coverage_equals_per_run_coverage():
    trace = large_trace(30_000, lanes=5)
    lod = TraceLOD(trace)
    lanes = [(t, 0) for t in range(1, 6)] + [(0, 0)]  # the device track has no slices
    x0, frac, names, cols, present = lod.coverage_rows(lanes, 12345.0, 77.0, 300)
    assert list(present) == [True] * 5 + [False]
    assert not frac[5].any()
    for i, (t, d) in enumerate(lanes[:5]):
        idx = lod.run(t, d)
        k0 = int(np.floor(12345.0 / 77.0))
        f, nm = idx.coverage(k0, 301, 77.0)
        assert np.allclose(frac[i], f) and np.array_equal(names[i], nm)
        assert np.array_equal(cols[i], lod.colours(nm))
    assert x0 == pytest.approx(k0 - 12345.0 / 77.0)


def test_zooming_resamples_cached_coverage_then_exact():
    trace = large_trace(20_000, lanes=2)
    lod = TraceLOD(trace)
    exact = lod.coverage_rows([(1, 0)], 0.0, 50.0, 400)
    assert not lod.stale
    approx = lod.coverage_rows([(1, 0)], 1000.0, 45.0, 400, exact=False)
    assert lod.stale and approx[1].shape == exact[1].shape
    again = lod.coverage_rows([(1, 0)], 1000.0, 45.0, 400)
    assert not lod.stale
    direct = TraceLOD(trace).coverage_rows([(1, 0)], 1000.0, 45.0, 400)
    assert np.allclose(again[1], direct[1])


def test_wide_rows_batch_equals_per_lane():
    trace = large_trace(40_000, lanes=4)
    lod = TraceLOD(trace)
    lo, hi = trace.time_bounds()
    lanes = [(t, 0) for t in range(0, 5)]
    for frac, px in ((1.0, 1.0), (0.2, 3.0), (0.001, 3.0)):
        t0, t1 = lo + (hi - lo) * 0.3, lo + (hi - lo) * (0.3 + frac)
        min_dur = px * (t1 - t0) / 1000
        which, ids = lod.wide_rows(lanes, t0, t1, min_dur)
        for i, (t, d) in enumerate(lanes):
            assert np.array_equal(ids[which == i], lod.wide_slices(t, d, t0, t1, min_dur))


def test_instant_times_one_per_pixel():
    b = TraceBuilder()
    t = b.add_track("lane", TrackKind.HOST_THREAD)
    for ts in (10, 11, 12, 500, 990, 2000):
        b.add_instant(t, ts, "mark")
    trace = b.build()
    lod = TraceLOD(trace)
    assert lod.instant_times(t, 0, 1000, 100.0).tolist() == [10, 500, 990]
    assert lod.instant_times(t, 0, 1000, 1.0).tolist() == [10, 11, 12, 500, 990]
    assert len(lod.instant_times(t + 1, 0, 1000, 1.0)) == 0


def test_epoch_timestamps_keep_nanosecond_precision():
    """Real traces count ns since 1970 (~1.7e18), where a float is only good to 256 ns: the
    view works in offsets from an integer origin so a 100 ns window still hits exactly."""
    base = 1_716_423_322_388_068_751
    b = TraceBuilder()
    t = b.add_track("stream", TrackKind.GPU_STREAM)
    starts = [base + 1000 + 20 * i for i in range(10)]
    for i, s in enumerate(starts):
        b.add_slice(t, s, 10, f"k{i}")
    trace = b.build()
    lod = TraceLOD(trace, origin=base)
    assert lod.slice_at(t, 0, 1000 + 20 * 3 + 5) == 3
    assert lod.slice_at(t, 0, 1000 + 20 * 3 + 15) == -1
    cov = lod.coverage(t, 0, 1000.0, 1.0, 100)  # 1 ns per pixel
    assert cov.frac[:10].tolist() == [1.0] * 10 and cov.frac[10:20].tolist() == [0.0] * 10
    assert lod.wide_slices(t, 0, 1000.0, 1100.0, 5.0).tolist() == [0, 1, 2, 3, 4]
    sc = TimeScale.fit(0, 1200, 1000, origin=base)
    assert sc.t0 == pytest.approx(base - 12, abs=512)
    z = sc.with_window(1000.0, 1100.0)
    labels = [tk.label for tk in ruler_ticks(z) if tk.label]
    assert len(labels) >= 5 and len(set(labels)) == len(labels)  # 10-20 ns steps stay distinct
    assert labels[0] in ("1.00 µs", "1.01 µs", "1.02 µs")


def test_panning_out_of_the_cache_computes_only_the_new_buckets():
    trace = large_trace(20_000, lanes=3)
    lod = TraceLOD(trace)
    lanes = [(1, 0), (2, 0)]
    lod.coverage_rows(lanes, 0.0, 50.0, 400)
    g0, g1 = lod._cache[0][1], lod._cache[0][2]
    for shift in (300, 700, -900):  # beyond the padded window, both ways
        t0 = 50.0 * shift
        got = lod.coverage_rows(lanes, t0, 50.0, 400)
        fresh = TraceLOD(trace).coverage_rows(lanes, t0, 50.0, 400)
        assert np.allclose(got[1], fresh[1]) and np.array_equal(got[3], fresh[3])
        assert lod._cache[0][2] - lod._cache[0][1] <= 3 * 400 + 400
    assert (lod._cache[0][1], lod._cache[0][2]) != (g0, g1)


def test_counter_lod_bounds_work_and_keeps_spikes():
    from accelview.model.view.counter_lod import CounterLOD

    rng = np.random.default_rng(2)
    n = 400_000
    ts = np.cumsum(rng.integers(1, 20, n)).astype(np.int64)
    vals = rng.normal(10, 1, n)
    vals[123_456] = 500.0  # a one-sample spike
    lod = CounterLOD(ts, vals)
    width = 300
    p = (ts[-1] - ts[0]) / width
    lo, hi = lod.minmax(float(ts[0]), p, width)
    exact_lo, exact_hi = counter_minmax(ts, vals, float(ts[0]), p, width)
    assert np.nanmax(hi) == 500.0 and lod._levels  # drawn from blocks, the spike kept
    assert np.nanmin(lo) == pytest.approx(np.nanmin(exact_lo))
    spike = int(np.nanargmax(exact_hi))
    assert abs(int(np.nanargmax(hi)) - spike) <= 1
    # Zoomed in (few samples per pixel) it is exact.
    lo2, hi2 = lod.minmax(float(ts[1000]), 3.0, width)
    e_lo2, e_hi2 = counter_minmax(ts, vals, float(ts[1000]), 3.0, width)
    assert np.allclose(lo2, e_lo2, equal_nan=True) and np.allclose(hi2, e_hi2, equal_nan=True)


def test_empty_leaf_tracks_get_a_plain_row_and_groups_a_header():
    b = TraceBuilder()
    dev = b.add_track("device", TrackKind.DEVICE)
    busy = b.add_track("matrix", TrackKind.EXEC_UNIT, dev)
    idle = b.add_track("DMA 3", TrackKind.DMA_ENGINE, dev)
    b.add_slice(busy, 0, 10, "k")
    trace = b.build()
    layout = LaneLayout(trace, TraceLOD(trace))
    assert [(ln.track, ln.depth) for ln in layout.lanes] == [(dev, -1), (busy, 0), (idle, 0)]


def test_zero_length_slices_still_show():
    trace, t = one_lane([100, 105, 400], [0, 0, 50])
    for lod in (TraceLOD(trace), None):
        if lod is None:  # the per-run path (used when a trace's span is too long to pack)
            lod = TraceLOD(trace)
            lod._g = False
        cov = lod.coverage(t, 0, 0.0, 10.0, 60)
        assert cov.frac[10] > 0 and cov.frac[9] == 0 and cov.frac[11] == 0
        assert cov.frac[40:45].tolist() == [1.0] * 5
