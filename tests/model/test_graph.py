"""The dependency graph model: the DAG of a selection, folded groups, the layered layout,
request lifecycles and what-if replays, on the demo capture and on small built traces."""

from __future__ import annotations

import itertools
from importlib import resources

import networkx as nx
import numpy as np
import pytest
from accelview.capture.synthetic_graph import graph_trace
from accelview.model import TraceBuilder, TrackKind
from accelview.model.analysis.critical_path import critical_path
from accelview.model.errors import AccelviewError
from accelview.model.graph.dag import API, CLASSES, EDGE_TYPES, OP, WAKE, GraphContext, build_graph
from accelview.model.graph.display import GROUP, display_graph
from accelview.model.graph.groups import find_groups
from accelview.model.graph.layout import layered_layout, time_layers
from accelview.model.graph.lifecycle import lifecycle, stage_distributions
from accelview.model.graph.whatif import parse_what_if, replay, what_if
from accelview.model.loader import load_trace


@pytest.fixture(scope="module")
def demo():
    trace = load_trace(str(resources.files("accelview.resources").joinpath("demo.h5")))
    ctx = GraphContext(trace)
    return ctx, build_graph(ctx, np.flatnonzero(ctx.kind >= 0))


def sync_trace():
    """One call launching one op, then a synchronise that waits for it (wakes 2 µs after)."""
    b = TraceBuilder()
    host = b.add_track("h", TrackKind.HOST, host="h")
    th = b.add_track("t", TrackKind.HOST_THREAD, host, host="h")
    api = b.add_track("api", TrackKind.RUNTIME_API, th, host="h")
    q = b.add_track("q", TrackKind.DRIVER_QUEUE, host, host="h", device=0)
    unit = b.add_track("u", TrackKind.EXEC_UNIT, b.add_track("d", TrackKind.DEVICE, device=0), device=0)
    call = b.add_slice(api, 0, 5_000, "launch k")
    sub = b.add_slice(q, 4_000, 500, "submit k")
    op = b.add_slice(unit, 6_000, 10_000, "k")
    b.add_slice(api, 6_000, 12_000, "synchronize")  # returns at 18_000: 2 µs after the op
    b.add_flow(call, sub)
    b.add_flow(sub, op)
    return b.build(source="sync")


def test_edges_are_typed_with_their_latency_and_a_blocked_call_has_a_wake_node():
    t = sync_trace()
    ctx = GraphContext(t)
    g = build_graph(ctx, np.arange(len(t.slices)))
    names = [g.name(i) for i in range(len(g))]
    edges = {(names[s], names[d]): (EDGE_TYPES[e], int(la))
             for s, d, e, la in zip(g.src, g.dst, g.etype, g.latency_ns, strict=True)}
    assert edges[("launch k", "submit k")] == ("launch", 4_000)  # submitted while the call ran
    assert edges[("submit k", "k")] == ("launch", 1_500)  # submit end 4_500 → op start 6_000
    assert edges[("k", "wake: synchronize")] == ("sync", 2_000)
    assert edges[("launch k", "synchronize")] == ("dependency", 1_000)
    assert list(g.kind).count(WAKE) == 1
    assert nx.is_directed_acyclic_graph(g.graph)
    assert all(g.critical)  # one chain: call, submission, op, wake, and the sync call
    lat = nx.get_edge_attributes(g.graph, "latency_ns")
    assert min(lat.values()) >= 0


def test_the_demo_graph_is_a_dag_with_graph_replays_launched_and_on_the_critical_path(demo):
    ctx, g = demo
    assert nx.is_directed_acyclic_graph(g.graph)
    assert (g.latency_ns >= 0).all()
    assert (g.src < g.dst).all()  # topological order
    # Each decode step is one replay: its launch call reaches all of the step's ops.
    names = [g.name(i) for i in range(len(g))]
    launch = names.index("launch graph decode step")
    reached = nx.descendants(g.graph, int(g.node[launch]))
    decode_ops = {int(g.node[i]) for i in range(len(g)) if g.kind[i] == OP and names[i].startswith("decode.")}
    first_step = {n for n in decode_ops if n in reached}
    assert len(first_step) >= 291
    # The critical path is the analysis' walk, restricted to the graph's nodes.
    end = int(np.flatnonzero(ctx.kind >= 0)[np.argmax(ctx.end[ctx.kind >= 0])])
    walk = set(critical_path(ctx.trace, end, roles=ctx.roles).slices)
    marked = set(g.node[g.critical & (g.node >= 0)].tolist())
    assert marked == walk & set(g.node.tolist())
    assert len(marked & decode_ops) > 2000
    assert g.edge_critical.sum() >= len(marked) - 10


def test_nodes_are_coloured_by_the_ops_bottleneck_class(demo):
    _ctx, g = demo
    names = [g.name(i) for i in range(len(g))]
    head = names.index("decode.lm_head")
    assert g.cls[head] == 1  # a batch-1 decode GEMM streams weights: memory-bound
    assert g.cls[names.index("prefill.layers.0.qkv_proj")] == 0  # prefill GEMMs are compute-bound


def test_repeated_layers_and_steps_fold_into_groups_that_expand(demo):
    _, g = demo
    groups = find_groups(g)
    layers = [x for x in groups.groups if x.label == "decode.layers.#"]
    assert layers and all(x.count == 32 for x in layers)
    steps = [x for x in groups.groups if x.count == 8]
    assert len(steps) == 1 and steps[0].label.startswith("decode")
    assert all(groups.groups[x.parent] is steps[0] for x in layers)
    folded = display_graph(g, groups, set())
    opened = display_graph(g, groups, set(range(len(groups.groups))))
    assert len(folded) < 80 < len(g) == len(opened)
    assert "decode.layers.# ×32" not in folded.labels  # inside the folded steps
    one = display_graph(g, groups, {groups.groups.index(steps[0])})
    assert one.labels.count("decode.layers.# ×32") == 8
    assert (one.kind == GROUP).sum() == 8 + 1  # eight steps' layers, and the prefill's
    step = folded.labels.index(f"{steps[0].label} ×8")
    assert CLASSES[folded.cls[step]] == "memory"  # decode steps: their device work, not their host calls
    # Every node is drawn by exactly one drawn node; edges join drawn nodes only.
    assert len(one.node_of) == len(g) and one.node_of.max() < len(one)


def test_time_layers_put_every_edge_forward_and_follow_start_order():
    t = graph_trace(300)
    ctx = GraphContext(t)
    g = build_graph(ctx, np.flatnonzero(ctx.kind >= 0))
    groups = find_groups(g)
    d = display_graph(g, groups, set(range(len(groups.groups))))
    lay = layered_layout(d.src, d.dst, d.band, np.zeros(len(d)))
    assert (lay.layer[d.dst] > lay.layer[d.src]).all()
    assert (np.diff(lay.layer) >= 0).all()
    boxes = set(zip(lay.x.tolist(), lay.y.tolist(), strict=True))
    assert len(boxes) == len(d)  # no two nodes on one spot


def crossings(layer, slot, src, dst):
    n = 0
    for i in range(len(src)):
        for j in range(i + 1, len(src)):
            a, b, c, e = src[i], dst[i], src[j], dst[j]
            if layer[a] == layer[c] and layer[b] == layer[e]:
                n += (slot[a] - slot[c]) * (slot[b] - slot[e]) < 0
    return n


def test_barycentre_sweeps_remove_crossings():
    # Layer 0: nodes 0..3; layer 1: nodes 4..7 with a hint order that crosses every edge.
    src = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    dst = np.array([4, 5, 6, 7, 5, 4, 7, 6])
    hint = np.array([0, 1, 2, 3, 3, 2, 1, 0], float)
    band = np.zeros(8, np.int64)
    assert list(time_layers(8, np.array([0]), np.array([4]))) == [0, 0, 0, 0, 1, 1, 1, 1]
    src2, dst2 = np.array([0, 1, 2, 3]), np.array([4, 5, 6, 7])
    unswept = layered_layout(src2, dst2, band, hint, sweeps=0)
    swept = layered_layout(src2, dst2, band, hint)
    assert crossings(unswept.layer, unswept.row, src2, dst2) == 6
    assert crossings(swept.layer, swept.row, src2, dst2) == 0
    full = layered_layout(src, dst, band, hint)
    assert crossings(full.layer, full.row, src, dst) <= crossings(unswept.layer, unswept.row, src, dst)


def test_a_copys_lifecycle_runs_from_the_call_to_the_hosts_wake_up(demo):
    ctx, _g = demo
    t = ctx.trace
    dma = int(np.flatnonzero(t.tracks.kind[t.slices.track] == TrackKind.DMA_ENGINE)[0])
    stages = lifecycle(ctx, dma)
    names = [s.name for s in stages]
    assert names == ["api", "driver", "queue", "doorbell", "dma", "wake"]
    assert all(s.latency_ns >= 0 for s in stages)
    assert all(a.end_ns == b.start_ns for a, b in itertools.pairwise(stages)
               if a.name not in ("api",))  # contiguous from the submission on
    assert stages[4].latency_ns == int(t.slices.dur_ns[dma])
    calls, waited = ctx.woken
    call = int(calls[waited == dma][0])
    assert stages[-1].end_ns == int(ctx.end[call])  # the copy call returned when the host woke
    assert lifecycle(ctx, call) == [] or lifecycle(ctx, call)[0].name == "api"
    dist = {s.stage: s for s in stage_distributions(ctx)}
    assert dist["execution"].count == int((ctx.kind == OP).sum())
    assert dist["dma"].count == 9 and dist["wake"].count == 9
    assert dist["execution"].p50_ns <= dist["execution"].p99_ns <= dist["execution"].max_ns


def test_a_replay_with_nothing_changed_gives_the_captured_times(demo):
    _, g = demo
    s = replay(g)
    assert (s.start_ns == g.start_ns).all() and (s.end_ns == g.end_ns).all()
    assert set(s.path.tolist()) <= set(np.flatnonzero(g.critical).tolist()) | set(np.flatnonzero(g.kind == API))


def test_what_if_saves_step_time_for_what_is_on_the_critical_path():
    t = sync_trace()
    ctx = GraphContext(t)
    g = build_graph(ctx, np.arange(len(t.slices)))
    w = what_if(g, "execution", 50, [("all", 0, 20_000)])
    assert w.saved_ns == 5_000  # the op took 10 µs and gated the wake-up
    assert w.phases == [("all", 18_000, 13_000)]
    assert what_if(g, "wake", 100).saved_ns == 2_000
    assert what_if(g, "driver", 100).saved_ns == 500  # the op was launched when the 500 ns submission ended
    assert what_if(g, "api", 100).saved_ns == 4_000  # the call submitted 4 µs in: the chain to the op moves by that
    assert g.kind[w.after.path[-1]] == WAKE and g.kind[w.after.path[0]] == API


def test_what_if_on_the_demo_shortens_decode_steps(demo):
    _, g = demo
    w = what_if(g, "execution", 20)
    assert 0.15 < w.saved_ns / w.before.span_ns < 0.2  # device work is ~all of the path
    assert what_if(g, "wake", 50).saved_ns > 0


@pytest.mark.parametrize("text", ["queue=10", "execution", "execution=x", "execution=150", "disk=5"])
def test_bad_what_if_is_a_one_line_error(text):
    with pytest.raises(AccelviewError):
        parse_what_if(text)
    assert parse_what_if("Execution=12.5") == ("execution", 12.5)


def test_a_pytorch_trace_gets_launches_from_host_thread_runtime_calls_and_sync_wakes(shared_traces):
    t = load_trace(str(shared_traces / "kineto" / "a100_alexnet.json.gz"))
    ctx = GraphContext(t)
    g = build_graph(ctx, np.flatnonzero(ctx.kind >= 0))
    assert nx.is_directed_acyclic_graph(g.graph)
    names = [g.name(i) for i in range(len(g))]
    launched = {names[d] for s, d, e in zip(g.src, g.dst, g.etype, strict=True)
                if EDGE_TYPES[e] == "launch" and names[s] == "cudaLaunchKernel"}
    assert any(n.startswith("void") for n in launched)  # kernels, launched from the runtime calls
    assert (g.etype == EDGE_TYPES.index("launch")).sum() == int((g.kind == OP).sum())
    wakes = [n for n, k in zip(names, g.kind, strict=True) if k == WAKE]
    assert wakes and all("ynchronize" in n for n in wakes)
    kernel = int(g.node[names.index(sorted(n for n in launched if n.startswith("void"))[0])])
    stages = [s.name for s in lifecycle(ctx, kernel)]
    assert stages[:1] == ["api"] and "execution" in stages and "driver" not in stages  # no driver lane


def test_a_replays_many_launches_draw_as_one_but_the_model_keeps_them(demo):
    _, g = demo
    groups = find_groups(g)
    opened = display_graph(g, groups, set(range(len(groups.groups))))
    names = [g.name(i) for i in range(len(g))]
    sub = names.index("submit decode step")
    model_launches = int(((g.src == sub) & (g.etype == 0)).sum())
    drawn = opened.node_of[sub]
    drawn_launches = int(((opened.src == drawn) & (opened.etype == 0)).sum())
    assert model_launches == 291 and drawn_launches == 1
    assert opened.labels[int(opened.dst[(opened.src == drawn) & (opened.etype == 0)][0])] == "decode.embed"


def test_a_graph_without_repeats_has_no_groups_and_draws_every_node():
    t = sync_trace()
    ctx = GraphContext(t)
    g = build_graph(ctx, np.arange(len(t.slices)))
    groups = find_groups(g)
    assert groups.groups == []
    assert len(display_graph(g, groups, set())) == len(g)
    empty = build_graph(ctx, np.empty(0, np.int64))
    assert len(display_graph(empty, find_groups(empty), set())) == 0
