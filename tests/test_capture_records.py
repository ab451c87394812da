"""Raw records from the profiled child to the service: packing, the wire, unpacking, and a bad frame."""

from __future__ import annotations

import inspect
import math
import time
from collections import Counter

import numpy as np
import pytest
from accelview.capture.convert.records import DeviceRecords, records_of
from accelview.capture.protocol import wire
from accelview.capture.protocol.config import CaptureConfig
from accelview.capture.protocol.payloads import RecordUnpacker, pack
from accelview.capture.service.collector import RecordSink
from accelview.capture.sim.device.command import Command
from accelview.capture.sim.device.costs import op_cost
from accelview.capture.sim.device.ring import DeviceRing, Templates
from accelview.capture.sim.runtime import api
from accelview.capture.sim.runtime.drain import drain
from accelview.capture.sim.runtime.hostlog import HostLog
from accelview.capture.tracer.recorder import traced_simulator


class _KeptRing(DeviceRing):
    """A device's ring that also keeps each command it wrote down, to compare with what crossed."""

    __slots__ = ("kept",)

    def __init__(self, templates: Templates) -> None:
        super().__init__(templates)
        self.kept: list[Command] = []

    def append(self, c: Command) -> None:
        super().append(c)
        self.kept.append(c)


def _with_rings(s) -> tuple[list[_KeptRing], Templates]:
    templates = Templates()
    rings = [_KeptRing(templates) for _ in s.devices]
    for dev, ring in zip(s.devices, rings, strict=True):
        dev.engine.finished = ring
    return rings, templates


def _drain(s, rings: list[_KeptRing], final: bool = False) -> tuple:
    """A drain of the session, and the commands each device finished in it."""
    d = drain(s, final)
    kept = [r.kept[:] for r in rings]
    for r in rings:
        r.kept.clear()
    return d, kept


def _session_in_drains(every: int = 40, before_the_end=None) -> tuple[list, Templates]:
    """A session with ops, pinned and pageable copies, events, a graph replay and a phase,
    drained every ``every`` API calls (as the recorder does): (drain, commands per device) each."""
    drains = []
    with api.session(seed=3) as s:
        rings, templates = _with_rings(s)
        calls = [0]

        def record(*call) -> None:  # as the recorder does: the log's own record, then a drain when due
            HostLog.record(s.log, *call)
            calls[0] += 1
            if calls[0] % every == 0:
                drains.append(_drain(s, rings))

        s.log.record = record
        dev = s.device(0)
        w = dev.alloc((1024, 1024), "bf16")
        side = dev.stream()
        with api.annotate("phase"):
            for i in range(30):
                dev.copy(w, api.host_buffer((1024, 1024), "bf16", pinned=bool(i % 2)), stream=side)
                dev.default_stream.wait_event(side.record_event())
                dev.launch("gemm", m=8, n=1024, k=1024, name=f"gemm {i % 3}")
                dev.launch("rmsnorm", tokens=8, hidden=1024, weights=w)
        for _ in range(3):  # ops on two units at once share HBM: their bodies stretch, in several segments
            dev.launch("elementwise", stream=side, elements=1 << 24)
            dev.launch("gemm", m=1, n=8192, k=8192)
        with dev.graph("step") as g:
            dev.launch("gemm", m=1, n=1024, k=1024)
            dev.launch("attention", batch=1, heads=8, head_dim=128, q_len=1, kv_len=64)
        g.launch(kv_len=128)
        dev.copy(api.host_buffer((1024, 1024), "bf16", pinned=False), w)
        if before_the_end is not None:
            before_the_end(s)
    del s.log.record
    drains.append(_drain(s, rings, final=True))
    return drains, templates


def _through_the_wire(kind: bytes, meta: dict, cols: dict) -> tuple[dict, dict]:
    ((k, m, c),) = list(wire.FrameReader().feed(b"".join(wire.encode(kind, meta, cols))))
    assert k == kind
    return m, c


def _same(x, y) -> bool:
    return x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))


def _same_records(ours: list[Command], theirs: DeviceRecords) -> None:
    """What crossed the wire is what the whole run's adapter makes of the same commands."""
    a = records_of(ours)
    assert len(theirs) == len(a) and theirs.records == a.records
    for f in ("seq", "cid", "stream", "start", "end", "jitter"):
        assert np.array_equal(getattr(theirs.ops, f), getattr(a.ops, f)), f
    for f in ("name", "args", "cause", "segments"):
        assert getattr(theirs.ops, f) == getattr(a.ops, f), f
    assert [theirs.shapes[k] for k in theirs.ops.shape.tolist()] == [a.shapes[k] for k in a.ops.shape.tolist()]
    for x, y in zip(a.rare, theirs.rare, strict=True):
        for f in ("seq", "kind", "cid", "stream", "name", "args", "start_ns", "end_ns", "cause", "engine",
                  "direction", "data_start_ns", "data_end_ns", "segments", "job"):
            assert _same(getattr(x, f), getattr(y, f)), (f, getattr(x, f), getattr(y, f))
        assert (x.run is None) == (y.run is None)
        if x.run is not None:
            assert np.array_equal(y.run.end_off, x.run.end_off) and y.run.names == x.run.names


def test_every_record_arrives_as_it_was_recorded() -> None:
    drains, templates = _session_in_drains()
    assert len(drains) > 3
    unpacker = RecordUnpacker()
    kinds = set()
    for d, commands in drains:
        sites = list(range(len(d.calls)))
        meta, cols = pack(d, sites)
        assert meta.pop("events") == len(d) == d.n_calls + len(d.submission_names) + len(d.memcpys) + len(
            d.ranges) + sum(len(c.graph) if c.graph is not None else 1 for cmds in commands for c in cmds)
        meta, cols = _through_the_wire(wire.RECORDS, meta, cols)
        got, got_sites = unpacker.unpack(meta, cols)
        assert got_sites.tolist() == sites
        assert got.calls == d.calls and got.submissions == d.submissions
        assert got.memcpys == d.memcpys and [tuple(w) for w in got.waits] == d.waits
        assert got.ranges == d.ranges
        assert got.horizon_ns == d.horizon_ns and got.host_now_ns == d.host_now_ns
        for theirs, ours in zip(got.commands, commands, strict=True):
            _same_records(ours, theirs)
            kinds.update(c.kind for c in ours)
    assert kinds == {"op", "copy", "record", "wait", "graph"}
    segments = Counter(min(len(c.segments), 2) for _, commands in drains for cmds in commands for c in cmds
                       if c.kind == "op")
    assert segments[1] and segments[2]  # ops with one progress segment (packed) and with several (whole)
    assert len(unpacker.shapes) == len(templates.seen)  # each shape crossed once
    assert sorted(unpacker.shapes) == list(range(len(unpacker.shapes)))  # the runtime numbers shapes 0, 1, ...


def test_ops_whose_shape_was_not_cached_arrive_with_their_own_shapes() -> None:
    """An op made without the runtime's cost cache (shape -1) cannot refer to a shape's template:
    its shape crosses whole, and the service keeps it for that frame only."""
    uncached = []

    def three_uncached_ops(s) -> None:
        for m in (8, 16, 32):
            cid = s.next_cid()
            cmd = Command(cid, "op", 0, s.clock.now, s.clock.now, f"gemm m={m}", args={"m": m},
                          cost=op_cost(s.spec, "gemm", None, m=m, n=64, k=64))
            s.device(0).engine.submit(cmd)
            s.log.submit(0, 0, s.clock.now, s.clock.now, cmd.name, cid)
            uncached.append(cmd)

    drains, templates = _session_in_drains(before_the_end=three_uncached_ops)
    unpacker = RecordUnpacker()
    keys = {}
    for d, commands in drains:
        got, _ = unpacker.unpack(*_through_the_wire(wire.RECORDS, *pack(d)))
        for theirs, ours in zip(got.commands, commands, strict=True):
            _same_records(ours, theirs)
            keys.update(zip(theirs.ops.cid.tolist(), theirs.ops.shape.tolist(), strict=True))
    uncached_keys = {keys[c.cid] for c in uncached}
    assert len(uncached_keys) == 3 and max(uncached_keys) < 0  # each a key of its own
    assert all(n >= 0 for n in unpacker.shapes) and all(n >= 0 for n in templates.seen)
    assert templates.uncached == -4  # each of the three crossed under a number of its own


def test_a_bad_records_frame_is_skipped_and_reported_the_rest_is_kept() -> None:
    frames: list[bytes] = []
    sink = RecordSink(lambda kind, meta, cols: frames.append(kind))
    sink.handle(wire.RECORDS, {}, {})  # before any session: cannot be converted
    assert sink.lost_frames == 1 and "session" in sink.error
    sink.handle(wire.STATS, {"events": 1}, {})  # other frames still go through
    assert frames == [wire.STATS]


def test_call_sites_are_the_first_script_frame_whatever_the_depth() -> None:
    """The recorder remembers where on the stack a call's site was: calls of one name from other
    depths, other functions and other lines still get their own line."""
    frames: list[tuple[dict, dict]] = []
    config = CaptureConfig(deterministic=True, flush_events=5, call_sites=True)
    rec = traced_simulator(config, lambda kind, meta, cols: frames.append((meta, cols)) if kind == wire.RECORDS
                           else None)
    dev = rec.sim.device(0)
    here = inspect.currentframe().f_lineno  # the lines below are counted from here

    def nested() -> None:
        dev.launch("gemm", m=8, n=64, k=64)  # here + 3

    def sync() -> None:
        dev.synchronize()  # here + 6

    expected = []
    for _ in range(4):
        dev.launch("gemm", m=8, n=64, k=64)  # here + 10
        nested()
        dev.alloc(64)  # here + 12
        for f in (dev.synchronize, sync):
            f()  # here + 14 for the first, here + 6 for the second
        for f in (dev.synchronize, nested):  # one instruction, a runtime call and a script function
            f()  # here + 16 for the first, here + 3 for the second
        expected += [10, 3, 12, 14, 6, 16, 3]
    rec.finish(0)
    unpacker, lines, got = RecordUnpacker(), {}, []
    for meta, cols in frames:
        lines.update({site: where for site, where, _ in meta["sites"]})
        _, sites = unpacker.unpack(meta, cols)
        got += [lines[s] for s in sites.tolist()]
    assert got == [f"{__file__}:{here + n}" for n in expected]


def test_a_drain_is_due_at_the_first_call_after_flush_ms() -> None:
    """The timer thread makes the next call drain once ``flush_ms`` has passed, however few calls came."""
    frames: list[dict] = []
    config = CaptureConfig(flush_ms=5, flush_events=1_000_000)  # deterministic: no timer (test_deterministic)
    rec = traced_simulator(config, lambda kind, meta, cols: frames.append(meta) if kind == wire.RECORDS else None)
    dev = rec.sim.device(0)
    dev.launch("gemm", m=8, n=64, k=64)
    deadline = time.monotonic() + 10.0
    while not frames and time.monotonic() < deadline:  # each call after the timer fired drains
        time.sleep(0.02)
        dev.launch("gemm", m=8, n=64, k=64)
    assert frames and not frames[0]["final"]
    rec.finish(0)
    assert frames[-1]["final"] and frames[-1]["calls"] == rec.calls


@pytest.mark.parametrize("call_sites", [False, True])
def test_a_drain_is_due_every_flush_events_calls(call_sites) -> None:
    """With or without call sites (the hook counts waiting calls differently), every
    ``flush_events`` calls make one frame, and every call crosses once."""
    frames: list[tuple[dict, dict]] = []
    config = CaptureConfig(deterministic=True, flush_events=4, flush_ms=60_000, call_sites=call_sites)
    rec = traced_simulator(config, lambda kind, meta, cols: frames.append((meta, cols)) if kind == wire.RECORDS
                           else None)
    dev = rec.sim.device(0)
    for _ in range(10):
        dev.launch("gemm", m=8, n=64, k=64)
    assert [meta["calls"] for meta, _ in frames] == [4, 8]
    rec.finish(0)
    unpacker, names, sites = RecordUnpacker(), [], []
    for meta, cols in frames:
        d, got = unpacker.unpack(meta, cols)
        names += d.call_objects[0::2]
        sites += got.tolist()
    assert names == ["launch gemm"] * 10
    assert len(sites) == (10 if call_sites else 0) and all(s >= 0 for s in sites)


def test_a_script_stopped_between_a_submission_and_its_log_entry_loses_no_op() -> None:
    """A signal can stop the script after a command went to the device and before the host log
    has its submission (or its submission's name): the last drain still brings that op whole."""
    with api.session(seed=1) as s:
        _with_rings(s)
        dev = s.device(0)
        dev.launch("gemm", m=8, n=64, k=64)
        unpacker = RecordUnpacker()
        d = drain(s)
        unpacker.unpack(*_through_the_wire(wire.RECORDS, *pack(d, [0] * d.n_calls)))
        orphan = Command(9_999, "op", 0, s.clock.now, s.clock.now, "orphan",
                         cost=op_cost(s.spec, "gemm", s.rng, m=8, n=64, k=64), args={"op": "gemm"})
        dev.engine.submit(orphan)  # the device has it; the host log never will
        s.log.submission_ints.extend((0, 0, 1, 2, 9_998, -1))  # and a submission cut off before its name
        d = drain(s, final=True)
    meta, cols = pack(d, [], named=True)
    got, _ = unpacker.unpack(*_through_the_wire(wire.RECORDS, meta, cols))
    ops = got.commands[0].ops
    (i,) = np.flatnonzero(ops.cid == 9_999).tolist()
    assert (int(ops.stream[i]), ops.name[i], ops.jitter[i]) == (0, "orphan", orphan.cost.jitter)
    assert got.commands[0].shapes[int(ops.shape[i])] == records_of([orphan]).shapes[-1]  # costed outside the cache
    assert got.submissions == [] and not unpacker.submitted


def test_a_sigterm_inside_the_simulator_stops_the_script_once_its_call_is_recorded(monkeypatch) -> None:
    """Raised in the middle of an engine step, the stop would leave the device half-stepped (a
    deadlock in the last drain) or a call half-logged: the child's handler waits for the end of
    the API call it interrupted. In the script's own code it stops the script at once."""
    import signal
    import sys

    from accelview.capture.tracer import child

    frames: list[tuple[dict, dict]] = []
    rec = traced_simulator(CaptureConfig(deterministic=True, flush_ms=60_000),
                           lambda kind, meta, cols: frames.append((meta, cols)) if kind == wire.RECORDS else None)
    rec.after_drain = child._stop_after_drain
    monkeypatch.setattr(child, "_collectors", [rec])
    with pytest.raises(child.Terminated):
        child._on_sigterm(signal.SIGTERM, sys._getframe())  # the script's own frame: at once
    append = DeviceRing.append
    signalled = []

    def signal_while_an_op_finishes(self, c) -> None:
        if not signalled:
            signalled.append(c.name)
            child._on_sigterm(signal.SIGTERM, sys._getframe(1))  # the engine's frame, mid-step
        append(self, c)

    monkeypatch.setattr(DeviceRing, "append", signal_while_an_op_finishes)
    dev = rec.sim.device(0)
    for _ in range(3):
        dev.launch("gemm", m=8, n=64, k=64)
    with pytest.raises(child.Terminated):
        dev.synchronize()  # the ops finish inside it; it stops once the call is recorded
    assert signalled == ["gemm"] and not rec.stop_requested
    unpacker = RecordUnpacker()
    d, _ = unpacker.unpack(*_through_the_wire(wire.RECORDS, *frames[-1]))
    assert d.call_objects[0::2][-1] == "device_synchronize" and len(d.call_ints) == 3 * len(d.call_objects) // 2
    assert [n for recs in d.commands for n in recs.ops.name] == ["gemm"] * 3  # every op whole, none lost mid-step
