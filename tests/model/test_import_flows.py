"""Binding flow endpoints to slices: the vectorised look-ups against a brute-force reading."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.model.importers.pipeline import flows
from accelview.model.importers.pipeline.flows import SliceIndex
from accelview.model.nesting import start_order


def brute(thread: np.ndarray, start: np.ndarray, dur: np.ndarray, ids: np.ndarray,
          q_thread: int, ts: int) -> tuple[int, int]:
    """(deepest slice containing ts, first slice starting at or after ts) of a thread, by scanning."""
    order = start_order(thread, start, dur)
    inside, after = -1, -1
    for k in order.tolist():
        if thread[k] != q_thread:
            continue
        s, e = int(start[k]), int(start[k] + dur[k])
        if s <= ts < e or (s == e == ts):
            inside = int(ids[k])  # later in (start, longest first) order is deeper
        if s >= ts and after < 0:
            after = int(ids[k])
    return inside, after


@pytest.mark.parametrize("huge", [False, True])
def test_enclosing_and_next_starting_match_a_scan(monkeypatch: pytest.MonkeyPatch, huge: bool) -> None:
    """Random threads of nested, overlapping and zero-length slices, queries inside, between and
    outside them (and threads with none); ``huge`` spans take the search without a packed key."""
    monkeypatch.setattr(flows, "WALK_LIMIT", 3)  # long runs of ended slices reach the search
    rng = np.random.default_rng(7)
    for _ in range(40):
        n = int(rng.integers(1, 60))
        thread = rng.integers(0, 4, n)
        far = (rng.random(n) < 0.5) * 2**61 if huge else 0  # a span too wide to pack with the thread
        start = rng.integers(0, 200, n) + far
        dur = rng.integers(0, 40, n) * (rng.random(n) < 0.9)
        ids = rng.permutation(n) + 100
        index = SliceIndex(thread, start, dur, ids)
        q_thread = rng.integers(0, 5, 50)
        q_ts = rng.integers(-10, 260, 50) + ((rng.random(50) < 0.5) * 2**61 if huge else 0)
        inside, after = index.enclosing(q_thread, q_ts), index.next_starting(q_thread, q_ts)
        for i in range(50):
            assert (inside[i], after[i]) == brute(thread, start, dur, ids, int(q_thread[i]), int(q_ts[i]))
        asked = q_thread[q_thread % 2 == 0]  # an index of the asked threads only answers the same for them
        part = SliceIndex(thread, start, dur, ids, np.unique(asked))
        assert np.array_equal(part.enclosing(asked, q_ts[q_thread % 2 == 0]), inside[q_thread % 2 == 0])
        assert np.array_equal(part.next_starting(asked, q_ts[q_thread % 2 == 0]), after[q_thread % 2 == 0])
