"""The converter's input, DeviceRecords: the whole run's adapter, its carries, and a service that
converts a stream without making a single engine object."""

from __future__ import annotations

import numpy as np
from accelview.capture.convert.records import DeviceRecords, concat, records_of
from accelview.capture.protocol import wire
from accelview.capture.protocol.config import CaptureConfig
from accelview.capture.service.collector import RecordSink
from accelview.capture.sim.device.command import Command
from accelview.capture.sim.device.costs import OpCost
from accelview.capture.sim.device.replay import GraphRun
from accelview.capture.sim.device.transfer import DmaJob
from accelview.capture.sim.runtime import api
from accelview.capture.tracer.recorder import traced_simulator


def _workload(dev) -> None:
    """Ops, pinned and pageable copies, an event, and two graph replays."""
    w = dev.alloc((256, 256), "bf16")
    side = dev.stream()
    for i in range(6):
        dev.copy(w, api.host_buffer((256, 256), "bf16", pinned=bool(i % 2)), stream=side)
        dev.default_stream.wait_event(side.record_event())
        dev.launch("gemm", m=8, n=256, k=256)
    with dev.graph("step") as g:
        dev.launch("gemm", m=1, n=256, k=256)
        dev.launch("attention", batch=1, heads=2, head_dim=64, q_len=1, kv_len=16)
    g.launch(kv_len=32)
    g.launch(kv_len=48)
    dev.synchronize()


def _commands() -> list[Command]:
    with api.session(seed=2) as s:
        _workload(s.device(0))
    return list(s.device(0).engine.finished)


def _ids(r: DeviceRecords) -> list[tuple[int, int]]:
    """(place in finishing order, cid) of every command."""
    return sorted([*zip(r.ops.seq.tolist(), r.ops.cid.tolist(), strict=True), *((x.seq, x.cid) for x in r.rare)])


def test_the_adapter_keeps_finishing_order_and_every_kind() -> None:
    cmds = _commands()
    r = records_of(cmds)
    assert _ids(r) == [(i, c.cid) for i, c in enumerate(cmds)]
    assert {x.kind for x in r.rare} == {"copy", "record", "wait", "graph"}
    assert r.records == sum(c.records for c in cmds) > len(cmds)  # a replay counts one record a node
    assert r.runs() == [(c.start_ns, c.end_ns, c.cause) for c in cmds if c.runs_ops]
    ops = [c for c in cmds if c.kind == "op"]
    assert [r.shapes[k].limiter for k in r.ops.shape.tolist()] == [c.cost.limiter for c in ops]
    assert np.array_equal(r.cost_columns().jitter, [c.cost.jitter for c in ops])


def test_carries_split_and_join_records_as_the_commands_would() -> None:
    cmds = _commands()
    whole = records_of(cmds)
    k = len(cmds) // 2
    joined = concat([records_of(cmds[:k]), records_of(cmds[k:])])
    assert _ids(joined) == _ids(whole) and joined.records == whole.records
    assert _ids(whole.head(k)) == _ids(records_of(cmds[:k]))
    cut = float(np.median([c.end_ns for c in cmds]))
    late = whole.ending_after(cut)
    assert _ids(late) == _ids(records_of([c for c in cmds if c.end_ns > cut]))
    assert _ids(whole) == [(i, c.cid) for i, c in enumerate(cmds)]  # the carry left the original alone


def test_the_service_converts_a_stream_without_making_engine_objects(monkeypatch) -> None:
    frames: list[tuple[bytes, dict, dict]] = []

    def send(kind: bytes, meta: dict, cols: dict | None) -> None:
        ((k, m, c),) = list(wire.FrameReader().feed(b"".join(wire.encode(kind, meta, cols or {}))))
        frames.append((k, m, c))

    rec = traced_simulator(CaptureConfig(deterministic=True, flush_events=20), send)
    _workload(rec.sim.device(0))
    rec.finish(0)
    assert sum(k == wire.RECORDS for k, _, _ in frames) >= 2  # several drains

    def refuse(self, *args, **kwargs) -> None:
        raise AssertionError(f"the service made a {type(self).__name__}")

    for cls in (Command, OpCost, DmaJob, GraphRun):
        monkeypatch.setattr(cls, "__init__", refuse)
    rows: list[str] = []
    sink = RecordSink(lambda kind, meta, cols: rows.append(meta.get("table", "")) if kind == wire.ROWS else None)
    for frame in frames:
        sink.handle(*frame)
    assert sink.lost_frames == 0, sink.error
    assert {"slices", "flows", "op_counters", "counters", "truth_idle"} <= set(rows)
