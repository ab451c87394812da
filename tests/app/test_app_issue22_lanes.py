"""Issue 22 defect 16 in the window: a 2-rank Kineto trace opens on its 1.24 s of activity, not
the profiler's 3.37 s span, with each rank's CPU process folded to a painted busy summary row."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from accelview.app.paint import GUTTER_W, RULER_H
from accelview.model import TraceBuilder, TrackKind
from accelview.model.view.lanes import INSTANTS, SUMMARY
from kineto_traces import imported, needs_traces
from PySide6.QtCore import Qt
from timeline_widgets import pixels, shown_timeline


@needs_traces
def test_two_ranks_open_on_their_activity_with_processes_folded(qtbot):
    st, w = shown_timeline(qtbot, 1400, 780)
    st.set_trace(imported("a100_128rank_sampled"))
    assert st.scale.span < 1.3e9  # the activity (1.24 s), not the 3.37 s profiler span
    assert st.scale.with_window(-1e12, 1e12).span > 3e9  # panning and Ctrl+0 still reach it all
    summaries = [ln for ln in st.layout.lanes if ln.depth == SUMMARY]
    assert len(summaries) == 2 and st.layout.height < 780 - RULER_H  # GPU 1 is on screen
    px = pixels(w.grab().toImage())
    bg = px[RULER_H + summaries[0].y + 9, -3]  # the last column lies past the activity's end
    row = px[RULER_H + summaries[0].y + 9, GUTTER_W + 20: -40]
    assert (row != bg).mean() > 0.5  # the folded process paints its threads' busy time


def stepped(with_instants: bool):
    """A thread with a labelled 10 ms step and, maybe, instants all along its label."""
    b = TraceBuilder()
    host = b.add_track("host", TrackKind.HOST, host="h")
    th = b.add_track("thread", TrackKind.HOST_THREAD, parent=host, host="h")
    b.add_slice(th, 0, 10_000_000, "ProfilerStep#2")
    if with_instants:
        for i in range(40):
            b.add_instant(th, i * 250_000, "marker")
    return b.build(source="stepped"), th


def test_instant_markers_hide_no_slice_or_label(qtbot):
    """The top slice row paints the same with and without instants on its track: the markers
    have their own row above it."""
    rows = []
    for with_instants in (False, True):
        st, w = shown_timeline(qtbot, 1000, 300)
        trace, th = stepped(with_instants)
        st.set_trace(trace)
        ln = st.layout.lane_of(th, 0)
        y = RULER_H + ln.y
        rows.append(pixels(w.grab().toImage())[y: y + ln.h, GUTTER_W:])
    assert rows[0].shape == rows[1].shape and (rows[0] == rows[1]).all()
    assert st.layout.lane_of(th, INSTANTS) is not None  # and the markers are drawn, in their row
    mk = st.layout.lane_of(th, INSTANTS)
    marks = pixels(w.grab().toImage())[RULER_H + mk.y: RULER_H + mk.y + mk.h, GUTTER_W:]
    assert (marks != marks[0, -1]).any()


def test_a_long_lane_name_is_elided_in_the_gutter_and_whole_in_its_tooltip(qtbot):
    from PySide6.QtCore import QPointF

    long_name = "launcher_test_mtia#native-mainloop (pid 3100453) with a long tail"
    b = TraceBuilder()
    proc = b.add_track(long_name, TrackKind.PROCESS, host="h")
    th = b.add_track("thread 1", TrackKind.HOST_THREAD, parent=proc, host="h")
    b.add_slice(th, 0, 1_000, "step")
    st, w = shown_timeline(qtbot, 900, 300)
    st.set_trace(b.build())
    header = next(ln for ln in st.layout.lanes if ln.track == proc)
    y = RULER_H + header.y + header.h / 2 - w.vbar.value()
    assert w._lane_name_at(QPointF(20, y)) == long_name
    assert w._lane_name_at(QPointF(GUTTER_W + 5, y)) == ""  # only over the names
    shown = w.painter.fm_bold.elidedText("▾ " + long_name, Qt.TextElideMode.ElideRight, GUTTER_W - 14)
    assert shown.endswith("…") and len(shown) < len(long_name)
