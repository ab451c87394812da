"""The cluster's simulated clocks: readings with drift, steps and ticks, a device clock on the true
timebase as the single-host DeviceClock has it, sync brackets that hold the truth, and the true
maps the alignment is measured against."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.capture.sim.clocks import ClusterClocks, NetworkPath, SimClock, pcie_read_samples, ptp_exchange
from accelview.capture.sim.clocks.cluster import REFERENCE
from accelview.capture.sim.device.clock import DeviceClock

S = 1_000_000_000


def test_reading_drifts_steps_and_ticks() -> None:
    c = SimClock(offset_ns=1_000, drift_ppm=20.0, tick_ns=10).with_step(5 * S, 300_000)
    t = np.array([0, S, 5 * S - 1, 5 * S])
    r = c.read(t)
    assert r[0] == 1_000 and r[1] == S + 1_000 + 20_000
    assert r[3] - r[2] == pytest.approx(300_000, abs=10)  # the step, to a tick
    assert (r % 10 == 0).all()
    reset = SimClock(5 * S, -3.0).with_reset(2 * S)
    assert reset.read(np.array([2 * S]))[0] == 0 and reset.read(np.array([3 * S]))[0] == S - 3_000
    with pytest.raises(ValueError):
        SimClock(0, 2000.0)


def test_device_clock_on_the_true_timebase() -> None:
    rng = np.random.default_rng(3)
    host = SimClock(2_000_000, 35.0)
    dc = DeviceClock.random(1_000_000_000, rng)
    dev = SimClock.of_device(dc, host)
    t = np.sort(rng.integers(0, 100 * S, 1000))
    assert np.abs(dev.read(t) - dc.device_ns(host.read(t))).max() <= 2


def test_brackets_hold_the_true_offset() -> None:
    rng = np.random.default_rng(4)
    host, dev = SimClock(0, 10.0), SimClock(7 * S, -25.0, jitter_ns=2000.0)
    b = pcie_read_samples(host, dev, 0, S, rng)
    assert len(b) == 1000 or len(b) == 999
    assert (b.parent_recv_ns - b.parent_send_ns >= 800).all()
    # The device was read between send and receive: its reading maps back inside the bracket.
    true_parent = (b.domain_ns - 7 * S) / (1 - 25e-6) * (1 + 10e-6)
    assert ((true_parent >= b.parent_send_ns - 60) & (true_parent <= b.parent_recv_ns + 60)).all()
    path = NetworkPath(asymmetry_ns=300.0)
    p = ptp_exchange(SimClock(0, 0.0), SimClock(5_000, 0.0), 0, S, rng, path=path)
    assert len(p) == 16
    mid_offset = p.domain_ns - (p.parent_send_ns + p.parent_recv_ns) / 2
    # the exchange sees the true offset shifted by half the path's asymmetry, plus queueing noise
    assert np.min(np.abs(mid_offset - 5_000 - 150)) < 2_000


def test_cluster_truth_maps_each_clock_onto_host0() -> None:
    c = ClusterClocks.random(3, 2, seed=1, seconds=10)
    assert [p for d, p in c.domains() if "/" not in d] == [REFERENCE, REFERENCE] and not c.hosts[0].steps
    assert sum(len(h.steps) for h in c.hosts) == 1 and sum(len(d.steps) for row in c.devices for d in row) == 1
    t = np.arange(0, 10 * S, 1_000_003)
    ref = c.hosts[0].read(t)
    for dom, _ in c.domains():
        m = c.true_map(dom, 10)
        raw = c.clock(dom).read(t)
        assert np.abs(m.to_ref(raw, m.segment_of(raw, in_order=True)) - ref).max() < 5, dom
    syncs = c.sync_samples(10, seed=1)
    assert {s.domain for s in syncs} == {d for d, _ in c.domains()}
    again = ClusterClocks.random(3, 2, seed=1, seconds=10).sync_samples(10, seed=1)
    assert all(np.array_equal(a.brackets.domain_ns, b.brackets.domain_ns) for a, b in zip(syncs, again, strict=True))
