"""Clock alignment against known clocks: offset and drift recovered, steps found and placed, every
domain chained onto host0, host offsets narrowed by what sends prove, and on a generated cluster
no event placed before its cause. Segments survive a capture file; files without them still read."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from accelview.capture.sim.clocks import ClusterClocks, NetworkPath, SimClock, pcie_read_samples, ptp_exchange
from accelview.capture.sim.clocks.check import (
    Placer,
    placement_errors,
    record_streams,
    trace_precedences,
    violations,
    within_bounds,
)
from accelview.capture.sim.clocks.cluster import REFERENCE
from accelview.capture.sim.clocks.events import causal_events
from accelview.model import TraceBuilder
from accelview.model.align import (
    Brackets,
    ClockFit,
    ClockMap,
    Precedence,
    Segment,
    align_chain,
    align_domains,
    fit_clock,
    tighten,
)
from accelview.model.align.rows import add_segments, maps_of
from accelview.model.loader import load_trace
from accelview.model.store.writer import write_capture

S = 1_000_000_000


def _true_vs(parent: SimClock, child: SimClock) -> tuple[float, float]:
    """(offset, drift) of a stepless child against a stepless parent, in the capture's convention."""
    scale = (1 + child.drift_ppm * 1e-6) / (1 + parent.drift_ppm * 1e-6)
    return child.offset_ns - parent.offset_ns * scale, (scale - 1) * 1e6


def _errors(m: ClockMap, parent: SimClock, child: SimClock, t: np.ndarray) -> np.ndarray:
    raw = child.read(t)
    return m.to_ref(raw, m.segment_of(raw, in_order=True)) - parent.read(t)


def test_offset_and_drift_close_to_the_truth() -> None:
    rng = np.random.default_rng(0)
    host, dev = SimClock(1_500_000, 42.0), SimClock(3 * S, -17.0, jitter_ns=2000.0)
    fit = fit_clock(pcie_read_samples(host, dev, 0, 20 * S, rng, asymmetry_ns=60.0), asymmetry_ns=100.0)
    (seg,) = fit.map.segments
    offset, drift = _true_vs(host, dev)
    assert seg.drift_ppm == pytest.approx(drift, abs=0.01)
    assert seg.offset_ns == pytest.approx(offset, abs=100)
    err = _errors(fit.map, host, dev, np.arange(0, 20 * S, 997_001))
    assert np.abs(err).max() < 60 < seg.error_ns  # within the asymmetry's half (30 ns) and the bound


@pytest.mark.parametrize("jump", [400_000, -250_000])
def test_a_step_is_detected_and_placed(jump: int) -> None:
    rng = np.random.default_rng(1)
    host0, host = SimClock(0, 8.0), SimClock(4_000_000, -30.0).with_step(7 * S, jump)
    path = NetworkPath.random(rng)
    fit = fit_clock(ptp_exchange(host0, host, 0, 12 * S, rng, path=path), path.asymmetry_bound_ns)
    assert len(fit.map) == 2 and len(fit.steps) == 1
    w = fit.steps[0]
    assert w.jump_ns == pytest.approx(jump, abs=1_000)
    at = host0.read(np.array([7 * S]))[0]
    assert w.parent_ns[0] <= at <= w.parent_ns[1]
    t = np.arange(0, 12 * S, 1_000_003)
    err = _errors(fit.map, host0, host, t)
    near = np.abs(t - 7 * S) < 40_000_000  # the step is placed within half a PTP period (31 ms)
    assert np.abs(err[~near]).max() < 1_000
    assert (np.abs(err) <= np.array([s.error_ns for s in fit.map.segments])[
        fit.map.segment_of(host.read(t), in_order=True)])[~near].all()


def test_a_counter_reset_splits_the_device_and_records_stay_in_order() -> None:
    rng = np.random.default_rng(2)
    host, dev = SimClock(0, 5.0), SimClock(9 * S, 22.0, jitter_ns=2000.0).with_reset(4 * S)
    fit = fit_clock(pcie_read_samples(host, dev, 0, 10 * S, rng), asymmetry_ns=0.0)
    assert len(fit.map) == 2
    t = np.sort(rng.integers(0, 10 * S, 50_000))
    raw = dev.read(t)
    seg = fit.map.segment_of(raw, in_order=True)
    assert (seg == (t >= 4 * S)).all()  # the repeated timestamps told apart by record order
    assert np.abs(_errors(fit.map, host, dev, t)).max() < 100
    # Placed and back: every raw timestamp recovered through the segment that placed it; through
    # the segment in force at its reference time, all but those within a sync period of the reset.
    placed = fit.map.to_ref(raw, seg)
    assert np.array_equal(fit.map.from_ref(placed, seg), raw)
    far = np.abs(t - 4 * S) > 1_000_000
    assert np.array_equal(fit.map.from_ref(placed)[far], raw[far])


def test_tightening_narrows_a_host_offset_both_ways() -> None:
    # host1's map is 3 µs off (bound 10 µs); sends either way with 500 ns of flight pin it.
    off = ClockMap((Segment(-(1 << 62), 1 << 62, -3_000.0, 0.0, 10_000.0),))
    maps = {"host0": ClockMap.identity(), "host1": off}
    t = np.arange(1_000_000, 900_000_000, 1_000_000)
    prec = [Precedence("host0", t, "host1", t + 500), Precedence("host1", t, "host0", t + 500)]
    out = tighten(maps, {"host0": "host0", "host1": "host1"}, "host0", prec)["host1"]
    placed = out.to_ref(t)
    assert np.abs(placed - t).max() < 1  # the 3 µs taken out
    assert out.error_of(out.segment_of(t)).max() <= 500 + 1e-6  # was 10 µs
    assert (off.to_ref(t) > t + 500).all()  # host1's sends were placed after host0 received them
    assert not (out.to_ref(t) > t + 500).any() and not (out.to_ref(t + 500) < t).any()


def test_a_generated_cluster_has_no_effect_before_its_cause() -> None:
    clocks = ClusterClocks.random(3, 4, seed=7, seconds=20)
    syncs = clocks.sync_samples(20, seed=7)
    pairs, coll = causal_events(clocks, 20, seed=7, launches_per_device=4000, sends=10000, collectives=300)
    assert sum(len(p.cause_ns) for p in pairs) + coll.end_ns.size > 60_000
    maps = align_domains(((s.domain, s.parent, s.brackets, s.asymmetry_ns) for s in syncs), REFERENCE)
    maps = tighten(maps, {k: k.split("/")[0] for k in maps}, REFERENCE, trace_precedences(maps, pairs, coll))
    streams = record_streams(pairs, coll)
    place = Placer(maps, streams)
    assert violations(place, pairs, coll) == 0
    for dom, (true, raw) in streams.items():  # each clock's records stay in the order it made them
        assert (np.diff(place(dom, raw, true)) >= 0).all(), dom
    hd, hh = placement_errors(clocks, place, 20, seed=7)
    assert np.median(hd) <= 100 and np.percentile(hd, 99) <= 250 and np.percentile(hh, 99) <= 1_000
    assert within_bounds(clocks, maps, 20, seed=7) >= 0.999  # the error bars hold
    # The same events placed through each clock's first sync exchange alone (no drift) break causality.
    def first_offset(b: Brackets) -> ClockFit:
        return ClockFit(ClockMap((Segment(-(1 << 62), 1 << 62, float(b.domain_ns[0] - b.mid[0]), 0.0, 0.0),)), ())

    naive = align_chain({s.domain: (s.parent, first_offset(s.brackets)) for s in syncs}, REFERENCE)
    assert violations(Placer(naive, record_streams(pairs, coll)), pairs, coll) > 0


def test_segments_round_trip_through_a_capture(tmp_path: Path) -> None:
    m = ClockMap((Segment(-(1 << 62), 5_000, 12.5, 3.25, 40.0), Segment(-200, 1 << 62, -4_987.0, 3.5, 41.0)))
    b = TraceBuilder()
    b.add_clock("host0", reference=True)
    dev = b.add_clock("host0/device0")
    add_segments(b, dev, m)
    add_segments(b, dev, m, truth=True)
    write_capture(b.build(), tmp_path / "seg.h5")
    t = load_trace(tmp_path / "seg.h5")
    assert maps_of(t.tables["clock_segments"]) == {dev: m}
    assert maps_of(t.truth["truth_clock_segments"]) == {dev: m}
    plain = TraceBuilder()
    plain.add_clock("host0", reference=True)
    write_capture(plain.build(), tmp_path / "plain.h5")
    with h5py.File(tmp_path / "plain.h5") as f:
        assert "clock_segments" not in f and "truth_clock_segments" not in f.get("truth", {})
    assert len(load_trace(tmp_path / "plain.h5").tables["clock_segments"]) == 0


def test_a_stray_exchange_at_the_end_is_not_a_step() -> None:
    n = 640
    send = np.arange(n, dtype=np.int64) * 100_000
    recv = send + 1_000
    domain = send + 500 + 7 * S
    domain[-1] += 20_000  # the last exchange read late (preempted between the read and its stamp)
    recv[-1] = send[-1] + 900  # with the shortest round trip of all: it is kept
    fit = fit_clock(Brackets(send, domain, recv), asymmetry_ns=100.0)
    assert len(fit.map) == 1 and fit.steps == ()
