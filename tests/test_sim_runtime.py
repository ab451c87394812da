"""The runtime API and the event-driven device: copies, streams, events, queues, host time."""

from __future__ import annotations

import dataclasses
import time

import pytest
from accelview.capture import sim
from accelview.capture.sim.device.pcie import Link
from accelview.capture.sim.device.transfer import plan_transfer

MiB = 1 << 20


def _copy_time(spec: str, nbytes: int, direction: str, pinned: bool) -> float:
    with sim.session(spec) as s:
        dev = sim.device(0)
        d, h = dev.alloc(nbytes, "int8"), sim.host_buffer(nbytes, "int8", pinned=pinned)
        t0 = s.clock.now
        dev.copy(d, h) if direction == "h2d" else dev.copy(h, d)
        return s.clock.now - t0


@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_a_lone_copy_runs_as_the_transfer_model_plans(direction: str) -> None:
    spec = sim.load_spec("gen4x16-64g")
    for pinned in (True, False):
        took = _copy_time("gen4x16-64g", 64 * MiB, direction, pinned)
        plan = plan_transfer(spec, 64 * MiB, direction, pinned)
        overhead = spec.host.copy_api_ns + spec.timing.doorbell_ns + spec.timing.interrupt_ns
        assert took == pytest.approx(plan.end_ns + overhead, rel=0.01)


def test_large_pinned_copy_reaches_bulk_bandwidth_and_pageable_is_slower() -> None:
    spec = sim.load_spec("gen5x16-141g")
    pinned = _copy_time("gen5x16-141g", 512 * MiB, "h2d", True)
    pageable = _copy_time("gen5x16-141g", 512 * MiB, "h2d", False)
    assert 512 * MiB / (pinned * 1e-9) == pytest.approx(Link.from_spec(spec).bulk_bandwidth("h2d"), rel=0.05)
    assert pageable > 2 * pinned
    assert _copy_time("gen5x16-141g", 4096, "h2d", True) < 10_000  # a 4 KiB copy: microseconds of latency


def test_concurrent_copies_share_a_direction_but_not_the_other() -> None:
    with sim.session("gen5x16-141g") as s:
        dev = sim.device(0)
        a, b = dev.stream(), dev.stream()
        bufs = [(dev.alloc(256 * MiB, "int8"), sim.host_buffer(256 * MiB, "int8")) for _ in range(2)]
        dev.copy(bufs[0][0], bufs[0][1], stream=a)
        dev.copy(bufs[1][0], bufs[1][1], stream=b)
        dev.synchronize()
        same = [c for c in dev.engine.finished if c.kind == "copy"]
        dev.copy(bufs[0][0], bufs[0][1], stream=a)
        dev.copy(bufs[1][1], bufs[1][0], stream=b)  # the other direction
        dev.synchronize()
        both = [c for c in dev.engine.finished if c.kind == "copy"][2:]
    alone = plan_transfer(s.spec, 256 * MiB, "h2d").end_ns
    assert all(c.end_ns - c.start_ns == pytest.approx(2 * alone, rel=0.02) for c in same)
    assert any(sharers == 2 for c in same for *_, sharers in c.segments)
    assert both[0].end_ns - both[0].start_ns == pytest.approx(alone, rel=0.02)
    # while they share the link, each engine waits for credits half the time
    shared_ns = sum(t1 - t0 for c in same for t0, t1, _, n in c.segments if n == 2)
    trace = s.trace()
    names = [trace.track_name(i) for i in range(len(trace.tracks))]
    (stall,) = [i for i, n in enumerate(names) if n.endswith("PCIe H2D credit stall cycles")]
    expected = shared_ns * 0.5 * s.spec.clock_hz * 1e-9
    assert trace.counter_series(stall)[1].sum() == pytest.approx(expected, rel=1e-6)


def test_units_overlap_across_streams_and_events_order_them() -> None:
    with sim.session("gen5x16-141g") as s:
        dev = sim.device(0)
        a, b = dev.stream(), dev.stream()
        dev.launch("gemm", stream=a, m=4096, n=4096, k=4096)
        dev.launch("elementwise", stream=b, elements=1 << 26)  # vector unit: runs alongside
        dev.launch("gemm", stream=b, m=4096, n=4096, k=4096)  # matrix unit busy: waits for it
        ev = a.record_event()
        c = dev.stream()
        c.wait_event(ev)
        dev.launch("rmsnorm", stream=c, tokens=8, hidden=4096)
        dev.synchronize()
    g1, ew, g2, norm = _ops(dev)
    assert ew.start_ns < g1.end_ns  # overlap on different units
    assert g2.start_ns >= g1.end_ns  # one matrix unit
    assert norm.start_ns >= g1.end_ns  # ordered by the event
    assert norm.cause == "sync"
    assert s.clock.now >= max(x.end_ns for x in (g1, ew, g2, norm))


def _ops(dev: sim.Device) -> list:
    order = {"gemm": [], "elementwise": [], "rmsnorm": []}
    for c in dev.engine.finished:
        if c.kind == "op":
            order[c.name].append(c)
    g = sorted(order["gemm"], key=lambda c: c.start_ns)
    return [g[0], order["elementwise"][0], g[1], order["rmsnorm"][0]]


def test_host_waits_advance_time_virtually() -> None:
    wall = time.perf_counter()
    with sim.session("gen4x8-24g") as s:
        dev = sim.device(0)
        for _ in range(12):  # 12 x ~0.09 s of device time
            dev.launch("gemm", m=16384, n=16384, k=16384)
        dev.synchronize()
        assert dev.engine.pending() == 0
        last = max(c.end_ns for c in dev.engine.finished)
        assert s.clock.now >= last + dev.spec.timing.interrupt_ns
    assert s.clock.now - s.clock.start_ns > 1e9  # more than a second of host time...
    assert time.perf_counter() - wall < 0.5  # ...in a fraction of it


def test_a_full_ring_blocks_the_host() -> None:
    spec = sim.load_spec("gen5x16-141g")
    small = dataclasses.replace(spec, host=dataclasses.replace(spec.host, queue_depth=4))
    with sim.session(small) as s:
        dev = sim.device(0)
        for _ in range(12):
            dev.launch("gemm", m=4096, n=4096, k=4096)
        launches = [c for c in s.log.calls if c.name.startswith("launch")]
        finished = sorted(c.end_ns for c in dev.engine.finished)
    assert launches[3].end_ns - launches[3].start_ns == pytest.approx(spec.host.launch_api_ns)
    blocked = launches[4]
    assert blocked.end_ns - blocked.start_ns > 10 * spec.host.launch_api_ns
    assert blocked.end_ns >= finished[0]
    assert s.log.waits


def test_deterministic_sessions_model_host_time() -> None:
    with sim.session("gen5x16-141g") as s:
        dev = sim.device(0)
        dev.launch("rmsnorm", tokens=1, hidden=4096)
        time.sleep(0.01)  # script time does not count in deterministic mode
        dev.launch("rmsnorm", tokens=1, hidden=4096)
    first, second = s.log.calls[:2]
    assert second.start_ns == first.end_ns
    with sim.session("gen5x16-141g", deterministic=False) as s:
        dev = sim.device(0)
        dev.launch("rmsnorm", tokens=1, hidden=4096)
        time.sleep(0.01)
        dev.launch("rmsnorm", tokens=1, hidden=4096)
    first, second = s.log.calls[:2]
    assert second.start_ns - first.end_ns >= 9_000_000


def test_module_api_uses_the_current_session() -> None:
    sim.reset()
    with sim.session("gen4x8-24g", devices=2) as s:
        assert sim.current() is s and sim.device_count() == 2
        assert sim.device(1).spec.name == "gen4x8-24g"
        with pytest.raises(ValueError, match="no device 2"):
            sim.device(2)
    assert sim.current() is not s  # a fresh default session outside the block
    sim.reset()


def test_bad_session_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="devices must be at least 1"):
        sim.Simulator(devices=0)
    with pytest.raises(ValueError, match="counter_period_ns must be positive"):
        sim.Simulator(counter_period_ns=0)
    with pytest.raises(ValueError, match="no-such: no such device preset"):
        sim.Simulator("no-such")


def test_misuse_is_reported() -> None:
    with sim.session("gen4x8-24g", devices=2):
        dev, other = sim.device(0), sim.device(1)
        with pytest.raises(MemoryError, match="cannot allocate"):
            dev.alloc((30 << 30,), "int8")
        a = dev.alloc(1024, "bf16")
        with pytest.raises(ValueError, match="cannot copy 2048 B from a 2048 B source into a 20 B dest"):
            dev.copy(sim.host_buffer(10, "bf16"), a)
        with pytest.raises(ValueError, match="cannot copy 4096 B"):
            dev.copy(a, sim.host_buffer(10 << 10, "bf16"), nbytes=4096)
        dev.copy(a, sim.host_buffer(10 << 10, "bf16"), nbytes=2048)
        with pytest.raises(ValueError, match="host-to-host"):
            dev.copy(sim.host_buffer(10), sim.host_buffer(10))
        with pytest.raises(ValueError, match="lives on device 1"):
            dev.copy(other.alloc(10), sim.host_buffer(10))
        with pytest.raises(ValueError, match="another device"):
            dev.stream().wait_event(other.stream().record_event())
        with pytest.raises(ValueError, match="unknown op"):
            dev.launch("conv2d", n=1)
        with pytest.raises(ValueError, match="unknown dtype"):
            sim.host_buffer(4, "complex-ish")


def test_memory_bound_ops_on_different_units_share_hbm() -> None:
    def run(matrix: bool, vector: bool):
        with sim.session("gen5x16-141g") as s:
            dev = sim.device(0)
            a, b = dev.stream(), dev.stream()
            if matrix:
                dev.launch("gemm", stream=a, m=1, n=28672, k=4096)  # a decode projection: memory-bound
            if vector:
                dev.launch("elementwise", stream=b, elements=1 << 26, inputs=2)
            dev.synchronize()
        return s, {c.name: c for c in dev.engine.finished if c.kind == "op"}

    _, alone_m = run(True, False)
    _, alone_v = run(False, True)
    s, both = run(True, True)
    gemv, ew = both["gemm"], both["elementwise"]
    body = alone_m["gemm"].cost.body_ns + alone_v["elementwise"].cost.body_ns
    assert gemv.end_ns - gemv.start_ns > 1.5 * (alone_m["gemm"].end_ns - alone_m["gemm"].start_ns)
    assert max(gemv.end_ns, ew.end_ns) - min(gemv.start_ns, ew.start_ns) == pytest.approx(body, rel=0.05)
    trace = s.trace()
    names = [trace.track_name(i) for i in range(len(trace.tracks))]
    hbm = [i for i, n in enumerate(names) if "HBM" in n and "bytes" in n]
    per_window = sum(trace.counter_series(i)[1] for i in hbm)
    capacity = s.spec.hbm_bytes_per_s * 1e-9 * s.spec.memory.efficiency_sequential * s.counter_period_ns
    assert per_window.max() <= capacity * (1 + 3 * s.spec.timing.jitter)
    rows = [r for r in range(len(trace.slices)) if trace.strings[trace.slices.name[r]] == "gemm"]
    args = trace.slice_args(rows[0])
    cycles = trace.slices.dur_ns[rows[0]] * s.spec.clock_hz * 1e-9
    assert args["elapsed_cycles"] == pytest.approx(cycles, rel=1e-3)
