"""Closing a streamed capture in bounded memory writes exactly what the in-memory path writes.

The reference is ``write_capture(build_from_staging(...))`` — TraceBuilder's sort, depths and
renumbering — applied to a copy of the same staging area. Tiny limits force many sorted runs,
several merge passes and blocks that cut through tracks, runs and chunks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from accelview.capture.sim.runtime import api
from accelview.capture.synthetic import SyntheticSpec, synthetic_trace
from accelview.model import Trace, TraceBuilder, TrackKind
from accelview.model import schema as S
from accelview.model.builder import NO_DEPTH
from accelview.model.nesting import _nested_depths, assign_depths, stack_depths
from accelview.model.store import finalize as capture_finalize
from accelview.model.store import writer as capture_writer
from accelview.model.store.depth_stream import store_with_depths
from accelview.model.store.extsort import ExternalSorter, SortLimits, concat
from accelview.model.store.finalize import FinalizeLimits
from accelview.model.store.format import CHUNK_ROWS
from accelview.model.store.h5io import H5File
from accelview.model.store.reader import load_capture, open_capture
from accelview.model.store.scratch import ColumnStore, Scratch
from accelview.model.store.writer import CaptureWriter, build_from_staging, write_capture
from factories import empty_trace, tiny_trace

TINY = FinalizeLimits(SortLimits(run_rows=50, merge_rows=120, fan_in=3), io_rows=70)


def assert_same_files(a: Path, b: Path) -> None:
    """Every dataset of two captures has the same type and values; so do the root attributes
    (but the time of writing, which a deterministic capture leaves out)."""
    with H5File(a) as fa, H5File(b) as fb:
        assert fa.datasets() == fb.datasets()
        for name in fa.datasets():
            x, y = fa.read(name), fb.read(name)
            assert x.dtype == y.dtype, name
            assert np.array_equal(x, y), name
        attrs_a, attrs_b = fa.attrs(), fb.attrs()
    attrs_a.pop("created", None)
    attrs_b.pop("created", None)
    assert attrs_a == attrs_b


def in_memory_close(staged: Path, out: Path, metadata: dict, complete: bool = True, reason: str = "") -> None:
    """What ``CaptureWriter.close`` wrote before it finalized in bounded memory."""
    with H5File(staged) as f:
        trace = build_from_staging(f, metadata)
    trace.complete, trace.incomplete_reason = complete, reason
    write_capture(trace, out, overwrite=True)


def stage(trace: Trace, path: Path, seed: int = 0, limits: FinalizeLimits = TINY,
          keep_depth_of: tuple[int, ...] = (), keep_depth: float = 0.0) -> CaptureWriter:
    """Stream a built trace into a CaptureWriter as a producer would: slices in time order give
    or take some jitter (so not in final order), depths left to compute (but on the tracks in
    ``keep_depth_of`` and for a ``keep_depth`` share of the others), flows and truth pointing
    at the provisional ids, other rows shuffled."""
    rng = np.random.default_rng(seed)
    w = CaptureWriter(path, metadata=trace.metadata, flush_rows=97, limits=limits)
    for s in trace.strings.strings()[1:]:
        w.strings.intern(s)
    for name in ("tracks", "counter_tracks", "clocks"):
        if len(trace.tables[name]):
            w.builder.add_rows(name, trace.tables[name].columns())
    sl = trace.slices.columns()
    order = np.argsort(sl["start_ns"] + rng.integers(0, 5_000, len(sl["start_ns"])), kind="stable")
    provisional = np.empty_like(order)
    provisional[order] = np.arange(len(order))
    staged = {c: v[order] for c, v in sl.items()}
    keep = np.isin(staged["track"], keep_depth_of) | (rng.random(len(order)) < keep_depth)
    staged["depth"] = np.where(keep, staged["depth"], NO_DEPTH).astype(np.uint16)

    def pid(ids: np.ndarray) -> np.ndarray:
        ok = (ids >= 0) & (ids < len(provisional))
        return np.where(ok, provisional[np.where(ok, ids, 0)], ids)

    rows = {
        "slices": staged,
        "flows": {**trace.flows.columns(), "src": pid(trace.flows.src), "dst": pid(trace.flows.dst)},
        "truth_ops": {**trace.truth["truth_ops"].columns(), "slice": pid(trace.truth["truth_ops"].slice)},
    }
    for name in ("counters", "instants", "args", "clock_samples"):
        t = trace.tables[name]
        rows[name] = t.take(rng.permutation(len(t))).columns()
    for name in ("truth_idle", "truth_clocks"):
        t = trace.truth[name]
        rows[name] = t.take(rng.permutation(len(t))).columns()
    batches = 7
    for k in range(batches):  # interleaved like the drains of a run
        for name, cols in rows.items():
            n = len(next(iter(cols.values())))
            lo, hi = n * k // batches, n * (k + 1) // batches
            if hi > lo:
                w.append(name, {c: v[lo:hi] for c, v in cols.items()})
    return w


def close_both_ways(w: CaptureWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, complete: bool = True,
                    reason: str = "") -> Path:
    """Close ``w`` (bounded) and write the in-memory reference from a copy of its staging area,
    taken when close has flushed and closed it."""
    staged = tmp_path / "staged-copy.h5"
    finalize = capture_writer.finalize_staged

    def copy_then_finalize(f: H5File, out: H5File, limits: FinalizeLimits) -> dict[str, int]:
        shutil.copy(f.path, staged)
        return finalize(f, out, limits)

    monkeypatch.setattr(capture_writer, "finalize_staged", copy_then_finalize)
    summary = w.close(complete, reason)
    monkeypatch.undo()
    reference = tmp_path / "reference.h5"
    in_memory_close(staged, reference, dict(w.builder.metadata), complete, reason)
    assert summary.path == w.path and summary.complete == complete and summary.incomplete_reason == reason
    with H5File(reference) as f:
        paths = {s.name: f"{'truth/' if s in S.TRUTH_TABLES else ''}{s.name}/{s.names[-1]}"
                 for s in (*S.TABLES, *S.TRUTH_TABLES)}
        rows = {name: f.length(p) if f.has(p) else 0 for name, p in paths.items()}  # sparse truth: absent when empty
    assert summary.rows == rows
    return reference


def _nested_trace(seed: int) -> Trace:
    """Tracks of properly nested calls, of partly overlapping async work, of zero-length and
    equal-start slices, and one that nests until its last slices overlap partly; flows and
    truth (some dangling), counters, instants, args, clocks."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder()
    tracks = [b.add_track(f"lane {i}", TrackKind.HOST_THREAD) for i in range(4)]
    name = b.strings.intern("call")
    b.add_slices(tracks[0], *_nested_calls(rng, 400), name)
    b.add_slices(tracks[1], np.sort(rng.integers(0, 200_000, 300)), rng.integers(0, 3_000, 300), name)
    b.add_slices(tracks[2], rng.integers(0, 20, 200) * 100, rng.choice([0, 0, 1, 50, 100, 1000], 200), name)
    b.add_slices(tracks[3], *_late_partial_overlap(*_nested_calls(rng, 300)), name)
    b.add_slice(tracks[1], 5, 10, "with args", args={"bytes": 1 << 20, "dir": "H2D"})
    n = len(b.tables_so_far()["slices"])
    for src, dst in rng.integers(0, n, (60, 2)):
        b.add_flow(int(src), int(dst), "dep")
    b.add_flow(-1, 3, "dangling")
    b.add_flow(5, n + 10, "dangling")
    for i in rng.choice(n, 40, replace=False):
        b.add_truth_op(int(i), str(rng.choice(["compute", "memory"])))
    b.add_truth_op(n + 3, "latency")
    ctr = b.add_counter_track("busy", "%")
    b.add_counters(ctr, rng.integers(0, 200_000, 90), rng.random(90))
    for i in range(25):
        b.add_instant(tracks[i % 4], int(rng.integers(0, 200_000)), "mark", args={"i": i, "x": 0.5})
    b.add_clock("host", reference=True)
    b.add_clock_sample(0, 1, 2, 3)
    b.add_truth_idle(tracks[2], 0, 50, "host")
    b.add_truth_idle(tracks[1], 0, 10, "pcie")
    b.add_truth_clock(0, 1.0, 2.0)
    b.metadata["note"] = "nested"
    return b.build()


def _late_partial_overlap(start: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The slices, then three after them of which the second overlaps the first partly and the
    third sits inside the second: nesting depths would put the last two at one depth."""
    t = int((start + dur).max())
    return np.append(start, [t, t + 50, t + 150]), np.append(dur, [100, 150, 10])


def _nested_calls(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` calls that nest properly: each call's children fit inside it, one after another."""
    starts, durs = [], []
    stack = [(0, 10_000_000)]  # open calls: (now, end)
    while len(starts) < n:
        now, end = stack[-1]
        if end - now < 4 or (len(stack) > 1 and rng.random() < 0.3):
            stack.pop()
            if not stack:
                stack = [(end, end + 10_000_000)]
            continue
        s = now + int(rng.integers(0, max(1, (end - now) // 8)))
        d = int(rng.integers(0, max(1, (end - s) // 2)))
        starts.append(s)
        durs.append(d)
        stack[-1] = (s + d, end)
        stack.append((s, s + d))
    return np.array(starts, np.int64), np.array(durs, np.int64)


def _sim_trace() -> Trace:
    with api.session(seed=1) as s:
        dev = api.device(0)
        w = dev.alloc((1024, 1024), "bf16")
        host = api.host_buffer((1024, 1024), "bf16", pinned=True)
        for i in range(6):
            dev.copy(w, host)
            dev.launch("gemm", m=64, n=1024, k=1024, name=f"gemm {i}")
            dev.launch("rmsnorm", tokens=64, hidden=1024)
        dev.synchronize()
    return s.trace()


TRACES = {
    "tiny": tiny_trace,
    "empty": empty_trace,
    "nested": lambda: _nested_trace(0),
    "simulator": _sim_trace,
    "synthetic": lambda: synthetic_trace(SyntheticSpec(n_slices=3000, n_lanes=6, args_every=7)),
}


@pytest.mark.parametrize("make", TRACES.values(), ids=TRACES.keys())
def test_bounded_close_writes_what_the_in_memory_path_writes(tmp_path, monkeypatch, make) -> None:
    w = stage(make(), tmp_path / "c.h5")
    reference = close_both_ways(w, tmp_path, monkeypatch)
    assert_same_files(w.path, reference)


@pytest.mark.parametrize(("make", "limits"), [(lambda: _nested_trace(1), FinalizeLimits()),
                                              (tiny_trace, FinalizeLimits(SortLimits(1, 2, 2), io_rows=1))],
                         ids=["default limits", "one row at a time"])
def test_any_limits_give_the_same_file(tmp_path, monkeypatch, make, limits) -> None:
    w = stage(make(), tmp_path / "c.h5", seed=1, limits=limits, keep_depth_of=(1,), keep_depth=0.2)
    reference = close_both_ways(w, tmp_path, monkeypatch, complete=False, reason="cancelled")
    assert_same_files(w.path, reference)
    with open_capture(w.path) as f:
        assert f.finalized and not f.complete and f.incomplete_reason == "cancelled"


def test_slices_over_many_chunks(tmp_path, monkeypatch) -> None:
    # Anchors at chunk starts inside runs, runs across chunk boundaries, blocks across both.
    n = 2 * CHUNK_ROWS + 1000
    limits = FinalizeLimits(SortLimits(run_rows=5000, merge_rows=3000, fan_in=4), io_rows=7000)
    w = stage(synthetic_trace(SyntheticSpec(n_slices=n, n_lanes=3, seed=4)), tmp_path / "c.h5", seed=4, limits=limits)
    reference = close_both_ways(w, tmp_path, monkeypatch)
    assert_same_files(w.path, reference)
    with H5File(w.path) as f:
        anchors = f.read("slices/anchor_row")
    assert (anchors % CHUNK_ROWS == 0).sum() == 3 and len(anchors) > 3


def test_a_torn_last_append_is_cut_to_whole_rows_like_recovery(tmp_path) -> None:
    w = stage(tiny_trace(), tmp_path / "c.h5")
    w.abandon()
    with H5File(w.path, "r+") as f:  # a writer killed between two columns of one append
        f.append("staging/slices/start_ns", np.array([1, 2], np.int64), 16)
        f.append("staging/counters/track", np.array([0], np.int32), 16)
    reference = tmp_path / "reference.h5"
    in_memory_close(w.path, reference, w.builder.metadata)
    out = tmp_path / "out.h5"
    from accelview.model.store.writer import _root_attrs

    with H5File(w.path) as staged, H5File(out, "w") as f:
        f.set_attrs("/", **_root_attrs(w.builder.metadata, True, "", True))
        rows = capture_finalize.finalize_staged(staged, f, TINY)
    assert rows["slices"] == len(tiny_trace().slices)
    assert_same_files(out, reference)


def test_a_failing_close_keeps_the_staged_capture_and_leaves_nothing_behind(tmp_path, monkeypatch) -> None:
    trace = synthetic_trace(SyntheticSpec(n_slices=500, n_lanes=4))
    w = stage(trace, tmp_path / "c.h5")

    def fail(self, ids):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(capture_finalize._Finalizer, "_remapped_flows", fail)
    with pytest.raises(RuntimeError, match="disk on fire"):
        w.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.h5"]  # no partial file, no scratch folder
    back = load_capture(w.path)
    assert not back.complete and "not closed" in back.incomplete_reason
    assert len(back.slices) == len(trace.slices) and len(back.flows) == len(trace.flows)
    with pytest.raises(RuntimeError, match="already closed"):
        w.close()


# -- the parts ------------------------------------------------------------------------------


@pytest.mark.parametrize("limits", [SortLimits(7, 10, 2), SortLimits(1, 1, 2), SortLimits(1000, 1000, 4)])
def test_external_sort_orders_like_lexsort(tmp_path, limits) -> None:
    rng = np.random.default_rng(0)
    n = 400
    cols = {"a": rng.integers(0, 3, n).astype(np.int32), "b": rng.integers(-5, 5, n), "row": np.arange(n),
            "payload": rng.random(n)}
    cols["a"][100:200] = 1  # a stretch already in order
    with Scratch(tmp_path / "x") as scratch:
        sorter = ExternalSorter(("a", "b", "row"), scratch, limits, track_ranges=True)
        for lo in range(0, n, 33):
            sorter.add({c: v[lo : lo + 33] for c, v in cols.items()})
        got = concat(list(sorter.sorted_blocks()))
        assert sorted(p.name for p in scratch.dir.iterdir()) == []  # runs removed once merged
    order = np.lexsort((cols["b"], cols["a"]))
    for c in cols:
        assert np.array_equal(got[c], cols[c][order]), c
    assert sorter.ranges.get("b") == (-5, 4)


def _nesting_unlike_the_stack(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Clusters of a few slices, far apart, each nesting (no two overlapping slices at one depth
    when each gets the number of slices still open at its start) with other depths than the
    stack walk gives them: the track is given nesting depths, not the stack's."""
    starts, durs = [], []
    while len(starts) < n:
        s, d = np.sort(rng.integers(0, 10, 5)), rng.integers(0, 8, 5)
        o = np.lexsort((-d, s))
        s, e = s[o], s[o] + d[o]
        nested = _nested_depths(s, e)
        if nested is not None and not np.array_equal(nested, stack_depths(s.tolist(), e.tolist())):
            starts.extend((s + 100 * len(starts)).tolist())
            durs.extend(d[o].tolist())
    return np.array(starts), np.array(durs)


DEPTH_CASES = {
    "nesting unlike the stack": lambda rng: _nesting_unlike_the_stack(rng, 200),
    "nested": lambda rng: _nested_calls(rng, 500),
    "partial overlaps": lambda rng: (np.sort(rng.integers(0, 100_000, 500)), rng.integers(0, 2_000, 500)),
    "zero length, equal starts": lambda rng: (rng.integers(0, 30, 500) * 10, rng.choice([0, 0, 1, 10, 40], 500)),
    "nests until the end": lambda rng: _late_partial_overlap(*_nested_calls(rng, 497)),
    "back to back": lambda rng: (np.arange(500) * 10, np.full(500, 10)),
}


@pytest.mark.parametrize("block", [1, 3, 64, 10_000])
@pytest.mark.parametrize("case", DEPTH_CASES.values(), ids=DEPTH_CASES.keys())
def test_streamed_depths_are_assign_depths(tmp_path, case, block) -> None:
    rng = np.random.default_rng(block)
    parts = [case(rng) for _ in range(3)]
    start = np.concatenate([p[0] for p in parts]).astype(np.int64)
    dur = np.concatenate([p[1] for p in parts]).astype(np.int64)
    track = np.repeat(np.arange(3, dtype=np.int32), [len(p[0]) for p in parts])
    shuffle = rng.permutation(len(start))
    track, start, dur = track[shuffle], start[shuffle], dur[shuffle]
    expected = assign_depths(track, start, dur)
    row = np.arange(len(start))
    order = np.lexsort((row, -dur, start, track))
    cols = {"track": track[order], "start_ns": start[order], "dur_ns": dur[order],
            "depth": np.zeros(len(order), np.uint16), "row": row[order]}
    with Scratch(tmp_path / "x") as scratch:
        store = ColumnStore(scratch, {c: v.dtype for c, v in cols.items()})
        store_with_depths(({c: v[lo : lo + block] for c, v in cols.items()} for lo in range(0, len(order), block)),
                          store, io_rows=block)
        got = store.read(0, store.rows)
    depth = np.empty(len(order), np.uint16)
    depth[got["row"]] = got["depth"]
    assert np.array_equal(depth, expected)


def test_streamed_depths_beyond_the_limit_are_capped_like_the_stack(tmp_path) -> None:
    n = 65_540  # each slice inside the previous one: depths past 65535 stay at 65535
    start, dur = np.arange(n, dtype=np.int64), (2 * n - 2 * np.arange(n)).astype(np.int64)
    cols = {"track": np.zeros(n, np.int32), "start_ns": start, "dur_ns": dur, "depth": np.zeros(n, np.uint16)}
    with Scratch(tmp_path / "x") as scratch:
        store = ColumnStore(scratch, {c: v.dtype for c, v in cols.items()})
        store_with_depths([{c: v[lo : lo + 10_000] for c, v in cols.items()} for lo in range(0, n, 10_000)], store,
                          io_rows=4096)
        got = store.read(0, n)["depth"]
    assert np.array_equal(got, assign_depths(cols["track"], start, dur))
    assert got[-1] == 65535


def test_store_reads_back_what_was_appended(tmp_path) -> None:
    with Scratch(tmp_path / "x") as scratch:
        store = ColumnStore(scratch, {"a": np.int16, "b": np.float64, "c": np.int64})
        store.append({"a": np.arange(5), "b": np.linspace(0, 1, 5), "c": -np.arange(5)})
        store.append({"a": np.arange(3), "b": np.zeros(3), "c": np.ones(3)})
        store.overwrite("a", 4, np.array([40, 41]))
        got = store.read(3, 100)
        assert got["a"].tolist() == [3, 40, 41, 1, 2] and got["c"].tolist() == [-3, -4, 1, 1, 1]
        assert got["b"].dtype == np.float64 and store.rows == 8
    assert not scratch.dir.exists()


def test_scratch_folders_of_dead_processes_are_removed(tmp_path: Path) -> None:
    """A finalizer killed mid-way leaves its scratch folder; the next one beside the same file
    removes it, but not a live process's nor another file's."""
    import os
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = tmp_path / f".c.h5.{gone}.abcd.scratch"
    live = tmp_path / f".c.h5.{os.getpid()}.efgh.scratch"
    other = tmp_path / f".d.h5.{gone}.ijkl.scratch"
    numbered = tmp_path / f".c.h5.{gone}.{os.getpid()}.mnop.scratch"  # a live one of a file named c.h5.<gone>
    for d in (orphan, live, other, numbered):
        d.mkdir()
        (d / "0.keys").write_bytes(b"x")
    with Scratch(tmp_path / "c.h5") as scratch:
        assert scratch.dir.name.startswith(f".c.h5.{os.getpid()}.")
        assert not orphan.exists() and live.exists() and other.exists() and numbered.exists()
    assert not scratch.dir.exists()
