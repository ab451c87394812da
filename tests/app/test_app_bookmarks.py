"""Bookmarks in the window: M makes a named bookmark kept in a sidecar beside the file (never in
the capture), reopening brings it back, Enter / double-click jumps there, F2 renames, Delete
removes; a broken sidecar or an unwritable folder is a status-bar line, not a crash. And F with
nothing selected fits the activity while Ctrl+0 shows the whole trace."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import hashlib
import json

import pytest
from accelview.app.window import MainWindow
from accelview.capture.synthetic import demo_trace
from accelview.model.store.writer import write_capture
from accelview.model.view.bookmarks import sidecar_path
from factories import busy_trace
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from timeline_widgets import shown_window


def opened(qtbot, tmp_path, path) -> MainWindow:
    w = shown_window(qtbot, tmp_path)
    with qtbot.waitSignal(w.state.trace_changed, timeout=20000):
        w.open_path(str(path))
    qtbot.waitUntil(lambda: w.bookmarks.source is not None or "Bookmarks" in w.statusBar().currentMessage())
    return w


@pytest.fixture
def capture(tmp_path):
    path = tmp_path / "run.h5"
    write_capture(demo_trace(steps=2, layers=1), path)
    return path


def mark(w: MainWindow, a: float, b: float, qtbot) -> None:
    w.state.set_range((a, b))
    qtbot.keyClick(w.timeline, Qt.Key.Key_M)


def test_marks_are_bookmarks_kept_beside_the_file(qtbot, tmp_path, capture):
    digest = hashlib.sha256(capture.read_bytes()).hexdigest()
    w = opened(qtbot, tmp_path, capture)
    span = w.state.scale.span
    mark(w, span * 0.2, span * 0.3, qtbot)
    mark(w, span * 0.6, span * 0.7, qtbot)
    assert [w.bookmarks.item(i).text().split("  ·  ")[0] for i in range(w.bookmarks.count())] == ["Mark 1", "Mark 2"]
    item = w.bookmarks.item(0)
    item.setText("warm-up")  # what F2 editing commits
    saved = json.loads(sidecar_path(capture).read_text())
    assert [b["name"] for b in saved["bookmarks"]] == ["warm-up", "Mark 2"]
    assert hashlib.sha256(capture.read_bytes()).hexdigest() == digest  # the capture is untouched
    w.grab().save(str(tmp_path / "bookmarks.png"))

    again = opened(qtbot, tmp_path, capture)
    assert [b.name for b in again.bookmarks.bookmarks] == ["warm-up", "Mark 2"]
    flat = [t for m in w.state.marks for t in m]
    assert [t for m in again.state.marks for t in m] == pytest.approx(flat, abs=1)  # drawn again

    # Enter on a bookmark jumps the view there.
    st = again.state
    st.set_scale(st.scale.with_window(0, span * 0.05))
    again.bookmarks.setFocus()
    again.bookmarks.setCurrentRow(1)
    qtbot.keyClick(again.bookmarks, Qt.Key.Key_Return)
    a, b = st.marks[1]
    assert st.scale.r0 < a < b < st.scale.r1 and st.scale.span < (b - a) * 1.2

    # Delete removes the bookmark, its mark and its entry in the sidecar.
    qtbot.keyClick(again.bookmarks, Qt.Key.Key_Delete)
    assert [b.name for b in again.bookmarks.bookmarks] == ["warm-up"] and len(st.marks) == 1
    assert [b["name"] for b in json.loads(sidecar_path(capture).read_text())["bookmarks"]] == ["warm-up"]


def test_double_click_jumps(qtbot, tmp_path, capture):
    w = opened(qtbot, tmp_path, capture)
    span = w.state.scale.span
    mark(w, span * 0.4, span * 0.41, qtbot)
    w.docks["Bookmarks"].raise_()
    w.state.set_scale(w.state.scale.with_window(0, span * 0.01))
    view = w.bookmarks
    qtbot.waitUntil(lambda: view.isVisible())
    rect = view.visualItemRect(view.item(0))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # Qt wants the press first
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    a, b = w.state.marks[0]
    assert w.state.scale.r0 < a < b < w.state.scale.r1


def test_next_and_previous_bookmark_from_anywhere(qtbot, tmp_path, capture):
    w = opened(qtbot, tmp_path, capture)
    span = w.state.scale.span
    mark(w, span * 0.2, span * 0.25, qtbot)
    mark(w, span * 0.7, span * 0.75, qtbot)
    w.bookmarks.setCurrentRow(-1)
    actions = {a.shortcut().toString(): a for a in w.findChildren(QAction)}

    def shown(row: int) -> bool:
        a, b = w.state.marks[row]
        return w.state.scale.r0 < a < b < w.state.scale.r1 and w.state.scale.span < span / 2

    actions["Ctrl+]"].trigger()
    assert w.bookmarks.currentRow() == 0 and shown(0)
    actions["Ctrl+]"].trigger()
    assert w.bookmarks.currentRow() == 1 and shown(1)
    actions["Ctrl+]"].trigger()  # wraps
    assert shown(0)
    actions["Ctrl+["].trigger()
    assert shown(1)


def test_broken_sidecar_is_a_status_line_and_is_never_overwritten(qtbot, tmp_path, capture):
    side = sidecar_path(capture)
    side.write_text('{"version": 1, "bookmarks": [{"name": "x", "start_ns": "__import__"}]}')
    w = opened(qtbot, tmp_path, capture)
    assert "Bookmarks not loaded" in w.statusBar().currentMessage()
    assert w.state.trace is not None and w.bookmarks.count() == 0
    mark(w, 10.0, 20.0, qtbot)
    assert w.bookmarks.count() == 1  # still usable, in memory
    assert "__import__" in side.read_text()


def test_unwritable_folder_is_a_status_line(qtbot, tmp_path):
    w = shown_window(qtbot, tmp_path)
    w.set_trace(demo_trace(steps=2, layers=1), "run.h5")
    w.bookmarks.set_source(str(tmp_path / "gone" / "run.h5"))  # a folder that cannot take a file
    mark(w, 10.0, 20.0, qtbot)
    assert "Bookmarks not saved" in w.statusBar().currentMessage()
    assert w.bookmarks.count() == 1


def test_f_fits_the_activity_and_ctrl0_the_whole_trace(qtbot, tmp_path):
    w = shown_window(qtbot, tmp_path)
    w.set_trace(busy_trace(outlier_at=9_000_000_000), "busy")
    st = w.state
    fit_all = next(a for a in w.findChildren(QAction) if a.shortcut() == QKeySequence("Ctrl+0"))
    fit_all.trigger()
    assert st.scale.r0 <= 0 and st.scale.r1 >= 10_000_000_000
    qtbot.keyClick(w.timeline, Qt.Key.Key_F)
    assert 4_999_000_000 < st.scale.r0 < 5_000_000_000 < 5_002_000_000 < st.scale.r1 < 5_003_000_000
    opened_at = (st.scale.r0, st.scale.r1)
    fit_all.trigger()
    assert st.scale.span >= 10_000_000_000
    qtbot.keyClick(w.timeline, Qt.Key.Key_F)
    assert (st.scale.r0, st.scale.r1) == pytest.approx(opened_at)  # F is the view the trace opened at
