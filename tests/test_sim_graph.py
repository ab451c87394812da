"""Graph replays: one API call runs a captured sequence of launches, scheduled as columns."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from accelview.capture import sim
from accelview.capture.convert.replays import ReplayColumns, replay_of
from accelview.capture.sim.device.opcounters import CostColumns
from accelview.capture.sim.device.specs import load_spec
from accelview.model import TrackKind

ATTN = dict(batch=1, heads=32, kv_heads=8, head_dim=128, q_len=1)
STEP = [("qkv", "gemm", dict(m=1, n=6144, k=4096)), ("attn", "attention", dict(ATTN, kv_len=1024)),
        ("o", "gemm", dict(m=1, n=4096, k=4096)), ("norm", "rmsnorm", dict(tokens=1, hidden=4096))]


def _no_jitter():
    spec = load_spec("gen5x16-141g")
    return dataclasses.replace(spec, timing=dataclasses.replace(spec.timing, jitter=0.0))


def _times(s, kind: str) -> list[tuple[float, float]]:
    """(start, end) of every op, relative to the first one; graph nodes expanded."""
    out = []
    for c in s.device(0).engine.finished:
        if c.kind == "graph" and kind == "graph":
            out += list(zip((c.start_ns + c.graph.start_off).tolist(), (c.start_ns + c.graph.end_off).tolist(),
                            strict=True))
        elif c.kind == "op" and kind == "op":
            out.append((c.start_ns, c.end_ns))
    t0 = out[0][0]
    return [(a - t0, b - t0) for a, b in out]


def test_a_replay_schedules_its_nodes_like_the_same_launches_on_an_idle_device() -> None:
    with sim.session(_no_jitter()) as one_by_one:
        dev = sim.device(0)
        dev.synchronize()
        for kv_len in (1024, 8192):
            for name, op, shapes in STEP:
                dev.launch(op, name=name, **{**shapes, **({"kv_len": kv_len} if op == "attention" else {})})
        dev.synchronize()
    with sim.session(_no_jitter()) as replayed:
        dev = sim.device(0)
        with dev.graph("step") as g:
            for name, op, shapes in STEP:
                dev.launch(op, name=name, **shapes)
        g.launch()
        g.launch(kv_len=8192)
        dev.synchronize()
    # the host is ahead of the device in both runs (each op outlasts a launch), so they agree
    assert np.ravel(_times(replayed, "graph")) == pytest.approx(np.ravel(_times(one_by_one, "op")), abs=1.0)
    attn = [e - s for s, e in _times(replayed, "graph")[1::4]]
    assert attn[1] > attn[0]  # the update reached the attention node only


def test_a_replay_is_one_call_one_submission_and_a_slice_per_node_with_counters_and_truth() -> None:
    with sim.session() as s:
        dev = sim.device(0)
        with dev.graph("step") as g:
            for name, op, shapes in STEP:
                dev.launch(op, name=name, **shapes)
        for kv_len in (1024, 2048, 4096):
            g.launch(kv_len=kv_len)
        dev.synchronize()
    trace = s.trace()
    assert trace.self_check() == []
    kind_of = trace.tracks.kind[trace.slices.track]
    names = np.array([trace.strings[int(n)] for n in trace.slices.name])
    calls = np.flatnonzero(names == "launch graph step")
    subs = np.flatnonzero(kind_of == TrackKind.DRIVER_QUEUE)
    ops = np.flatnonzero(kind_of == TrackKind.EXEC_UNIT)
    assert len(calls) == 3 and len(subs) == 3 and len(ops) == 3 * len(STEP)
    assert [trace.strings[int(n)] for n in trace.slices.name[ops[np.argsort(trace.slices.start_ns[ops])]][:4]] == [
        "qkv", "attn", "o", "norm"]
    succ: dict[int, list[int]] = {}
    for a, b in zip(trace.flows.src.tolist(), trace.flows.dst.tolist(), strict=True):
        succ.setdefault(a, []).append(b)
    call_args = [trace.args(int(trace.slices.args[c])) for c in calls]
    assert sorted((a["nodes"], a["kv_len"]) for a in call_args) == [(4, 1024), (4, 2048), (4, 4096)]
    for call in calls:
        (sub,) = succ[int(call)]
        nodes = succ[sub]
        assert len(nodes) == len(STEP) and set(kind_of[nodes]) == {TrackKind.EXEC_UNIT}
        assert set(trace.slices.correlation[nodes]) == {trace.slices.correlation[call]}
    truth = trace.truth["truth_ops"]
    assert sorted(truth.slice.tolist()) == sorted(ops.tolist())
    limiters = {trace.strings[int(x)] for x in truth.limiter}
    assert "memory" in limiters  # decode-sized GEMMs read their weights
    for op in ops:
        args = trace.slice_args(op)
        assert args["elapsed_cycles"] > 0 and args["hbm_read_bytes"] > 0 and "op" in args
    attn_kv = sorted(trace.args(int(trace.slices.args[i]))["kv_len"] for i in ops if names[i] == "attn")
    assert attn_kv == [1024, 2048, 4096]
    (track,) = [i for i in range(len(trace.tracks)) if trace.track_name(i) == "device 0 HBM read bytes"]
    hbm = trace.counter_series(track)[1].sum()
    assert hbm == pytest.approx(sum(trace.slice_args(i)["hbm_read_bytes"] for i in ops), rel=1e-9)


def test_a_replay_holds_the_units_other_streams_wait() -> None:
    with sim.session(_no_jitter()) as s:
        dev = sim.device(0)
        side = dev.stream()
        with dev.graph("step") as g:
            for name, op, shapes in STEP:
                dev.launch(op, name=name, **shapes)
        g.launch()
        dev.launch("rmsnorm", stream=side, name="side", tokens=1, hidden=4096)
        dev.synchronize()
    (replay,) = [c for c in s.device(0).engine.finished if c.kind == "graph"]
    (other,) = [c for c in s.device(0).engine.finished if c.name == "side"]
    assert other.start_ns >= replay.end_ns and other.cause == "resource"


def test_graph_misuse_is_a_clear_error() -> None:
    with sim.session() as s:
        dev = s.device(0)
        with dev.graph("empty") as g:
            pass
        with pytest.raises(ValueError, match="has no nodes"):
            g.launch()
        with pytest.raises(ValueError, match="gemm"), dev.graph("bad"):
            dev.launch("gemm", m=1, n=2)
        with dev.graph("x"), pytest.raises(ValueError, match="stream is chosen when the graph is launched"):
            dev.launch("gemm", stream=dev.stream(), m=1, n=2, k=3)
        assert dev.capturing is None


def test_replays_as_columns_match_each_replay_across_graphs_and_update_sets() -> None:
    """The capture builds all replays' nodes at once, per layout (graph and set of updated
    shapes); that must give what each replay says of itself, in replay order."""
    with sim.session() as s:  # with jitter: every replay has its own
        dev = sim.device(0)
        with dev.graph("step") as g:
            for name, op, shapes in STEP:
                dev.launch(op, name=name, **shapes)
        with dev.graph("attention only") as g2:
            dev.launch("attention", name="attn", **dict(ATTN, kv_len=64))
        for i in range(4):
            if i % 2:
                g.launch(kv_len=100 + i)
            else:
                g.launch()
            g2.launch(kv_len=200 + i)
            g.launch(tokens=1, kv_len=7)  # updates a shape of the norm as well
        dev.synchronize()
    replays = [c for c in s.device(0).engine.finished if c.kind == "graph"]
    cols = ReplayColumns([c.start_ns for c in replays], [replay_of(c.graph) for c in replays])
    assert len(cols.groups) == 4
    for f in dataclasses.fields(CostColumns):
        assert np.array_equal(cols.column(f.name), np.concatenate([getattr(c.graph.costs, f.name) for c in replays]))
    assert np.array_equal(cols.start, np.concatenate([c.start_ns + c.graph.start_off for c in replays]))
    assert np.array_equal(cols.body, np.concatenate([c.start_ns + c.graph.body_off for c in replays]))
    assert np.array_equal(cols.end, np.concatenate([c.start_ns + c.graph.end_off for c in replays]))
    assert np.array_equal(cols.units, np.concatenate([c.graph.units for c in replays]))
    attn = [replay_of(c.graph).template_args[c.graph.layout.which[1]] for c in replays if c.graph.name == "step"]
    assert [a["kv_len"] for a in attn] == [1024, 7, 101, 7, 1024, 7, 103, 7]
    assert s.trace().self_check() == []
