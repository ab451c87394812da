"""Statistics, interval arithmetic and the critical path on small hand-made traces."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.model import TraceBuilder, TrackKind
from accelview.model.analysis import intervals as iv
from accelview.model.analysis.critical_path import critical_path, dependency_graph, longest_path
from accelview.model.analysis.stats import compute_transfer_overlap, lane_utilization, op_stats
from factories import tiny_trace


def _mask(starts, ends, n=1200):
    m = np.zeros(n, bool)
    for s, e in zip(starts, ends, strict=True):
        m[s:e] = True
    return m


def test_interval_operations_match_a_pixel_mask():
    rng = np.random.default_rng(0)
    for _ in range(100):
        a = rng.integers(0, 1000, 15)
        b = rng.integers(0, 1000, 15)
        A = iv.union(a, a + rng.integers(0, 100, 15))
        B = iv.union(b, b + rng.integers(0, 100, 15))
        ma, mb = _mask(*A), _mask(*B)
        assert iv.total(*A) == ma.sum()
        assert iv.total(*iv.intersection(A, B)) == (ma & mb).sum()
        assert iv.total(*iv.gaps(*A, 0, 1200)) == (~ma).sum()


def test_op_stats_counts_totals_and_percentiles():
    b = TraceBuilder()
    tr = b.add_track("matrix 0", TrackKind.EXEC_UNIT)
    t = 0
    for d in range(1, 101):  # gemm: durations 1..100
        b.add_slice(tr, t, d, "gemm")
        t += d
    b.add_slice(tr, t, 5050, "softmax")
    stats = {s.name: s for s in op_stats(b.build())}
    g = stats["gemm"]
    assert (g.count, g.total_ns, g.mean_ns) == (100, 5050, 50.5)
    assert g.p50_ns == pytest.approx(50.5) and g.p99_ns == pytest.approx(99.01)
    assert g.share == pytest.approx(0.5) and stats["softmax"].count == 1


def test_utilization_and_overlap():
    b = TraceBuilder()
    mxu = b.add_track("matrix 0", TrackKind.EXEC_UNIT)
    pcie = b.add_track("PCIe H2D", TrackKind.PCIE)
    b.add_slice(mxu, 0, 40, "gemm")
    b.add_slice(mxu, 60, 40, "gemm")
    b.add_slice(pcie, 30, 40, "copy")  # overlaps gemm for 10 + 10
    t = b.build()
    assert lane_utilization(t, 0, 100) == {mxu: 0.8}
    o = compute_transfer_overlap(t, 0, 100)
    assert o["transfer_ns"] == 40 and o["overlapped_ns"] == 20 and o["overlap"] == 0.5


def _chain():
    """API call → submission → kernel, then a second kernel queued behind the first."""
    b = TraceBuilder()
    api = b.add_track("runtime API", TrackKind.RUNTIME_API)
    q = b.add_track("queue", TrackKind.DRIVER_QUEUE)
    mxu = b.add_track("matrix 0", TrackKind.EXEC_UNIT)
    pcie = b.add_track("PCIe", TrackKind.PCIE)
    step = b.add_slice(api, 0, 1000, "step")
    launch = b.add_slice(api, 10, 20, "launch")
    sub = b.add_slice(q, 40, 10, "submit")
    k1 = b.add_slice(mxu, 100, 300, "gemm")
    k2 = b.add_slice(mxu, 400, 500, "gemm2")
    copy = b.add_slice(pcie, 0, 20, "H2D")  # off the path: it finished before anything waited on it
    b.add_flow(launch, sub)
    b.add_flow(sub, k1)
    b.add_flow(copy, k2)
    t = b.build()
    ids = b.final_slice_ids
    return t, {n: int(ids[i]) for n, i in
               (("step", step), ("launch", launch), ("sub", sub), ("k1", k1), ("k2", k2), ("copy", copy))}


def test_critical_path_walks_back_through_queue_flows_and_parent():
    t, s = _chain()
    path = critical_path(t, end_slice=s["k2"])
    assert path.slices == [s["step"], s["launch"], s["sub"], s["k1"], s["k2"]]
    waits = [(w.start_ns, w.end_ns, w.via) for w in path.steps if w.kind == "wait"]
    assert waits == [(30, 40, "flow"), (50, 100, "flow")]
    assert path.length_ns == 900
    assert path.by_resource_ns["exec unit"] == 800 and path.by_resource_ns["waiting"] == 60


def test_networkx_longest_path_agrees_on_a_chain():
    t, s = _chain()
    ids = np.array([s[k] for k in ("launch", "sub", "k1", "k2", "copy")])
    g = dependency_graph(t, ids)
    assert g.has_edge((s["k1"], "E"), (s["k2"], "B"))
    assert longest_path(t, ids) == [s["launch"], s["sub"], s["k1"], s["k2"]]


def test_critical_path_of_tiny_trace_runs_through_the_upload_the_kernel_waited_for():
    t = tiny_trace()
    path = critical_path(t)
    names = [t.strings[t.slices.name[i]] for i in path.slices]
    # gemm had been submitted long before; it began right after the H2D copy of its input ended.
    assert names == ["step 0 — décodage", "memcpyAsync", "H2D 1 MiB", "gemm"]
    memcpy = next(p for p in path.steps if p.kind == "slice" and t.strings[t.slices.name[p.slice]] == "memcpyAsync")
    assert (memcpy.start_ns, memcpy.end_ns) == (100, 400)  # it still ran when the transfer began
    waits = [(w.start_ns, w.end_ns, w.via) for w in path.steps if w.kind == "wait"]
    assert waits == [(40_400, 41_000, "copy")]
    assert path.steps[-1].end_ns == t.time_bounds()[1]


def test_critical_path_goes_through_the_work_a_blocking_call_waited_for():
    b = TraceBuilder()
    api = b.add_track("runtime API", TrackKind.RUNTIME_API)
    mxu = b.add_track("matrix 0", TrackKind.EXEC_UNIT)
    launch = b.add_slice(api, 0, 10, "launch gemm")
    k = b.add_slice(mxu, 20, 1_000, "gemm")
    b.add_slice(api, 15, 1_010, "device_synchronize")  # returns 5 ns after the kernel
    b.add_flow(launch, k)
    t = b.build()
    path = critical_path(t)
    names = [t.strings[t.slices.name[i]] for i in path.slices]
    assert names == ["launch gemm", "gemm", "device_synchronize"]
    assert path.by_resource_ns["exec unit"] == 1_000


def test_critical_path_follows_stream_order_across_lanes():
    """A stream runs in order: the copy after a kernel on the same queue waited for the kernel,
    though no flow joins them and they are on different lanes."""
    b = TraceBuilder()
    api = b.add_track("runtime API", TrackKind.RUNTIME_API)
    queue = b.add_track("device 0 queue 0", TrackKind.DRIVER_QUEUE)
    mxu = b.add_track("matrix", TrackKind.EXEC_UNIT)
    dma = b.add_track("DMA 0", TrackKind.DMA_ENGINE)
    launch, copy_call = b.add_slice(api, 0, 10, "launch gemm"), b.add_slice(api, 12, 2_000, "copy")
    sub_k, sub_c = b.add_slice(queue, 5, 5, "submit gemm"), b.add_slice(queue, 14, 5, "submit copy")
    k = b.add_slice(mxu, 20, 1_500, "gemm")
    c = b.add_slice(dma, 1_520, 400, "D2H")
    for src, dst in ((launch, sub_k), (sub_k, k), (copy_call, sub_c), (sub_c, c)):
        b.add_flow(src, dst)
    t = b.build()
    path = critical_path(t)
    names = [t.strings[t.slices.name[i]] for i in path.slices]
    assert names[-3:] == ["gemm", "D2H", "copy"]
    # the only wait is the gemm's, after its submission; the D2H began as the gemm ended
    assert path.by_resource_ns["waiting"] == 10 and [w.via for w in path.steps if w.kind == "wait"] == ["flow"]
    assert path.by_resource_ns["exec unit"] == 1_500
    ids = b.final_slice_ids
    assert dependency_graph(t, np.arange(len(t.slices))).has_edge((int(ids[k]), "E"), (int(ids[c]), "B"))


def test_queue_chains_taken_in_bulk_give_the_same_path_as_one_step_at_a_time(monkeypatch):
    from accelview.capture.synthetic import SyntheticSpec, synthetic_trace
    from accelview.model.analysis import critical_path as cp_module

    trace = synthetic_trace(SyntheticSpec(n_slices=40_000, n_lanes=16, args_every=50))
    bulk = cp_module.critical_path(trace)
    monkeypatch.setattr(cp_module.Dependencies, "chain_start", lambda self, x: x)
    one_by_one = cp_module.critical_path(trace)
    assert len(bulk.steps) > 1000
    assert bulk.steps == one_by_one.steps
