"""HDF5 captures: round trips of every table, lazy window reads, streaming and recovery."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
from accelview.capture.synthetic import SyntheticSpec, synthetic_trace
from accelview.model import CaptureError, TrackKind
from accelview.model.store.format import CHUNK_ROWS
from accelview.model.store.reader import load_capture, open_capture
from accelview.model.store.writer import CaptureWriter, write_capture
from factories import empty_trace, tiny_trace


def _assert_same(a, b):
    assert a.strings == b.strings
    for name in a.tables:
        assert a.tables[name].equals(b.tables[name]), name
    for name in a.truth:
        assert a.truth[name].equals(b.truth[name]), name
    assert a.metadata == b.metadata
    assert (a.complete, a.incomplete_reason) == (b.complete, b.incomplete_reason)


@pytest.mark.parametrize("make", [tiny_trace, empty_trace])
def test_round_trip_keeps_every_table(tmp_path, make):
    trace = make()
    path = tmp_path / "c.h5"
    write_capture(trace, path)
    back = load_capture(path)
    _assert_same(trace, back)
    assert back.source == str(path)


def test_round_trip_of_many_chunks_keeps_ids(tmp_path):
    trace = synthetic_trace(SyntheticSpec(n_slices=3 * CHUNK_ROWS + 123, n_lanes=5, args_every=997))
    path = tmp_path / "s.h5"
    write_capture(trace, path)
    back = load_capture(path)
    _assert_same(trace, back)
    # A slice's id is its row: the same row holds the same slice after save and load.
    i = len(trace.slices) // 2
    assert trace.strings[trace.slices.name[i]] == back.strings[back.slices.name[i]]


def test_window_read_from_disk_returns_exactly_the_overlapping_slices(tmp_path):
    trace = synthetic_trace(SyntheticSpec(n_slices=4 * CHUNK_ROWS, n_lanes=3, seed=3))
    path = tmp_path / "w.h5"
    write_capture(trace, path)
    t0, t1 = trace.time_bounds()
    rng = np.random.default_rng(0)
    with open_capture(path) as f:
        assert f.n_slices == len(trace.slices)
        for _ in range(40):
            track = int(rng.choice(np.unique(trace.slices.track)))
            a = int(rng.integers(t0 - 1000, t1))
            b = a + int(rng.integers(1, (t1 - t0) // 10))
            ids, rows = f.window(track, a, b)
            assert np.array_equal(ids, trace.window(track, a, b))
            assert rows.equals(trace.slices.take(ids))


def test_existing_file_is_not_overwritten_without_force(tmp_path):
    path = tmp_path / "c.h5"
    path.write_bytes(b"precious")
    with pytest.raises(CaptureError, match="already exists"):
        write_capture(tiny_trace(), path)
    assert path.read_bytes() == b"precious"
    write_capture(tiny_trace(), path, overwrite=True)
    assert load_capture(path).self_check() == []


def _stream(path, n_batches=5, close=True):
    w = CaptureWriter(path, metadata={"workload": "stream test"}, flush_rows=1000)
    s = w.strings
    track = w.builder.add_track("matrix 0", TrackKind.EXEC_UNIT, device=0)
    ctr = w.builder.add_counter_track("busy", "%", "matrix")
    names = np.array([s.intern("gemm"), s.intern("softmax")], np.int32)
    for k in range(n_batches):
        start = np.arange(k * 1000, (k + 1) * 1000, dtype=np.int64) * 100
        first = w.append("slices", {"track": np.full(1000, track), "start_ns": start, "dur_ns": np.full(1000, 50),
                                    "name": names[np.arange(1000) % 2]})
        w.append("flows", {"src": np.array([first]), "dst": np.array([first + 1]), "name": np.array([0])})
        w.append("counters", {"track": np.full(10, ctr), "ts_ns": start[::100], "value": np.arange(10.0)})
    return w.close() if close else w.abandon()


def test_streaming_writer_round_trip(tmp_path):
    path = tmp_path / "stream.h5"
    summary = _stream(path)
    back = load_capture(path)
    assert summary.path == path and summary.complete and summary.metadata == back.metadata
    assert summary.rows == {name: len(t) for name, t in (*back.tables.items(), *back.truth.items())}
    assert len(back.slices) == 5000 and len(back.flows) == 5 and len(back.counters) == 50
    assert back.complete and back.metadata["workload"] == "stream test"
    # Back-to-back slices of one track keep their order: each batch's flow joins its first two.
    first = np.arange(5) * 1000
    assert np.array_equal(back.flows.src, first) and np.array_equal(back.flows.dst, first + 1)
    assert np.array_equal(back.slices.start_ns, np.arange(5000) * 100)
    assert np.array_equal(back.counters.ts_ns, np.arange(50) * 10_000)


def test_the_streaming_writer_stages_whole_chunks_and_keeps_every_row_in_order(tmp_path):
    w = CaptureWriter(tmp_path / "chunks.h5", flush_rows=2 * CHUNK_ROWS)
    track = w.builder.add_track("matrix 0", TrackKind.EXEC_UNIT, device=0)
    sent = 0

    def more(n: int) -> None:
        nonlocal sent
        w.append("slices", {"track": np.full(n, track), "start_ns": (sent + np.arange(n, dtype=np.int64)) * 10,
                            "dur_ns": np.full(n, 5), "name": np.zeros(n, np.int32)})
        sent += n

    def staged() -> int:
        return w._f.length("staging/slices/start_ns") if w._f.has("staging/slices/start_ns") else 0

    for _ in range(3):
        more(CHUNK_ROWS - 1000)
    assert staged() == 2 * CHUNK_ROWS  # a compressed chunk written once: the rest waits for more rows
    w.flush()  # what the service does every second: everything, a part-filled chunk too
    assert staged() == sent
    more(2 * CHUNK_ROWS)
    assert staged() % CHUNK_ROWS == 0 and sent - staged() < CHUNK_ROWS  # whole chunks again from there
    w.close()
    back = load_capture(tmp_path / "chunks.h5")
    assert np.array_equal(back.slices.start_ns, np.arange(sent) * 10)


def test_a_writer_killed_mid_stream_leaves_a_readable_capture(tmp_path):
    path = tmp_path / "killed.h5"
    pid = os.fork()
    if pid == 0:  # the writer: stream, flush, then die without closing (as kill -9 would)
        try:
            w = CaptureWriter(path, flush_rows=1000)
            track = w.builder.add_track("matrix 0", TrackKind.EXEC_UNIT, device=0)
            w.append("slices", {"track": np.full(3000, track), "start_ns": np.arange(3000, dtype=np.int64) * 10,
                                "dur_ns": np.full(3000, 5), "name": np.zeros(3000, np.int32)})
            w.flush()
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)
    back = load_capture(path)
    assert not back.complete and "not closed" in back.incomplete_reason
    assert len(back.slices) == 3000 and back.self_check() == []


def test_unclosed_stream_is_recovered_and_marked_incomplete(tmp_path):
    path = tmp_path / "crashed.h5"
    _stream(path, close=False)
    back = load_capture(path)
    assert not back.complete
    assert "not closed" in back.incomplete_reason
    assert len(back.slices) == 5000 and back.self_check() == []


def test_a_version_2_capture_without_op_counters_still_opens(tmp_path):
    """Format 3 added op_counters; a version-2 file (its ops' counters were arguments) loads with none."""
    import h5py

    path = tmp_path / "v2.h5"
    write_capture(tiny_trace(), path)
    with h5py.File(path, "r+") as f:
        del f["op_counters"]
        f.attrs["format_version"] = 2
    back = load_capture(path)
    assert len(back.tables["op_counters"]) == 0 and len(back.slices) == len(tiny_trace().slices)
