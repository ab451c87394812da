"""The parts of bounded-memory finalizing: scratch stores, the external sort, streamed depths."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.model.depth_stream import store_with_depths
from accelview.model.extsort import ExternalSorter, SortLimits, concat
from accelview.model.nesting import _nested_depths, _stack_depths, assign_depths
from accelview.model.scratch import ColumnStore, Scratch


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


@pytest.mark.parametrize("limits", [SortLimits(7, 10, 2), SortLimits(1, 1, 2), SortLimits(1000, 1000, 4)])
def test_external_sort_orders_like_lexsort(tmp_path, limits) -> None:
    rng = np.random.default_rng(0)
    n = 400
    cols = {"a": rng.integers(0, 3, n).astype(np.int32), "b": rng.integers(-5, 5, n), "row": np.arange(n),
            "payload": rng.random(n)}
    cols["a"][100:200] = 1  # a stretch already in order
    with Scratch(tmp_path / "x") as scratch:
        sorter = ExternalSorter(("a", "b", "row"), scratch, limits)
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
        if nested is not None and not np.array_equal(nested, _stack_depths(s.tolist(), e.tolist())):
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
