"""The filter field over the lane tree hides non-matching lanes in the tree and the timeline."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from accelview.app.lane_tree import LanePanel, LaneTreeView
from accelview.app.state import ViewState
from factories import tiny_trace
from PySide6.QtCore import QModelIndex


def shown_rows(tree: LaneTreeView) -> set[str]:
    """Names of the tree's rows that are not hidden."""
    out, stack = set(), [QModelIndex()]
    while stack:
        parent = stack.pop()
        for row in range(tree.lanes.rowCount(parent)):
            ix = tree.lanes.index(row, 0, parent)
            if not tree.isRowHidden(row, parent):
                out.add(tree.lanes.data(ix))
                stack.append(ix)
    return out


def test_typing_a_filter_hides_other_lanes_in_tree_and_timeline_and_clearing_restores(qtbot):
    st = ViewState()
    st.set_trace(tiny_trace())
    tree = LaneTreeView(st)
    panel = LanePanel(tree)
    qtbot.addWidget(panel)
    before = {st.trace.track_name(ln.track) for ln in st.layout.lanes}
    qtbot.keyClicks(panel.filter, "matrix")
    assert shown_rows(tree) == {"hôst-α", "device 0", "matrix 0"}
    on_timeline = {st.trace.track_name(ln.track) for ln in st.layout.lanes}
    assert "matrix 0" in on_timeline and not {"runtime API", "queue 0", "PCIe H2D"} & on_timeline
    panel.filter.clear()
    assert {st.trace.track_name(ln.track) for ln in st.layout.lanes} == before
    assert "runtime API" in shown_rows(tree)
