"""The columns a simulated capture offloads (sampled counters, graph replays' per-op counters):
made by a forked helper or in this process, the capture is the same; a helper that fails costs
nothing but time."""

from __future__ import annotations

import os

import numpy as np
import pytest
from accelview.capture import sim
from accelview.capture.convert import counter_rows as sampled
from accelview.capture.convert import offload, tracewriter
from accelview.model import forking
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture

OFFLOAD = offload.Offload


def _session():
    """Two devices (their counters and queues interleave in the plan), copies, launches, events,
    and graph replays on device 1 only."""
    with sim.session(seed=5, devices=2, counter_period_ns=2_000) as s:
        for d in range(2):
            dev = sim.device(d)
            w = dev.alloc(8 << 20, "int8")
            side = dev.stream()
            dev.copy(w, sim.host_buffer(8 << 20, "int8"), stream=side)
            dev.default_stream.wait_event(side.record_event())
            for i in range(20):
                dev.launch("gemm", m=8 * (i + 1), n=1024, k=1024)
        dev = sim.device(1)
        with dev.graph("step") as g:
            dev.launch("gemm", m=1, n=1024, k=1024)
            dev.launch("attention", batch=1, heads=8, head_dim=128, q_len=1, kv_len=64)
        for kv in range(64, 72):
            g.launch(kv_len=kv)
        for d in range(2):
            sim.device(d).synchronize()
    return s


def _build(monkeypatch: pytest.MonkeyPatch, fork: bool):
    made: list[offload.Offload] = []

    def recording(*args, **kwargs):
        made.append(OFFLOAD(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(offload, "MIN_ROWS", 0)
    monkeypatch.setattr(offload, "fork_safe", lambda: fork)
    monkeypatch.setattr(tracewriter, "Offload", recording)
    trace = _session().trace()
    assert [p.forked for p in made] == [fork]
    return trace


def _same(a, b) -> None:
    assert a.strings.strings() == b.strings.strings()
    for name, table in a.tables.items():
        assert table.equals(b.tables[name]), name
    for name, table in a.truth.items():
        assert table.equals(b.truth[name]), name


def test_a_helper_and_this_process_make_the_same_capture(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    here = _build(monkeypatch, fork=False)
    helped = _build(monkeypatch, fork=True)
    _same(here, helped)
    write_capture(helped, tmp_path / "helped.h5")  # columns in shared memory write like any others
    _same(here, load_capture(tmp_path / "helped.h5"))
    names = [here.strings[n] for n in here.tracks.name[np.unique(here.counters.track)]]
    assert names[:2] == ["device 0 matrix busy", "device 0 vector busy"]
    assert "device 0 queue 1 depth" in names and names.index("device 0 queue 1 depth") < names.index(
        "device 1 matrix busy")
    assert here.counters.value.sum() > 0
    oc = here.tables["op_counters"]
    assert len(oc) == 40 + 16 and here.self_check() == []  # every launched op and every replayed node
    assert np.all(oc.elapsed_cycles > 0)
    forking.reap(block=True)
    assert not forking._unreaped  # the helper was waited for: no zombie


def test_a_helper_that_fails_leaves_the_rows_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    here = _build(monkeypatch, fork=False)
    parent, compute = os.getpid(), sampled.compute

    def failing_in_the_helper(*args, **kwargs) -> None:
        if os.getpid() != parent:
            raise RuntimeError("helper lost")
        compute(*args, **kwargs)

    monkeypatch.setattr(sampled, "compute", failing_in_the_helper)
    _same(here, _build(monkeypatch, fork=True))


def test_no_process_to_fork_leaves_the_columns_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    made = offload.Offload({"x": (np.int64, 300_000)}, lambda out: out["x"].__setitem__(slice(None), 7), fork=True)
    assert made.forked and np.all(made.result()["x"] == 7)
    monkeypatch.setattr(offload.os, "fork", no_fork)
    failed = offload.Offload({"x": (np.int64, 300_000)}, lambda out: out["x"].__setitem__(slice(None), 7), fork=True)
    assert not failed.forked and np.all(failed.result()["x"] == 7)
    forking.reap(block=True)


def test_a_big_process_or_a_small_capture_makes_the_columns_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offload, "fork_safe", lambda: True)
    fill = lambda out: out["x"].fill(3)  # noqa: E731
    forked = offload.Offload({"x": (np.int64, offload.MIN_ROWS)}, fill)
    assert forked.forked and np.all(forked.result()["x"] == 3)
    assert not offload.Offload({"x": (np.int64, offload.MIN_ROWS - 1)}, fill).forked
    monkeypatch.setattr(offload, "MAX_RSS", 1 << 20)  # this test process is bigger than 1 MiB
    big = offload.Offload({"x": (np.int64, offload.MIN_ROWS)}, fill)
    assert not big.forked and np.all(big.result()["x"] == 3)
    forking.reap(block=True)


def test_an_error_while_building_lets_the_helper_go(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer fails after forking: the helper's pipe is closed and the helper reaped, not leaked."""
    made: list[offload.Offload] = []

    def recording(*args, **kwargs):
        made.append(OFFLOAD(*args, **kwargs))
        return made[-1]

    def failing(*args, **kwargs):
        raise RuntimeError("writer failed")

    monkeypatch.setattr(offload, "MIN_ROWS", 0)
    monkeypatch.setattr(offload, "fork_safe", lambda: True)
    monkeypatch.setattr(tracewriter, "Offload", recording)
    monkeypatch.setattr(tracewriter, "add_calls", failing)  # the first rows made after the fork
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(RuntimeError, match="writer failed"):
        _session().trace()
    assert made[0].forked and len(os.listdir("/proc/self/fd")) == fds
    forking.reap(block=True)
    assert not forking._unreaped
