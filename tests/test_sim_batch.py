"""TraceBatch: bulk rows reach the builder as they would one ``add_*`` call at a time."""

from __future__ import annotations

import numpy as np
from accelview.capture.sim.batch import TraceBatch
from accelview.model import TraceBuilder, TrackKind


def _sets(trace) -> dict[int, list[tuple]]:
    """Each argument set's rows (key, kind, int, real, str) by set id, strings resolved."""
    a, s = trace.tables["args"], trace.strings
    out: dict[int, list[tuple]] = {}
    for i in range(len(a)):
        out.setdefault(int(a.set[i]), []).append(
            (s[a.key[i]], int(a.kind[i]), int(a.int[i]), float(a.real[i]), s[a.str[i]]))
    return out


def test_template_sets_and_listed_sets_come_out_in_set_order_as_single_sets_would() -> None:
    b, ref = TraceBuilder(), TraceBuilder()
    batch = TraceBatch(b)
    templates = [{"op": "gemm", "m": 64}, {"op": "rmsnorm", "tokens": 8, "dtype": "bf16"}]
    which = np.array([1, 0, 0, 1, 1])
    columns = {"cycles": np.array([5, 6, 7, 8, 9]), "flops": np.array([0.5, 1.5, 2.5, 3.5, 4.5])}
    first = batch.add_args({"stream": 3})
    ids = batch.add_template_sets(templates, which, columns)
    last = batch.add_args({"chunk": 2, "ratio": 0.25})
    assert first == 0 and sorted(ids.tolist()) == [1, 2, 3, 4, 5] and last == 6
    batch.flush()
    assert np.all(np.diff(b.tables_so_far()["args"].set) >= 0), "handed over in set order: nothing to sort"
    trace = b.build()
    expected = {first: {"stream": 3}, last: {"chunk": 2, "ratio": 0.25}}
    for i, set_id in enumerate(ids.tolist()):
        expected[set_id] = {**templates[which[i]], "cycles": int(columns["cycles"][i]),
                            "flops": float(columns["flops"][i])}
    for set_id in range(7):  # the same sets made one at a time, in set order
        assert ref.add_args(expected[set_id]) == set_id
    assert _sets(trace) == _sets(ref.build())


def test_counters_through_the_batch_equal_the_builders_own() -> None:
    b, ref = TraceBuilder(), TraceBuilder()
    batch = TraceBatch(b)
    for builder in (b, ref):
        builder.add_counter_track("a", "B")
        builder.add_counter_track("b", "%")
    ts = np.array([10.7, 20.2, 30.9])  # float times are truncated, as add_counters does
    batch.add_counters(0, ts, np.array([1.0, 2.0, 3.0]))
    batch.add_counters(1, ts.astype(np.int64), np.array([4.0, 5.0, 6.0]))
    ref.add_counters(0, ts, np.array([1.0, 2.0, 3.0]))
    ref.add_counters(1, ts.astype(np.int64), np.array([4.0, 5.0, 6.0]))
    batch.flush()
    assert b.build().counters.equals(ref.build().counters)


def test_rows_handed_over_are_kept_and_more_rows_are_copied_in() -> None:
    b = TraceBuilder()
    b.add_track("t", TrackKind.COUNTER)
    cols = {"track": np.zeros(3, np.int32), "ts_ns": np.arange(3, dtype=np.int64), "value": np.ones(3)}
    b.add_rows("counters", cols, copy=False)
    assert np.shares_memory(b.build().counters.value, cols["value"])
    b.add_rows("counters", {"track": np.zeros(1, np.int32), "ts_ns": np.array([5]), "value": np.zeros(1)})
    built = b.build().counters
    assert not np.shares_memory(built.value, cols["value"]) and built.value.tolist() == [1, 1, 1, 0]


def test_counters_added_out_of_track_order_are_still_sorted_by_the_builder() -> None:
    b = TraceBuilder()
    batch = TraceBatch(b)
    for name in ("a", "b"):
        b.add_counter_track(name, "B")
    ts = np.arange(3, dtype=np.int64)
    batch.add_counters(1, ts, np.ones(3), ascending=True)
    batch.add_counters(0, ts, np.zeros(3), ascending=True)  # ascending times, but an earlier track
    batch.flush()
    assert b.build().counters.track.tolist() == [0, 0, 0, 1, 1, 1]


def test_a_negative_zero_argument_keeps_its_sign() -> None:
    b = TraceBuilder()
    batch = TraceBatch(b)
    batch.add_template_sets([{"scale": -0.0, "op": "x"}], np.zeros(3, dtype=np.int64))
    batch.flush()
    real = b.build().tables["args"].real
    assert len(real) == 6 and np.signbit(real[0::2]).all()
