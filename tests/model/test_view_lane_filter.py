"""Filtering lanes by name keeps the matches, their parents and their children."""

from __future__ import annotations

from accelview.model.view.lanes import filter_lanes
from factories import tiny_trace


def test_a_filter_keeps_matches_with_their_parents_and_children_and_opens_the_parents():
    tr = tiny_trace()
    name = {tr.track_name(t): t for t in range(len(tr.tracks))}
    hide, opened = filter_lanes(tr, "MATRIX")
    shown = {tr.track_name(t) for t in name.values()} - {tr.track_name(t) for t in hide}
    assert {"matrix 0", "device 0", "hôst-α"} <= shown  # the match and the groups it sits in
    assert not {"runtime API", "queue 0", "PCIe H2D"} & shown
    assert name["device 0"] in opened and name["hôst-α"] in opened
    hide, _ = filter_lanes(tr, "main")
    assert name["runtime API"] not in hide  # a matched thread keeps its children


def test_an_empty_filter_hides_nothing():
    assert filter_lanes(tiny_trace(), "  ") == (set(), set())
