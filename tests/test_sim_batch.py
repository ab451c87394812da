"""TraceBatch: bulk rows reach the builder as they would one ``add_*`` call at a time."""

from __future__ import annotations

import numpy as np
from accelview.capture.convert.batch import TraceBatch
from accelview.model import TraceBuilder, TrackKind
from accelview.model.analysis.metrics.counters import arg_values
from accelview.model.schema import OP_COUNTER_COLUMNS


def test_op_counters_follow_their_slices_into_the_final_order() -> None:
    """Op slices share their shape's argument set; their counters land in op_counters by slice id,
    after the builder has sorted the slices (here: added on the later track first)."""
    b = TraceBuilder()
    batch = TraceBatch(b)
    early, late = b.add_track("early", TrackKind.EXEC_UNIT), b.add_track("late", TrackKind.EXEC_UNIT)
    gemm = batch.add_args({"op": "gemm", "m": 64})
    assert batch.add_args({"op": "gemm", "m": 64}) == gemm  # one set for every op of that shape
    first = batch.add_slice_columns(np.array([late, late, early]), np.array([0, 10, 0]), np.array([5, 5, 5]),
                                    np.array([batch.intern("gemm")] * 3), "op", -1, np.full(3, gemm))
    cycles = np.array([100, 200, 300])
    batch.add_op_counters(first + np.arange(3), {c: cycles * (i + 1) for i, (c, _) in enumerate(OP_COUNTER_COLUMNS)})
    batch.flush()
    trace = b.build()
    assert trace.self_check() == []
    assert len(trace.tables["args"]) == 2  # op and m, once
    got = {(int(trace.slices.track[i]), int(trace.slices.start_ns[i])): trace.slice_args(i) for i in range(3)}
    assert got[(early, 0)] == {"op": "gemm", "m": 64, **{c: 300 * (i + 1) for i, (c, _) in
                                                         enumerate(OP_COUNTER_COLUMNS)}}
    assert got[(late, 10)]["elapsed_cycles"] == 200 and got[(late, 0)]["burst_efficiency"] == 100 * 11
    assert list(got) == [(early, 0), (late, 0), (late, 10)]  # the last slice added came first
    assert arg_values(trace, "active_cycles", np.arange(3)).tolist() == [900, 300, 600]  # the 3rd counter: 3x


def test_rows_handed_over_are_kept_and_more_rows_are_copied_in() -> None:
    b = TraceBuilder()
    b.add_track("t", TrackKind.COUNTER)
    cols = {"track": np.zeros(3, np.int32), "ts_ns": np.arange(3, dtype=np.int64), "value": np.ones(3)}
    b.add_rows("counters", cols, copy=False)
    assert np.shares_memory(b.build().counters.value, cols["value"])
    b.add_rows("counters", {"track": np.zeros(1, np.int32), "ts_ns": np.array([5]), "value": np.zeros(1)})
    built = b.build().counters
    assert not np.shares_memory(built.value, cols["value"]) and built.value.tolist() == [1, 1, 1, 0]


def test_a_negative_zero_argument_keeps_its_sign() -> None:
    b = TraceBuilder()
    batch = TraceBatch(b)
    batch.add_args({"scale": -0.0, "op": "x"})
    batch.flush()
    real = b.build().tables["args"].real
    assert len(real) == 2 and np.signbit(real[0])
