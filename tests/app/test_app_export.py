"""File → Export: the timeline view as a PNG of what is on screen, and the trace as Chrome JSON for
Perfetto written on a worker thread; failures are one-line dialogs and leave no partial file."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from accelview.capture.synthetic import demo_trace
from accelview.model.loader import load_trace
from accelview.model.store.writer import write_capture
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QFileDialog
from timeline_widgets import shown_window


def test_export_actions_wait_for_a_trace(qtbot, tmp_path):
    w = shown_window(qtbot, tmp_path)
    assert not w.export_png_action.isEnabled() and not w.export_chrome_action.isEnabled()
    w.set_trace(demo_trace(steps=2, layers=1), "demo")
    assert w.export_png_action.isEnabled() and w.export_chrome_action.isEnabled()


def test_export_view_as_png_is_the_timeline_on_screen(qtbot, tmp_path, monkeypatch):
    w = shown_window(qtbot, tmp_path)
    w.set_trace(demo_trace(steps=2, layers=1), "demo")
    out = tmp_path / "view"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    w.export_png_action.trigger()
    img = QImage(str(out) + ".png")
    assert (img.width(), img.height()) == (w.timeline.width(), w.timeline.height())
    assert img == w.timeline.grab().toImage().convertToFormat(img.format())
    assert "Exported" in w.statusBar().currentMessage()


def test_png_to_a_missing_folder_is_a_one_line_dialog(qtbot, tmp_path):
    w = shown_window(qtbot, tmp_path)
    w.set_trace(demo_trace(steps=2, layers=1), "demo")
    assert not w.export_png(str(tmp_path / "gone" / "view.png"))
    assert w.error_box.isVisible() and "\n" not in w.error_box.text()


def test_export_for_perfetto_off_the_ui_thread(qtbot, tmp_path, monkeypatch):
    w = shown_window(qtbot, tmp_path)
    trace = demo_trace(steps=2, layers=1)
    w.set_trace(trace, "demo")
    out = tmp_path / "trace.json.gz"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    w.export_chrome_action.trigger()
    # Wait on what the window connected before the thread started: a signal connected here
    # could be emitted (and missed) before the connection.
    qtbot.waitUntil(lambda: "Exported for Perfetto" in w.statusBar().currentMessage(), timeout=20000)
    assert w.export_job.isFinished()
    back = load_trace(out)
    assert len(back.slices) == len(trace.slices)


def test_perfetto_export_failure_is_a_dialog_and_leaves_nothing(qtbot, tmp_path):
    w = shown_window(qtbot, tmp_path)
    w.set_trace(demo_trace(steps=2, layers=1), "demo")
    assert w.export_chrome(str(tmp_path / "gone" / "trace.json")) is not None
    qtbot.waitUntil(lambda: w.error_box is not None and w.error_box.isVisible(), timeout=20000)
    assert "\n" not in w.error_box.text() and "trace.json" in w.error_box.text()
    assert not (tmp_path / "gone").exists()


def test_export_never_overwrites_the_open_capture(qtbot, tmp_path):
    path = tmp_path / "run.h5"
    write_capture(demo_trace(steps=2, layers=1), path)
    before = path.read_bytes()
    w = shown_window(qtbot, tmp_path)
    with qtbot.waitSignal(w.state.trace_changed, timeout=20000):
        w.open_path(str(path))
    qtbot.waitUntil(lambda: w.bookmarks.source is not None)
    assert w.export_chrome(str(path)) is None
    assert w.error_box.isVisible() and "open capture" in w.error_box.text()
    assert path.read_bytes() == before


def test_closing_during_an_export_finishes_the_file(qtbot, tmp_path):
    w = shown_window(qtbot, tmp_path)
    trace = demo_trace(steps=2, layers=1)
    w.set_trace(trace, "demo")
    out = tmp_path / "trace.json"
    w.export_chrome(str(out))
    w.close()
    assert not w.export_job.isRunning()
    assert len(load_trace(out).slices) == len(trace.slices)
