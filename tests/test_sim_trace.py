"""The capture a simulated run produces: determinism, truth, counters vs slices, flows, clocks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from accelview.capture import sim
from accelview.capture.sim.llm import MODELS, decode_ops
from accelview.model import TrackKind
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture

SMALL = MODELS["8b"].__class__(hidden=1024, layers=2, heads=8, kv_heads=2, head_dim=128, intermediate=4096,
                               vocab=32000)


def _run(seed: int = 0, spec: str = "gen5x16-141g", steps: int = 2):
    with sim.session(spec, seed=seed, counter_period_ns=5_000) as s:
        dev = sim.device(0)
        w = dev.alloc(64 << 20, "int8")
        st = dev.stream()
        dev.copy(w, sim.host_buffer(64 << 20, "int8"), stream=st)  # weights upload
        dev.default_stream.wait_event(st.record_event())
        for step in range(steps):
            for name, kind, shapes in decode_ops(SMALL, 1, 128 + step):
                dev.launch(kind, name=name, **shapes)
            dev.synchronize()  # a host sync between steps
        out = sim.host_buffer(SMALL.vocab * 2, "int8", pinned=False)
        dev.copy(out, dev.alloc(SMALL.vocab * 2, "int8"))
    return s, s.trace()


@pytest.fixture(scope="module")
def run():
    return _run()


def _tracks(trace, kind: TrackKind) -> list[int]:
    return [i for i in range(len(trace.tracks)) if trace.tracks.kind[i] == kind]


def _slices_on(trace, tracks: list[int]) -> np.ndarray:
    return np.flatnonzero(np.isin(trace.slices.track, tracks))


def test_the_capture_is_consistent(run) -> None:
    _, trace = run
    assert trace.self_check() == []
    assert trace.metadata["capture"]["simulator"] is True
    assert trace.metadata["device_spec"]["hbm_bytes_per_s"] == pytest.approx(4.8e12)


def test_counters_come_in_track_then_time_order_as_the_writer_promises(run) -> None:
    # the writer hands its counters over as ordered: the builder does not sort or check them
    _, trace = run
    track, ts = trace.counters.track, trace.counters.ts_ns
    assert len(track) > 1000
    assert np.all((track[1:] > track[:-1]) | ((track[1:] == track[:-1]) & (ts[1:] >= ts[:-1])))


def test_same_seed_same_capture_other_seed_differs(run) -> None:
    _, trace = run
    _, again = _run(seed=0)
    assert trace.strings.strings() == again.strings.strings()
    for name, table in trace.tables.items():
        assert table.equals(again.tables[name]), name
    for name, table in trace.truth.items():
        assert table.equals(again.truth[name]), name
    _, other = _run(seed=1)
    assert not trace.slices.equals(other.slices)


def test_every_op_slice_has_its_true_limiter(run) -> None:
    _, trace = run
    ops = _slices_on(trace, _tracks(trace, TrackKind.EXEC_UNIT))
    truth = trace.truth["truth_ops"]
    assert sorted(truth.slice.tolist()) == ops.tolist()
    limiters = Counter(trace.strings[i] for i in truth.limiter)
    assert set(limiters) <= {"compute", "memory", "latency"}
    assert limiters["memory"] > 0 and limiters["latency"] > 0


def test_every_idle_interval_has_a_true_cause(run) -> None:
    _, trace = run
    ops = _slices_on(trace, _tracks(trace, TrackKind.EXEC_UNIT))
    start = trace.slices.start_ns[ops]
    end = start + trace.slices.dur_ns[ops]
    order = np.argsort(start, kind="stable")
    gaps, busy = [], end[order[0]]
    for i in order[1:]:
        if start[i] > busy:
            gaps.append((int(busy), int(start[i])))
        busy = max(busy, end[i])
    idle = trace.truth["truth_idle"]
    assert list(zip(idle.start_ns.tolist(), idle.end_ns.tolist(), strict=True)) == gaps
    causes = Counter(trace.strings[i] for i in idle.cause)
    assert set(causes) <= {"host", "pcie", "sync"}
    assert causes["sync"] >= 1  # the device waited across each host synchronize
    assert causes["host"] >= 1  # and for small launches


def test_idle_causes_of_plain_scenarios() -> None:
    def causes(body) -> Counter:
        with sim.session("gen5x16-141g") as s:
            body(sim.device(0))
        trace = s.trace()
        return Counter(trace.strings[i] for i in trace.truth["truth_idle"].cause)

    def launch_bound(dev) -> None:
        for _ in range(50):
            dev.launch("elementwise", elements=1024)

    def sync_heavy(dev) -> None:
        for _ in range(20):
            dev.launch("gemm", m=512, n=512, k=512)
            dev.synchronize()

    def waits_for_pcie(dev) -> None:
        w = dev.alloc(32 << 20, "int8")
        dev.launch("gemm", m=512, n=512, k=512)
        dev.copy(w, sim.host_buffer(32 << 20, "int8"), stream=dev.default_stream)
        dev.launch("gemm", m=512, n=512, k=512)

    assert set(causes(launch_bound)) == {"host"}
    assert set(causes(sync_heavy)) == {"sync"}
    assert causes(waits_for_pcie) == Counter({"pcie": 1})


def _counter_total(trace, name: str) -> float:
    tracks = [i for i in range(len(trace.tracks)) if trace.track_name(i).endswith(name)]
    assert len(tracks) == 1, name
    return float(trace.counter_series(tracks[0])[1].sum())


def test_counters_add_up_to_the_slices(run) -> None:
    s, trace = run
    dev = s.device(0)
    ops = [c for c in dev.engine.finished if c.kind == "op"]
    copies = [c for c in dev.engine.finished if c.kind == "copy"]
    moved = {d: sum(c.job.nbytes for c in copies if c.direction == d) for d in ("h2d", "d2h")}
    hbm_read = sum(c.cost.dram_read_bytes for c in ops) + moved["d2h"]
    hbm_write = sum(c.cost.dram_write_bytes for c in ops) + moved["h2d"]
    assert _counter_total(trace, "HBM read bytes") == pytest.approx(hbm_read, rel=1e-9)
    assert _counter_total(trace, "HBM write bytes") == pytest.approx(hbm_write, rel=1e-9)
    h2d_wire = sum(c.job.data_wire_bytes for c in copies if c.direction == "h2d") + sum(
        c.job.reverse_wire_bytes for c in copies if c.direction == "d2h")
    assert _counter_total(trace, "PCIe H2D bytes") == pytest.approx(h2d_wire, rel=1e-9)
    for d, other in (("h2d", "d2h"), ("d2h", "h2d")):
        tlps = sum(c.job.data_tlps for c in copies if c.direction == d) + sum(
            c.job.reverse_tlps for c in copies if c.direction == other)
        assert _counter_total(trace, f"PCIe {d.upper()} TLPs") == pytest.approx(tlps, rel=1e-9)
    d2h_wire = sum(c.job.data_wire_bytes for c in copies if c.direction == "d2h") + sum(
        c.job.reverse_wire_bytes for c in copies if c.direction == "h2d")
    assert _counter_total(trace, "PCIe D2H bytes") == pytest.approx(d2h_wire, rel=1e-9)
    assert any(c.direction == "d2h" for c in copies) and any(c.direction == "h2d" for c in copies)
    # the per-op counters in the slice args agree with the sampled HBM bytes
    op_rows = _slices_on(trace, _tracks(trace, TrackKind.EXEC_UNIT))
    args_read = sum(trace.slice_args(i)["hbm_read_bytes"] for i in op_rows.tolist())
    assert args_read == sum(c.cost.dram_read_bytes for c in ops)
    period = s.counter_period_ns
    busy_ns = _counter_total(trace, "matrix busy") / 100 * period
    matrix = _tracks(trace, TrackKind.EXEC_UNIT)[0]
    assert trace.track_name(matrix) == "matrix"
    assert busy_ns == pytest.approx(trace.slices.dur_ns[_slices_on(trace, [matrix])].sum(), rel=1e-3)


def test_flows_link_calls_submissions_execution_and_transfers(run) -> None:
    _, trace = run
    src, dst = trace.flows.src, trace.flows.dst
    succ = {}
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        succ.setdefault(a, []).append(b)
    kind_of = trace.tracks.kind[trace.slices.track]
    api = np.flatnonzero(kind_of == TrackKind.RUNTIME_API)
    names = [trace.strings[trace.slices.name[i]] for i in api]
    launches = [i for i, n in zip(api, names, strict=True) if n.startswith("launch")]
    copies = [i for i, n in zip(api, names, strict=True) if n == "copy"]
    assert launches and copies
    for call in launches:
        (sub,) = succ[call]
        assert kind_of[sub] == TrackKind.DRIVER_QUEUE
        (op,) = succ[sub]
        assert kind_of[op] == TrackKind.EXEC_UNIT
        assert trace.slices.correlation[op] == trace.slices.correlation[call]
    for call in copies:
        for sub in succ[call]:
            (dma,) = succ[sub]
            assert kind_of[dma] == TrackKind.DMA_ENGINE
            (pcie,) = succ[dma]
            assert kind_of[pcie] == TrackKind.PCIE


def test_device_clock_is_estimated_from_sync_samples(run) -> None:
    _, trace = run
    clocks, truth = trace.tables["clocks"], trace.truth["truth_clocks"]
    assert clocks.reference.tolist() == [1, 0]
    assert len(trace.tables["clock_samples"]) >= 16
    (true_offset,), (true_drift,) = truth.offset_ns, truth.drift_ppm
    assert abs(true_drift) <= 30
    # over the capture, the estimate maps device time to host time within its error bound
    t0, t1 = trace.time_bounds()
    for t in (t0, t1):
        dev_ns = true_offset + t * (1 + true_drift * 1e-6)
        est = (dev_ns - clocks.offset_ns[1]) / (1 + clocks.drift_ppm[1] * 1e-6)
        assert abs(est - t) < clocks.error_ns[1] < 2_000
    # device work starts after the host submitted it, as seen on the aligned timeline
    sub = _slices_on(trace, _tracks(trace, TrackKind.DRIVER_QUEUE))
    ops = _slices_on(trace, _tracks(trace, TrackKind.EXEC_UNIT))
    first_sub, first_op = trace.slices.start_ns[sub].min(), trace.slices.start_ns[ops].min()
    assert first_op > first_sub


def test_the_capture_round_trips_through_hdf5(run, tmp_path: Path) -> None:
    _, trace = run
    path = tmp_path / "sim.h5"
    write_capture(trace, path)
    back = load_capture(path)
    assert back.slices.equals(trace.slices)
    assert back.truth["truth_idle"].equals(trace.truth["truth_idle"])


@pytest.mark.parametrize("host_start_ns", [None, 30 * 10**15])  # this host's clock; a year of uptime
def test_several_devices_and_measured_host_time(host_start_ns: int | None) -> None:
    s = sim.Simulator("gen4x16-64g", devices=2, deterministic=False, seed=5, host_start_ns=host_start_ns)
    for i in range(2):
        dev = s.device(i)
        dev.copy(dev.alloc(1 << 24, "int8"), s.host_buffer(1 << 24, "int8"))
        dev.copy(dev.alloc(1 << 24, "int8"), s.host_buffer(1 << 24, "int8", pinned=False))
        for _ in range(5):
            dev.launch("gemm", m=64, n=4096, k=4096)
        dev.synchronize()
    trace = s.trace()
    assert trace.self_check() == []
    devices = _tracks(trace, TrackKind.DEVICE)
    assert sorted(trace.tracks.device[devices].tolist()) == [0, 1]
    assert len(trace.tables["clocks"]) == 3 and len(trace.truth["truth_clocks"]) == 2
    ops = _slices_on(trace, _tracks(trace, TrackKind.EXEC_UNIT))
    assert len(ops) == 10 and len(trace.truth["truth_ops"]) == 10
    assert trace.metadata["capture"]["deterministic"] is False
