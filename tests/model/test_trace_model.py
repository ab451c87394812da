"""The in-memory model: builder ordering and ids, nesting depths, window queries, self_check."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.model import Table, TraceBuilder, TrackKind
from accelview.model.nesting import assign_depths, run_order, start_order
from accelview.model.schema import OP_COUNTER_COLUMNS, SLICES
from factories import empty_trace, tiny_trace


def _brute_window(trace, track, t0, t1):
    s = trace.slices
    end = s.start_ns + s.dur_ns
    hit = (s.track == track) & (s.start_ns < t1) & ((end > t0) | ((s.dur_ns == 0) & (s.start_ns >= t0)))
    return set(np.flatnonzero(hit).tolist())


def test_builder_sorts_and_remaps_flows_to_final_ids():
    t = tiny_trace()
    assert t.self_check() == []
    names = [t.strings[n] for n in t.slices.name]
    # Flows still join the slices they were made for, after renumbering.
    pairs = {(names[s], names[d]) for s, d in zip(t.flows.src, t.flows.dst, strict=True)}
    assert pairs == {("memcpyAsync", "H2D 1 MiB"), ("launch", "submit gemm"), ("submit gemm", "gemm")}
    order = np.lexsort((t.slices.start_ns, t.slices.depth, t.slices.track))
    assert np.array_equal(order, np.arange(len(order)))
    assert t.strings[t.truth["truth_ops"].limiter[0]] == "compute"
    assert names[t.truth["truth_ops"].slice[0]] == "gemm"


def test_nested_calls_getstack_depths():
    t = tiny_trace()
    depth = {t.strings[n]: int(d) for n, d in zip(t.slices.name, t.slices.depth, strict=True)}
    assert depth["step 0 — décodage"] == 0
    assert depth["memcpyAsync"] == 1 and depth["launch"] == 1


def test_assign_depths_never_overlaps_within_a_depth():
    rng = np.random.default_rng(1)
    n = 3000
    track = rng.integers(0, 3, n).astype(np.int32)
    start = rng.integers(0, 100_000, n)
    dur = rng.integers(0, 5_000, n)
    depth = assign_depths(track, start, dur)
    for tr in range(3):
        for d in np.unique(depth[track == tr]):
            m = (track == tr) & (depth == d)
            o = np.argsort(start[m], kind="stable")
            s, e = start[m][o], (start + dur)[m][o]
            assert (s[1:] >= e[:-1]).all()


def test_interning_many_strings_gives_each_the_id_interning_it_alone_would():
    from accelview.model.strings import StringTable
    t = StringTable(["a", "b"])
    ids = t.intern_many(["b", "c", "a", "c", "", "d"])
    assert ids == [2, 3, 1, 3, 0, 4]
    assert [t[i] for i in ids] == ["b", "c", "a", "c", "", "d"]
    assert t.intern_many([]) == [] and len(t) == 5


def test_args_round_trip_types():
    t = tiny_trace()
    sid = [t.strings[n] for n in t.slices.name].index("memcpyAsync")
    assert t.args(int(t.slices.args[sid])) == {"bytes": 1 << 20, "pinned": 1, "dir": "H2D", "ratio": 0.5}
    assert t.args(-1) == {}


def test_window_matches_brute_force():
    rng = np.random.default_rng(7)
    b = TraceBuilder()
    tracks = [b.add_track(f"t{i}", TrackKind.EXEC_UNIT) for i in range(3)]
    for _ in range(2000):
        b.add_slice(int(rng.choice(tracks)), int(rng.integers(0, 10**6)), int(rng.integers(0, 20_000)), "op")
    t = b.build()
    assert t.self_check() == []
    for _ in range(200):
        t0 = int(rng.integers(-1000, 10**6))
        t1 = t0 + int(rng.integers(1, 50_000))
        track = int(rng.choice(tracks))
        assert set(t.window(track, t0, t1).tolist()) == _brute_window(t, track, t0, t1)


def test_zero_length_slices_are_found_at_their_time():
    b = TraceBuilder()
    tr = b.add_track("t", TrackKind.EXEC_UNIT)
    for ts in (10, 10, 20):
        b.add_slice(tr, ts, 0, "tick")
    t = b.build()
    assert t.self_check() == []
    assert len(t.window(tr, 10, 11)) == 2
    assert len(t.window(tr, 11, 20)) == 0


def test_empty_trace_is_valid():
    t = empty_trace()
    assert t.self_check() == []
    assert t.time_bounds() == (0, 0)
    assert len(t.window(0, 0, 100)) == 0


def _first_pair(c):
    """First row whose next row is on the same track and depth."""
    same = (c["track"][1:] == c["track"][:-1]) & (c["depth"][1:] == c["depth"][:-1])
    return int(np.flatnonzero(same)[0])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c["dur_ns"].__setitem__(0, -5), "negative duration"),
        (lambda c: c["start_ns"].__setitem__(_first_pair(c), c["start_ns"][_first_pair(c) + 1] + 1), "out of order"),
        (lambda c: c["track"].__setitem__(0, 999), "track that does not exist"),
    ],
)
def test_self_check_reports_broken_slices(mutate, message):
    t = tiny_trace()
    cols = {k: v.copy() for k, v in t.slices.columns().items()}
    mutate(cols)
    t.tables["slices"] = Table(SLICES, cols)
    assert any(message in p for p in t.self_check())


def test_self_check_reports_dangling_flow():
    b = TraceBuilder()
    tr = b.add_track("t", TrackKind.EXEC_UNIT)
    a = b.add_slice(tr, 0, 5, "a")
    b.add_flow(a, 42)
    assert any("flow 0 ends at a slice that does not exist" in p for p in b.build().self_check())


def test_overlap_at_same_depth_is_reported():
    b = TraceBuilder()
    tr = b.add_track("t", TrackKind.EXEC_UNIT)
    b.add_slice(tr, 0, 10, "a", depth=0)
    b.add_slice(tr, 5, 10, "b", depth=0)
    assert any("overlap at the same depth" in p for p in b.build().self_check())


def test_properly_nested_depths_match_the_stack():
    from accelview.model.nesting import _nested_depths, stack_depths

    rng = np.random.default_rng(3)
    for _ in range(50):
        # A random call tree: children inside their parent, siblings apart, some zero-length.
        spans = [(0, 1_000_000)]
        i = 0
        while len(spans) < 300 and i < len(spans):
            a, b = spans[i]
            t = a
            while b - t > 10 and rng.random() < 0.8:
                w = int(rng.integers(0, (b - t) // 2 + 1))
                spans.append((t, t + w))
                t += w + int(rng.integers(0, 5))
            i += 1
        s = np.array([a for a, _ in spans])
        e = np.array([b for _, b in spans])
        o = np.lexsort((-(e - s), s))
        s, e = s[o], e[o]
        assert np.array_equal(_nested_depths(s, e), stack_depths(s.tolist(), e.tolist()))


def test_partial_overlaps_that_would_clash_fall_back_to_the_stack():
    from accelview.model.nesting import _nested_depths

    # (5, 15) overlaps (0, 10) without nesting in it; (12, 13) then starts after (0, 10) ended,
    # so counting open slices puts it at depth 1, on top of (5, 15): the stack is needed.
    s = np.array([0, 5, 12])
    e = np.array([10, 15, 13])
    assert _nested_depths(s, e) is None


def test_the_vectorised_walk_gives_the_stack_walks_depths():
    """Random slices with partial overlaps, ties and zero lengths: ``walked_depths`` equals the
    stack walk slice for slice, or gives up (None) past its limits, rarely."""
    from accelview.model.nesting import stack_depths, walked_depths

    rng = np.random.default_rng(5)
    walked = 0
    for _ in range(3000):
        n = int(rng.integers(1, 40))
        start = rng.integers(0, 30, n)
        dur = rng.integers(0, 12, n)
        o = start_order(np.zeros(n, np.int64), start, dur)
        s, e = start[o].astype(np.int64), (start + dur)[o].astype(np.int64)
        expected = stack_depths(s.tolist(), e.tolist())
        assert np.array_equal(walked_depths(s, e, max_rounds=1000, max_work=1000), expected)
        for limited in (walked_depths(s, e), walked_depths(s, e, max_rounds=1)):
            assert limited is None or np.array_equal(limited, expected)
        walked += walked_depths(s, e) is not None
    assert walked > 1500  # these are dense: most still within the default limits
    # A staircase (each slice overlaps the next without nesting) needs a round per step, and
    # reads ever longer ranges.
    s = np.arange(0, 100, 2, dtype=np.int64)
    e = s + 3
    assert walked_depths(s, e, max_rounds=5) is None
    assert walked_depths(s, e, max_work=4) is None
    assert np.array_equal(walked_depths(s, e, max_work=10_000), stack_depths(s.tolist(), e.tolist()))


def test_rows_added_after_the_build_are_renumbered_and_merged_in_order() -> None:
    """add_rows_after_build: op counters name slices by the builder's ids (renumbered as the
    slices were sorted) and merge with those added before; counter samples merge by track, time."""
    b = TraceBuilder()
    late, early = b.add_track("late", TrackKind.EXEC_UNIT), b.add_track("early", TrackKind.EXEC_UNIT)
    b.add_counter_track("c", "B")
    ids = [b.add_slice(late, 0, 5, "a"), b.add_slice(early, 0, 5, "b"), b.add_slice(late, 10, 5, "c")]

    def counters(slices: list[int], value: int) -> dict:
        return {"slice": np.array(slices), **{c: np.full(len(slices), value) for c, _ in OP_COUNTER_COLUMNS}}

    b.add_rows("op_counters", counters([ids[2]], 3))
    b.add_counters(2, np.array([5, 15]), np.array([1.0, 2.0]))
    trace = b.build()
    b.add_rows_after_build(trace, "op_counters", counters([ids[0], ids[1]], 7))
    b.add_rows_after_build(trace, "counters", {"track": np.array([2, 2], np.int32), "ts_ns": np.array([0, 10]),
                                               "value": np.array([9.0, 8.0])})
    assert trace.self_check() == []
    names = [trace.name(n) for n in trace.slices.name]
    assert {names[i]: trace.slice_args(i)["elapsed_cycles"] for i in range(3)} == {"a": 7, "b": 7, "c": 3}
    assert trace.counters.ts_ns.tolist() == [0, 5, 10, 15] and trace.counters.value.tolist() == [9, 1, 8, 2]


def test_fast_slice_orders_equal_lexsort() -> None:
    """The packed-key sorts used for the flow index, depths and the slices table give exactly
    numpy's lexsort orders: ties, negative and extreme values included."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(0, 500))
        group = rng.integers(0, int(rng.integers(1, 6)), n).astype(np.int32)
        start = (rng.integers(-25, 25, n) * int(rng.choice([1, 10**9, 2**40, 2**61]))).astype(np.int64)
        dur = rng.integers(0, 4, n).astype(np.int64)
        depth = rng.integers(0, 5, n).astype(np.uint16)
        assert (start_order(group, start, dur) == np.lexsort((-dur, start, group))).all()
        assert (run_order(group, depth, start) == np.lexsort((start, depth, group))).all()
