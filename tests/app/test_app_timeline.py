"""The timeline widget: zoom and pan by keys, wheel and drag; select a slice and see its chain
and details; range select with per-lane busy %; fit and mark; counter panels follow."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from accelview.app.details import DetailsPanel
from accelview.app.main import make_main_window
from accelview.app.paint import GUTTER_W, RULER_H
from accelview.app.state import ViewState
from accelview.capture import sim
from accelview.capture.synthetic import demo_trace
from accelview.model.text.values import format_count, format_duration
from accelview.model.view.lanes import LaneLayout
from PySide6.QtCore import QPoint, QPointF, QRect, Qt
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QWheelEvent
from PySide6.QtWidgets import QApplication


@pytest.fixture
def win(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    w = make_main_window("dark", QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    qtbot.waitExposed(w)
    w.set_trace(demo_trace(steps=3, layers=2))
    return w


def frame(w) -> QImage:
    """The timeline as it paints now."""
    return w.timeline.grab().toImage()


def gutter(w) -> QImage:
    """The lane-name gutter of the timeline as it paints now."""
    return frame(w).copy(0, RULER_H, GUTTER_W - 1, w.timeline.height() - RULER_H)


def pixels_of(img: QImage, colour: str) -> int:
    """How many pixels of ``img`` have exactly this colour."""
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    px = np.frombuffer(img.constBits(), np.uint32).reshape(img.height(), img.bytesPerLine() // 4)[:, : img.width()]
    return int((px == QColor(colour).rgba()).sum())


def widget_pos(w, sid):
    """Centre of a slice on the timeline widget."""
    r = w.timeline.painter.slice_rect(sid, w.timeline.vbar.value())
    return r.center()


def mouse(widget, kind, pos, button=Qt.MouseButton.LeftButton, buttons=None, mods=Qt.KeyboardModifier.NoModifier):
    buttons = button if buttons is None else buttons
    ev = QMouseEvent(kind, QPointF(pos), QPointF(widget.mapToGlobal(QPoint(int(pos.x()), int(pos.y())))),
                     button, buttons, mods)
    QApplication.sendEvent(widget, ev)


def drag(widget, a, b, mods=Qt.KeyboardModifier.NoModifier):
    mouse(widget, QMouseEvent.Type.MouseButtonPress, a, mods=mods)
    for f in (0.3, 0.7, 1.0):
        p = QPointF(a.x() + (b.x() - a.x()) * f, a.y() + (b.y() - a.y()) * f)
        mouse(widget, QMouseEvent.Type.MouseMove, p, Qt.MouseButton.NoButton, Qt.MouseButton.LeftButton, mods)
    mouse(widget, QMouseEvent.Type.MouseButtonRelease, b, buttons=Qt.MouseButton.NoButton, mods=mods)


def test_keys_zoom_and_pan(win, qtbot):
    st = win.state
    span = st.scale.span
    qtbot.keyClick(win.timeline, Qt.Key.Key_W)
    assert st.scale.span < span
    qtbot.keyClick(win.timeline, Qt.Key.Key_S)
    qtbot.keyClick(win.timeline, Qt.Key.Key_S)
    assert st.scale.span > span * 0.99
    qtbot.keyClick(win.timeline, Qt.Key.Key_W)
    qtbot.keyClick(win.timeline, Qt.Key.Key_W)
    t0 = st.scale.r0
    qtbot.keyClick(win.timeline, Qt.Key.Key_D)
    assert st.scale.r0 > t0
    qtbot.keyClick(win.timeline, Qt.Key.Key_A)
    assert st.scale.r0 == pytest.approx(t0)


def test_wheel_zooms_at_cursor_and_drag_pans(win):
    st, tl = win.state, win.timeline
    pos = QPointF(GUTTER_W + 300, RULER_H + 40)
    t_under = st.scale.t_of(300)
    ev = QWheelEvent(pos, QPointF(tl.mapToGlobal(pos.toPoint())), QPoint(0, 0), QPoint(0, 240),
                     Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    span = st.scale.span
    QApplication.sendEvent(tl, ev)
    assert st.scale.span < span / 1.5
    assert st.scale.t_of(300) == pytest.approx(t_under, rel=1e-9, abs=1.0)
    t0 = st.scale.r0
    drag(tl, QPointF(GUTTER_W + 500, RULER_H + 300), QPointF(GUTTER_W + 400, RULER_H + 300))
    assert st.scale.r0 == pytest.approx(t0 + 100 * st.scale.ns_per_px, rel=1e-6)
    assert st.selected == -1 and st.range is None


def test_click_selects_slice_with_chain_and_details(win, qtbot):
    st, tr = win.state, win.state.trace
    k = tr.strings.lookup("attention")
    sid = int(np.flatnonzero(tr.slices.name == k)[0])
    st.show_window(float(tr.slices.start_ns[sid]) - 60_000, float(tr.slices.start_ns[sid]) + 60_000)
    pos = widget_pos(win, sid)
    mouse(win.timeline, QMouseEvent.Type.MouseMove, pos, Qt.MouseButton.NoButton, Qt.MouseButton.NoButton)
    assert win.timeline.painter.hover_sid == sid  # outlined under the mouse, with a tooltip
    mouse(win.timeline, QMouseEvent.Type.MouseButtonPress, pos)
    mouse(win.timeline, QMouseEvent.Type.MouseButtonRelease, pos, buttons=Qt.MouseButton.NoButton)
    assert st.selected == sid
    lanes = {tr.track_name(int(tr.slices.track[c])) for c in st.chain}
    assert lanes == {"MainThread", "driver queue 0", "matrix engine"}
    assert len(st.chain_flows) == 2
    assert "attention" in win.details.texts()
    assert "attention" in win.selection_label.text()
    # One duration, one way: the status bar, the tooltip and Details print what the report prints.
    dur = int(tr.slices.dur_ns[sid])
    assert f" · {format_duration(dur)} · " in win.selection_label.text()
    assert win.timeline._tooltip(sid).split("<br>")[1].startswith(f"{format_duration(dur)} · at ")
    details = dict(zip(win.details.texts(0), win.details.texts(), strict=True))
    assert details["Duration"] == f"{format_duration(dur)}  ({format_count(dur)} ns)"
    chain_rows = win.details.items.item(win.details.items.rowCount() - 1, 0)
    assert chain_rows.text() == "Chain" and chain_rows.rowCount() == 3
    other = chain_rows.child(0, 1).index()
    win.details.activated.emit(other)
    assert st.selected == int(st.chain[0])
    assert "accelLaunchKernel" in win.selection_label.text()
    # Keys step along the chain: ] goes to the next slice by start time.
    first = int(st.chain[0])
    st.select(first)
    qtbot.keyClick(win.timeline, Qt.Key.Key_BracketRight)
    assert st.selected == int(st.chain[1])
    # The frame shows the chain (arrows and outlines) until the selection is cleared.
    with_chain = frame(win)
    qtbot.keyClick(win.timeline, Qt.Key.Key_Escape)
    assert st.selected == -1
    assert frame(win) != with_chain


def test_shift_drag_selects_range_fit_and_mark(win, qtbot):
    st = win.state
    names_only = gutter(win)
    a, b = QPointF(GUTTER_W + 200, RULER_H + 100), QPointF(GUTTER_W + 500, RULER_H + 100)
    drag(win.timeline, a, b, Qt.KeyboardModifier.ShiftModifier)
    assert st.range is not None
    r0, r1 = st.range
    assert r1 - r0 == pytest.approx(300 * st.scale.ns_per_px, rel=1e-6)
    assert "range" in win.range_label.text()
    main = next(t for t in range(len(st.trace.tracks)) if st.trace.track_name(t) == "MainThread")
    assert 0 < st.lod.busy_fraction(main, r0, r1) <= 1
    assert gutter(win) != names_only  # the per-lane busy % beside the names
    qtbot.keyClick(win.timeline, Qt.Key.Key_F)
    assert st.scale.r0 < r0 < r1 < st.scale.r1
    assert st.scale.span == pytest.approx((r1 - r0) * 1.04, rel=1e-6)
    qtbot.keyClick(win.timeline, Qt.Key.Key_M)
    assert st.marks == [(r0, r1)]
    marked = frame(win)
    qtbot.keyClick(win.timeline, Qt.Key.Key_M, Qt.KeyboardModifier.ShiftModifier)
    assert st.marks == []
    assert frame(win) != marked


def test_wheel_over_counters_zooms_the_timeline(win):
    st = win.state
    span = st.scale.span
    pos = QPointF(GUTTER_W + 200, 20)
    ev = QWheelEvent(pos, QPointF(win.counters.mapToGlobal(pos.toPoint())), QPoint(0, 0), QPoint(0, 120),
                     Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(win.counters, ev)
    assert st.scale.span < span
    mouse(win.counters, QMouseEvent.Type.MouseMove, pos, Qt.MouseButton.NoButton, Qt.MouseButton.NoButton)
    assert win.counters.cursor == pytest.approx(st.scale.t_of(200))


def test_counter_panel_follows_the_timeline(win):
    st = win.state
    panel = win.counters
    assert panel.model.checked
    ts, vals = panel.model.series(panel.model.checked[0])
    i = int(np.argmax(vals))
    t = float(ts[i])
    for span in (2e6, 2e5):
        st.show_window(t - span / 2, t + span / 2, pad=0)
        img = QImage(panel.width(), panel.height(), QImage.Format.Format_RGB32)
        p = QPainter(img)
        panel.paint(p, img.width(), img.height())
        p.end()
        x = int(GUTTER_W + st.scale.x_of(t - st.origin)) + 1
        bg = img.pixelColor(x, 2)
        col = [img.pixelColor(x, y) for y in range(8, 50)]
        assert any(c != bg for c in col), f"no counter drawn at the spike's x for span {span}"
        panel.set_cursor(t - st.origin)
        p = QPainter(img)
        panel.paint(p, img.width(), img.height())  # with the value under the cursor
        p.end()
        # The timeline maps the same time to the same x: both draw from the one shared scale.
        assert win.timeline.painter.state.scale is panel.state.scale


def test_search_counts_highlights_and_steps(win, qtbot):
    st = win.state
    qtbot.keyClicks(win.search.edit, "layernorm")
    qtbot.waitUntil(lambda: st.search_text == "layernorm", timeout=3000)  # searched once typing pauses
    n = len(st.hits)
    assert n == 2 * 3 * 2  # a kernel and its submission per layer and step
    assert win.search.count.text() == f"{n} results"
    qtbot.keyClick(win.search.edit, Qt.Key.Key_Return)
    assert st.selected == int(st.hits[0])
    assert win.search.count.text() == f"1 / {n}"
    qtbot.keyClick(win.search.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert st.selected == int(st.hits[-1])
    sl = st.trace.slices
    assert st.scale.r0 <= sl.start_ns[st.selected] - st.origin <= st.scale.r1
    lanes = QRect(GUTTER_W, RULER_H, win.timeline.width() - GUTTER_W, win.timeline.height() - RULER_H)
    assert pixels_of(frame(win).copy(lanes), win.timeline.painter.theme.search) > 0  # the hits are outlined
    win.search.edit.clear()
    qtbot.waitUntil(lambda: len(st.hits) == 0, timeout=3000)
    assert win.search.count.text() == ""
    assert pixels_of(frame(win).copy(lanes), win.timeline.painter.theme.search) == 0


def test_lane_tree_hides_and_collapses(win):
    st = win.state
    model = win.lane_view.lanes
    root = model.index(0, 0)
    host = model.track_of(root)
    n = len(st.layout.lanes)
    child = model.index(0, 0, root)
    model.setData(child, Qt.CheckState.Unchecked.value, Qt.ItemDataRole.CheckStateRole)
    assert model.track_of(child) in st.hidden and len(st.layout.lanes) < n
    model.setData(child, Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole)
    assert len(st.layout.lanes) == n
    win.lane_view.collapse(root)
    assert host in st.collapsed and len(st.layout.lanes) < n
    win.lane_view.expand(root)
    assert len(st.layout.lanes) == n
    # Clicking the group's header on the timeline collapses it in the tree too.
    y = st.layout.lane_of(host, -1).y + RULER_H + 5
    mouse(win.timeline, QMouseEvent.Type.MouseButtonPress, QPointF(20, y))
    assert host in st.collapsed and not win.lane_view.isExpanded(root)


def test_lane_tree_show_only_and_show_all(win):
    st = win.state
    model = win.lane_view.lanes
    root = model.index(0, 0)
    thread = model.index(0, 0, model.index(0, 0, root))  # host → process → a thread
    st.collapsed.add(model.track_of(thread.parent()))  # showing only a folded lane opens its group
    st.relayout()
    win.lane_view.show_only(thread)
    assert model.track_of(thread.parent()) not in st.collapsed
    n = len(LaneLayout(st.trace, st.lod).lanes)
    shown = {ln.track for ln in st.layout.lanes}
    assert model.track_of(thread) in shown and len(st.layout.lanes) < n
    assert all(t in shown for t in (model.track_of(root), model.track_of(thread.parent())))
    win.lane_view.show_all()
    assert len(st.layout.lanes) == n
    device = model.index(1, 0)  # a group: its units stay visible
    win.lane_view.show_only(device)
    kids = {model.track_of(model.index(r, 0, device)) for r in range(model.rowCount(device))}
    assert kids and kids <= {ln.track for ln in st.layout.lanes}
    win.lane_view.show_all()


def test_lane_tree_reorders_lanes(win, qtmodeltester):
    st = win.state
    model = win.lane_view.lanes
    root = model.index(0, 0)
    first, second = model.index(0, 0, root), model.index(1, 0, root)
    a, b = model.track_of(first), model.track_of(second)
    ya = st.layout.lane_of(a, 0 if st.lod.depth_count(a) else -1).y
    yb = st.layout.lane_of(b, 0 if st.lod.depth_count(b) else -1).y
    assert ya < yb
    assert model.move(second, -1)
    assert model.track_of(model.index(0, 0, root)) == b
    assert st.layout.lane_of(b, 0 if st.lod.depth_count(b) else -1).y < st.layout.lane_of(
        a, 0 if st.lod.depth_count(a) else -1).y
    assert not model.move(model.index(0, 0, root), -1)
    qtmodeltester.check(model)


def test_counter_area_hidden_without_counters_and_instants_get_a_row(win):
    from accelview.model import TraceBuilder, TrackKind

    b = TraceBuilder()
    host = b.add_track("host", TrackKind.HOST)
    marks = b.add_track("markers", TrackKind.OTHER, host)
    b.add_slice(b.add_track("thread", TrackKind.HOST_THREAD, host), 0, 1000, "work")
    b.add_instant(marks, 500, "sync")
    win.set_trace(b.build())
    assert not win.counters.isVisible()
    assert win.state.layout.lane_of(marks, 0) is not None
    assert pixels_of(frame(win), win.timeline.painter.theme.accent) > 0  # the instant's marker
    win.set_trace(demo_trace(steps=1, layers=1))
    assert win.counters.isVisible()


def test_wheel_zoom_frames_resample_then_refine(win, qtbot):
    tl = win.timeline
    tl.grab()  # coverage cached at this zoom
    pos = QPointF(GUTTER_W + 300, RULER_H + 40)
    ev = QWheelEvent(pos, QPointF(tl.mapToGlobal(pos.toPoint())), QPoint(0, 0), QPoint(0, 120),
                     Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(tl, ev)
    tl.grab()
    assert tl.painter.stale and tl._refine.isActive()  # drawn from the last zoom's coverage
    qtbot.waitUntil(lambda: not tl._refine.isActive(), timeout=2000)
    tl.grab()
    assert not tl.painter.stale


def test_a_fan_of_flows_to_one_lane_is_one_arrow_and_a_bracket(win, qtbot, monkeypatch):
    """A submission feeding many nodes on one lane (a graph replay) draws one arrow there and a
    bracket over the rest; a few flows to another lane stay arrows each."""
    from accelview.app.overlays import FAN, OverlayPainter
    from accelview.model import TraceBuilder, TrackKind

    b = TraceBuilder()
    host = b.add_track("host", TrackKind.HOST, host="h")
    queue = b.add_track("queue 0", TrackKind.DRIVER_QUEUE, parent=host, host="h", device=0)
    mxu = b.add_track("matrix", TrackKind.EXEC_UNIT, parent=host, host="h", device=0)
    vec = b.add_track("vector", TrackKind.EXEC_UNIT, parent=host, host="h", device=0)
    sub = b.add_slice(queue, 0, 1_000, "submit graph", "driver")
    for i in range(FAN + 4):
        b.add_flow(sub, b.add_slice(mxu, 2_000 + i * 1_000, 800, f"node {i}", "kernel"), "execute")
    for i in range(2):
        b.add_flow(sub, b.add_slice(vec, 2_500 + i * 3_000, 400, f"vec {i}", "kernel"), "execute")
    win.set_trace(b.build(source="fan"))
    st = win.state
    sid = int(np.flatnonzero(st.trace.slices.name == st.trace.strings.lookup("submit graph"))[0])
    st.select(sid)
    st.show_window(0, 20_000, pad=0)
    arrows = []
    draw = OverlayPainter._arrow
    monkeypatch.setattr(OverlayPainter, "_arrow", lambda self, p, a, b_: arrows.append(b_) or draw(self, p, a, b_))
    win.timeline.grab()
    assert len(st.chain_flows) == FAN + 6
    assert len(arrows) == 3  # one to the first matrix node, one to each vector op


def test_details_show_an_ops_counters_among_its_arguments(qtbot):
    """A simulated op's hardware counters (the op_counters table) are listed with its arguments,
    numbers with separators (FLOPs too, though stored as a float)."""
    with sim.session(seed=1) as s:
        sim.device(0).launch("gemm", m=64, n=4096, k=4096)
        sim.device(0).synchronize()
    trace = s.trace()
    state = ViewState()
    panel = DetailsPanel(state)
    qtbot.addWidget(panel)
    state.set_trace(trace)
    sid = int(np.flatnonzero(trace.slices.name == trace.strings.lookup("gemm"))[0])
    state.select(sid)
    top = [panel.items.item(i, 0) for i in range(panel.items.rowCount())]
    args = next(item for item in top if item.text() == "Args")
    shown = {args.child(r, 0).text(): args.child(r, 1).text() for r in range(args.rowCount())}
    counters = trace.slice_args(sid)
    assert shown["m"] == "64" and shown["elapsed_cycles"] == f"{counters['elapsed_cycles']:,}"
    assert shown["flops"] == f"{int(counters['flops']):,}" and "," in shown["flops"]
    assert 0 < float(shown["burst_efficiency"]) <= 1
