"""The streaming tracer in-process: collector → wire frames → ingest → HDF5, against the whole-run writer."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from accelview.capture.protocol import wire
from accelview.capture.protocol.config import CaptureConfig
from accelview.capture.service.collector import RecordSink
from accelview.capture.service.ingest import Ingest
from accelview.capture.sim.runtime import api
from accelview.capture.tracer.recorder import traced_simulator
from accelview.model import Trace, TrackKind
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import CaptureWriter


def _script(dev_count: int = 1) -> None:
    """Launches, pinned and pageable copies both ways, two streams, an event and graph replays."""
    dev = api.device(0)
    w = dev.alloc((2048, 2048), "bf16")
    pinned = api.host_buffer((2048, 2048), "bf16", pinned=True)
    pageable = api.host_buffer((2048, 2048), "bf16", pinned=False)
    side = dev.stream()
    for i in range(12):
        dev.copy(w, pinned if i % 2 else pageable, stream=side)
        dev.default_stream.wait_event(side.record_event())
        dev.launch("gemm", m=64, n=2048, k=2048, name=f"gemm {i}")
        dev.launch("rmsnorm", tokens=64, hidden=2048)
        if i % 3 == 0:
            dev.copy(pageable, w)
    with dev.graph("step") as g:
        dev.launch("gemm", m=64, n=2048, k=2048, name="step.gemm")
        dev.launch("attention", batch=1, heads=8, kv_heads=2, head_dim=128, q_len=1, kv_len=256, name="step.attn")
        dev.launch("rmsnorm", tokens=64, hidden=2048, name="step.norm")
    for kv_len in (256, 4096, 8192):
        g.launch(kv_len=kv_len)
    dev.synchronize()


def _streamed(tmp_path: Path, script=_script, **cfg) -> tuple[Trace, Ingest]:
    """Run ``_script`` under the collector, frames through the wire into a capture file."""
    reader, path = wire.FrameReader(), tmp_path / "s.h5"
    ingest = Ingest(CaptureWriter(path))
    sink = RecordSink(ingest.handle)

    def send(kind, meta, cols):
        for frame in reader.feed(b"".join(wire.encode(kind, meta, cols))):
            sink.handle(*frame)

    col = traced_simulator(CaptureConfig(deterministic=True, **cfg), send)
    api._stack.append(col.sim)
    try:
        script()
    finally:
        api._stack.remove(col.sim)
    col.finish(0)
    ingest.close(True, "")
    return load_capture(path), ingest


def _whole_run(script=_script) -> Trace:
    with api.session(seed=0) as s:
        script()
    return s.trace()


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Trace, Trace]:
    streamed, _ = _streamed(tmp_path_factory.mktemp("stream"), flush_events=7)
    return streamed, _whole_run()


def _by_track(trace: Trace) -> Counter:
    names = [trace.track_name(int(t)) for t in trace.slices.track]
    return Counter(zip(names, (trace.strings[int(c)] for c in trace.slices.category), strict=True))


def assert_same_records(streamed: Trace, whole: Trace) -> None:
    """The slices per track, flows, instants, truth rows and host times a streamed capture
    shares with the whole-run capture of the same deterministic session."""
    assert streamed.self_check() == []
    assert _by_track(streamed) == _by_track(whole)
    assert len(streamed.flows) == len(whole.flows)
    assert len(streamed.instants) == len(whole.instants)
    assert len(streamed.truth["truth_ops"]) == len(whole.truth["truth_ops"])
    assert len(streamed.truth["truth_idle"]) == len(whole.truth["truth_idle"])

    def causes(trace: Trace) -> Counter:
        return Counter(trace.strings[int(c)] for c in trace.truth["truth_idle"].cause)

    assert causes(streamed) == causes(whole)
    host = streamed.tracks.kind[streamed.slices.track] <= TrackKind.DRIVER_QUEUE  # host clock: identical times
    whole_host = whole.tracks.kind[whole.slices.track] <= TrackKind.DRIVER_QUEUE
    assert np.array_equal(np.sort(streamed.slices.start_ns[host]), np.sort(whole.slices.start_ns[whole_host]))


def test_streamed_capture_has_the_same_records_as_the_whole_run(pair) -> None:
    assert_same_records(*pair)


def assert_same_counter_totals(streamed: Trace, whole: Trace) -> None:
    """Each counter track's samples add up to what they do in the whole-run capture."""

    def totals(trace: Trace) -> dict[str, float]:
        out: dict[str, float] = {}
        for t in np.unique(trace.counters.track):
            out[trace.track_name(int(t))] = float(trace.counter_series(int(t))[1].sum())
        return out

    a, b = totals(streamed), totals(whole)
    assert set(a) == set(b)
    for name in b:
        assert a[name] == pytest.approx(b[name], rel=1e-9, abs=1e-6), name


def test_streamed_counters_add_up_like_the_whole_run(pair) -> None:
    assert_same_counter_totals(*pair)


def _op_details(trace: Trace) -> dict[tuple[int, str], dict]:
    """Each op slice's arguments and counters (call sites aside), by (correlation, name)."""
    ops = np.flatnonzero(trace.slices.category == trace.strings.lookup("op"))
    out = {}
    for i in ops.tolist():
        args = {k: v for k, v in trace.slice_args(i).items() if k not in ("site", "function")}
        out[(int(trace.slices.correlation[i]), trace.strings[int(trace.slices.name[i])])] = args
    return out


def assert_same_op_details(streamed: Trace, whole: Trace) -> None:
    """Every op carries the same arguments and hardware counters as in the whole-run capture."""
    a, b = _op_details(streamed), _op_details(whole)
    assert len(a) == len(b) > 20
    assert a == b


def test_streamed_ops_carry_the_same_arguments_and_counters_as_the_whole_run(pair) -> None:
    assert_same_op_details(*pair)


def test_idle_gaps_the_host_waited_through_are_blamed_on_the_sync_as_in_the_whole_run(tmp_path) -> None:
    def syncs() -> None:  # a host synchronize after every op (the sync-heavy workload)
        dev = api.device(0)
        for i in range(60):
            dev.launch("gemm", m=256 + i % 3, n=256, k=256)
            dev.synchronize()

    streamed, _ = _streamed(tmp_path, syncs, flush_events=9)
    whole = _whole_run(syncs)

    def causes(trace: Trace) -> Counter:
        return Counter(trace.strings[int(c)] for c in trace.truth["truth_idle"].cause)

    assert causes(streamed) == causes(whole)
    assert causes(whole)["sync"] >= 50


def test_every_launch_and_copy_is_linked_call_submission_execution_transfer(pair) -> None:
    trace, _ = pair
    succ: dict[int, list[int]] = {}
    for a, b in zip(trace.flows.src.tolist(), trace.flows.dst.tolist(), strict=True):
        succ.setdefault(a, []).append(b)
    kind_of = trace.tracks.kind[trace.slices.track]
    api_rows = np.flatnonzero(kind_of == TrackKind.RUNTIME_API)
    names = [trace.strings[int(trace.slices.name[i])] for i in api_rows]
    launches = [i for i, n in zip(api_rows, names, strict=True) if n.startswith("launch")]
    copies = [i for i, n in zip(api_rows, names, strict=True) if n == "copy"]
    assert len(launches) == 24 + 3 and len(copies) == 16
    for call in launches:
        (sub,) = succ[call]
        assert kind_of[sub] == TrackKind.DRIVER_QUEUE
        ops = succ[sub]
        assert len(ops) == (3 if trace.strings[int(trace.slices.name[call])].startswith("launch graph") else 1)
        for op in ops:
            assert kind_of[op] == TrackKind.EXEC_UNIT
            assert trace.slices.correlation[op] == trace.slices.correlation[call] == trace.slices.correlation[sub]
    for call in copies:
        assert succ[call]
        for sub in succ[call]:
            (dma,) = succ[sub]
            assert kind_of[dma] == TrackKind.DMA_ENGINE
            (pcie,) = succ[dma]
            assert kind_of[pcie] == TrackKind.PCIE
            assert trace.slices.correlation[pcie] == trace.slices.correlation[call]


def test_device_clock_estimate_is_close_to_the_truth(pair) -> None:
    trace, _ = pair
    clocks, truth = trace.tables["clocks"], trace.truth["truth_clocks"]
    assert len(clocks) == 2 and clocks.reference[0] == 1
    assert len(trace.tables["clock_samples"]) >= 16
    (true_offset,), (true_drift,) = truth.offset_ns, truth.drift_ppm
    t0, t1 = trace.time_bounds()
    for t in (t0, t1):  # over the capture, the final estimate maps device time to host time within its bound
        dev_ns = true_offset + t * (1 + true_drift * 1e-6)
        est = (dev_ns - clocks.offset_ns[1]) / (1 + clocks.drift_ppm[1] * 1e-6)
        assert abs(est - t) < clocks.error_ns[1] < 2_000


def test_a_full_device_ring_drops_records_and_counts_them(tmp_path) -> None:
    trace, ingest = _streamed(tmp_path, flush_events=1000, ring_records=5)
    whole = _whole_run()
    device = lambda t: t.tracks.kind[t.slices.track] >= TrackKind.PCIE  # noqa: E731
    dropped = trace.metadata["capture"]["dropped_total"]
    assert dropped > 0 and trace.metadata["capture"]["dropped_records"] == ingest.dropped
    whole_dev = whole.tracks.kind[whole.slices.track]
    records = int(np.isin(whole_dev, (TrackKind.DMA_ENGINE, TrackKind.EXEC_UNIT)).sum())
    kept = int(np.isin(trace.tracks.kind[trace.slices.track], (TrackKind.DMA_ENGINE, TrackKind.EXEC_UNIT)).sum())
    assert device(trace).sum() < device(whole).sum()
    assert kept + dropped == records + len(whole.instants) - len(trace.instants)


def test_frames_round_trip_and_a_cut_frame_is_held_back() -> None:
    cols = {"a": np.arange(5, dtype=np.int64), "b": np.linspace(0, 1, 5)}
    data = b"".join(wire.encode(wire.ROWS, {"table": "x"}, cols)) + b"".join(wire.encode(wire.END, {"exit_code": 3}))
    reader = wire.FrameReader()
    frames = list(reader.feed(data[:-4]))
    assert len(frames) == 1 and reader.pending > 0
    kind, meta, got = frames[0]
    assert kind == wire.ROWS and meta["table"] == "x"
    assert np.array_equal(got["a"], cols["a"]) and np.array_equal(got["b"], cols["b"])
    ((kind, meta, _),) = list(reader.feed(data[-4:]))
    assert kind == wire.END and meta["exit_code"] == 3 and reader.pending == 0
