"""Issue 22, the timeline as a new user finds it: deep zoom paints solid bars with labels,
next/previous result frames the result, the selection stands out from its chain and ``[``/``]``
move the view, the ruler's labels are whole and relative at deep zoom, held W/S accelerate."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from accelview.app.paint import GUTTER_W, RULER_H
from accelview.app.theme import DARK
from accelview.model import TraceBuilder, TrackKind
from timeline_widgets import pixels, shown_timeline

EPOCH = 1_700_000_000_000_000_000


@pytest.fixture
def tl(qtbot):
    return shown_timeline(qtbot, 1200, 500)[1]


def haystack():
    """30 ms of host work with one 5 µs 'needle' kernel in the middle of a device lane."""
    b = TraceBuilder()
    host = b.add_track("host", TrackKind.HOST, host="h")
    mxu = b.add_track("matrix", TrackKind.EXEC_UNIT, parent=host, host="h", device=0)
    b.add_slice(host, EPOCH, 30_000_000, "step")
    b.add_slice(mxu, EPOCH + 1_000, 80_000, "gate_up_proj")
    b.add_slice(mxu, EPOCH + 15_000_000, 5_000, "needle")
    return b.build(source="haystack")


@pytest.mark.parametrize("span", [373, 1])
def test_a_slice_covering_the_view_paints_solid_down_to_one_ns(tl, span):
    st = tl.state
    st.set_trace(haystack())
    st.show_relative(40_000, 40_000 + span, pad=0.0)
    assert st.scale.span == pytest.approx(span)
    img = pixels(tl.grab().toImage())
    ln = st.layout.lane_of(1, 0)
    y = int(RULER_H + ln.y + ln.h // 2)
    row = img[y, GUTTER_W + 150 : tl.width() - 2]  # right of the label
    assert len(np.unique(row)) == 1  # one solid bar, no stripes
    assert row[0] != np.uint32(0xFF000000 | int(DARK.bg[1:], 16))  # and not empty
    label = img[int(RULER_H + ln.y + 2) : int(RULER_H + ln.y + ln.h - 3), GUTTER_W + 2 : GUTTER_W + 90]
    text = (label != row[0]).sum()
    assert text > 40  # the name is written on it
    bar = img[int(RULER_H + ln.y + 2) : int(RULER_H + ln.y + ln.h - 3), GUTTER_W + 300 : tl.width() - 2]
    assert (bar != row[0]).sum() == 0  # and nothing else is: no grid lines over the slice


def test_next_result_zooms_to_show_it_at_a_readable_width(tl):
    st = tl.state
    st.set_trace(haystack())  # fitted: 30 ms of view, the 5 µs needle is under a pixel wide
    assert st.search("needle") == 1
    sid = st.step_hit(1)
    r = tl.painter.slice_rect(sid, 0)
    assert r.width() >= 0.2 * st.scale.width  # readable, not a sliver
    assert r.left() - GUTTER_W >= 0 and r.right() - GUTTER_W <= st.scale.width
    assert st.scale.r0 >= st.scale.lo - 0.05 * st.scale.span  # no half view of empty time
    img = tl.grab().toImage()
    assert (pixels(img) == np.uint32(0xFF000000 | int(DARK.search[1:], 16))).sum() > 0  # outlined as a hit


def chain_trace():
    """A launch on the host, its submission on the queue and its kernel 10 ms later."""
    b = TraceBuilder()
    host = b.add_track("host", TrackKind.HOST, host="h")
    q = b.add_track("queue", TrackKind.DRIVER_QUEUE, parent=host, host="h", device=0)
    mxu = b.add_track("matrix", TrackKind.EXEC_UNIT, parent=host, host="h", device=0)
    launch = b.add_slice(host, EPOCH, 20_000, "launch", "runtime")
    sub = b.add_slice(q, EPOCH + 10_000, 5_000, "submit", "driver")
    kern = b.add_slice(mxu, EPOCH + 10_000_000, 40_000, "kernel", "kernel")
    b.add_flow(launch, sub, "submit")
    b.add_flow(sub, kern, "execute")
    b.add_slice(host, EPOCH + 20_000_000, 1_000, "later")
    trace = b.build(source="chain")
    sid = {n: int(np.flatnonzero(trace.slices.name == trace.strings.lookup(n))[0])
           for n in ("launch", "submit", "kernel")}
    return trace, (sid["launch"], sid["submit"], sid["kernel"])


def colour_count(img: np.ndarray, colour: str) -> int:
    return int((img == np.uint32(0xFF000000 | int(colour[1:], 16))).sum())


def test_the_selection_stands_out_from_its_chain_and_brackets_move_the_view(tl, qtbot):
    from PySide6.QtCore import Qt

    st = tl.state
    trace, (launch, sub, kern) = chain_trace()
    st.set_trace(trace)
    st.show_relative(0, 40_000, pad=0.0)
    st.select(sub)
    assert len(st.chain) == 3
    img = pixels(tl.grab().toImage())
    sel = tl.painter.slice_rect(sub, 0).toRect().adjusted(-4, -4, 4, 4)
    other = tl.painter.slice_rect(launch, 0).toRect().adjusted(-4, -4, 4, 4)
    in_sel = img[sel.top() : sel.bottom(), sel.left() : sel.right()]
    in_other = img[other.top() : other.bottom(), other.left() : sel.left() - 2]  # left of the selection
    assert colour_count(in_sel, DARK.select) > 20  # the selection: its own colour, thick
    assert colour_count(in_other, DARK.select) == 0  # a chain member: only the accent outline
    # ] goes to the kernel 10 ms away: the view moves to it, and says where in the chain it is.
    qtbot.keyClick(tl, Qt.Key.Key_BracketRight)
    assert st.selected == kern
    s, e = st.slice_span(kern)
    assert st.scale.r0 <= s and e <= st.scale.r1
    assert tl.painter.notice == "chain 3 / 3"
    qtbot.keyClick(tl, Qt.Key.Key_BracketRight)
    assert st.selected == kern and tl.painter.notice == "end of chain (3 / 3)"
    qtbot.keyClick(tl, Qt.Key.Key_BracketLeft)
    qtbot.keyClick(tl, Qt.Key.Key_BracketLeft)
    assert st.selected == launch and tl.painter.notice == "chain 1 / 3"
    qtbot.keyClick(tl, Qt.Key.Key_BracketLeft)
    assert tl.painter.notice == "start of chain (1 / 3)"
    assert colour_count(pixels(tl.grab().toImage()), DARK.text) > 0  # the notice is drawn


def test_fan_badges_explain_themselves(tl):
    from accelview.app.overlays import FAN

    b = TraceBuilder()
    host = b.add_track("host", TrackKind.HOST, host="h")
    queue = b.add_track("queue 0", TrackKind.DRIVER_QUEUE, parent=host, host="h", device=0)
    mxu = b.add_track("matrix", TrackKind.EXEC_UNIT, parent=host, host="h", device=0)
    sub = b.add_slice(queue, 0, 1_000, "submit graph", "driver")
    for i in range(FAN + 4):
        b.add_flow(sub, b.add_slice(mxu, 2_000 + i * 1_000, 800, f"node {i}", "kernel"), "execute")
    st = tl.state
    st.set_trace(b.build(source="fan"))
    st.select(sub)
    st.show_relative(0, 20_000, pad=0)
    tl.grab()
    (box, tip), = tl.painter.badges
    assert tip.startswith(f"×{FAN + 4}: submit graph flows to {FAN + 4} slices on matrix")
    assert tl.painter.badge_at(box.center()) == tip and tl.painter.badge_at(box.center() + box.bottomRight()) == ""


def press(widget, key, repeat: bool) -> None:
    from PySide6.QtCore import QEvent, Qt
    from PySide6.QtGui import QKeyEvent
    from PySide6.QtWidgets import QApplication

    QApplication.sendEvent(widget, QKeyEvent(QEvent.Type.KeyPress, key, Qt.KeyboardModifier.NoModifier, "", repeat))


def test_holding_w_or_s_accelerates_the_zoom(tl):
    from PySide6.QtCore import Qt

    st = tl.state
    st.set_trace(haystack())
    span0 = st.scale.span
    for _ in range(10):
        press(tl, Qt.Key.Key_W, repeat=False)  # ten taps: ten plain steps
    tapped = span0 / st.scale.span
    assert tapped == pytest.approx(1.3**10)
    st.set_trace(haystack())
    press(tl, Qt.Key.Key_W, repeat=False)
    for _ in range(9):
        press(tl, Qt.Key.Key_W, repeat=True)  # one press held for nine auto-repeats
    held = span0 / st.scale.span
    assert held > 10 * tapped
    before = st.scale.span
    press(tl, Qt.Key.Key_S, repeat=False)  # a tap after a hold is one plain step again
    assert st.scale.span == pytest.approx(before * 1.3)


@pytest.mark.parametrize("start", [0, 1_234_567, 7_777_000])
def test_ruler_labels_are_never_clipped_into_other_values(tl, start):
    st = tl.state
    st.set_trace(haystack())
    st.show_relative(start + 1_000, start + 9_000_000, pad=0.0)  # ticks fall just off both edges
    tl.grab()
    drawn = tl.painter.ruler_labels
    assert drawn and all(a >= GUTTER_W and b <= tl.width() for a, b, _ in drawn)


def test_deep_zoom_ruler_shows_offsets_and_o_sets_the_origin(tl, qtbot):
    from PySide6.QtCore import Qt

    st = tl.state
    trace, (_, _, kern) = chain_trace()
    st.set_trace(trace)
    st.show_relative(10_000_000 + 100, 10_000_000 + 400, pad=0.0)
    tl.grab()
    assert tl.painter._rule.base_label == "10.000 ms"
    assert all(label.startswith("+") for _, _, label in tl.painter.ruler_labels)
    st.select(kern)
    qtbot.keyClick(tl, Qt.Key.Key_O)  # count from the selected kernel's start
    assert st.time_origin == st.slice_span(kern)[0]
    tl.grab()
    assert tl.painter._rule.base is None
    assert {"200 ns", "300 ns"} <= {label for _, _, label in tl.painter.ruler_labels}
    qtbot.keyClick(tl, Qt.Key.Key_O, Qt.KeyboardModifier.ShiftModifier)
    assert st.time_origin == 0.0
