"""The main window's files: open in a worker thread, drop a file, the bad-file dialog, cancel,
recent files, themes; every item model passes the model tester; offscreen rendering."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from accelview.app.counter_list import CounterListModel
from accelview.app.lane_tree import LaneTreeModel
from accelview.app.render import render_png
from accelview.app.state import ViewState
from accelview.app.window import MainWindow
from accelview.capture.synthetic import demo_trace
from accelview.model import CaptureError
from accelview.model.loader import load_trace
from accelview.model.store.writer import write_capture
from PySide6.QtCore import QMimeData, QPoint, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QImage
from PySide6.QtWidgets import QApplication, QPushButton, QToolBar


def fake_loader(trace):
    def load(path, progress=None, cancel=None):
        if str(path).endswith(".bad"):
            raise CaptureError(path, "is not a capture or a trace accelview reads")
        for i in range(5):
            if progress:
                progress(i / 5)
        return trace

    return load


@pytest.fixture
def win(qtbot, tmp_path):
    w = MainWindow(theme="dark", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat),
                   loader=fake_loader(demo_trace(steps=2, layers=1)))
    qtbot.addWidget(w)
    w.resize(1200, 800)
    w.show()
    return w


def test_open_real_capture_file(qtbot, tmp_path):
    path = tmp_path / "run.h5"
    trace = demo_trace(steps=2, layers=1)
    write_capture(trace, path)
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.state.trace_changed, timeout=20000):
        w.open_path(str(path))
    assert len(w.state.trace.slices) == len(trace.slices)
    assert "run.h5" in w.windowTitle()
    assert w.recent_files()[0].endswith("run.h5")
    assert w.recent_menu.actions()[0].text().endswith("run.h5")


def test_drop_opens_file(win, qtbot, tmp_path):
    path = tmp_path / "dropped.h5"
    path.write_bytes(b"x")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    enter = QDragEnterEvent(QPoint(50, 50), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(win, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(win.state.trace_changed, timeout=10000):
        QApplication.sendEvent(win, drop)
    assert win.state.trace is not None
    assert win.recent_files()[0].endswith("dropped.h5")


def test_bad_file_shows_dialog_and_keeps_view(win, qtbot):
    good = demo_trace(steps=1, layers=1)
    win.set_trace(good)
    QApplication.processEvents()  # the Lanes dock fitted to the new lanes' names: the timeline's width settles
    scale = win.state.scale
    job = win.open_path("/nowhere/broken.bad")
    with qtbot.waitSignal(job.finished, timeout=10000):
        pass
    qtbot.waitUntil(lambda: win.error_box is not None and win.error_box.isVisible(), timeout=5000)
    assert "broken.bad" in win.error_box.text() and "not a capture" in win.error_box.text()
    assert win.state.trace is good and win.state.scale == scale
    win.error_box.close()


def test_real_loader_error_for_missing_file(qtbot, tmp_path):
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    job = w.open_path(str(tmp_path / "missing.h5"))
    with qtbot.waitSignal(job.failed, timeout=10000) as blocker:
        pass
    assert "missing.h5" in blocker.args[0]


def test_cancel_loading_keeps_window_responsive(qtbot, tmp_path):
    started = threading.Event()

    def slow(path, progress=None, cancel=None):
        started.set()
        while not cancel():
            time.sleep(0.01)
        raise CaptureError(path, "loading cancelled")

    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), loader=slow)
    qtbot.addWidget(w)
    job = w.open_path("/some/big.h5")
    assert started.wait(5)
    QApplication.processEvents()  # the event loop runs while the worker loads
    button = w.progress.findChild(QPushButton)
    with qtbot.waitSignal(job.cancelled, timeout=5000):
        button.click()
    job.wait()
    assert w.state.trace is None


def test_theme_switch_and_recent_list(win):
    win.apply_theme("light")
    assert win.settings.value("theme") == "light" and win.theme_action.isChecked()
    assert "#fbfbfc" in win.styleSheet()
    win.apply_theme("dark")
    for i in range(12):
        win.add_recent(f"/tmp/f{i}.h5")
    files = win.recent_files()
    assert len(files) == 8 and files[0].endswith("f11.h5")


def test_item_models_pass_model_tester(qtmodeltester, win):
    st = ViewState(demo_trace(steps=1, layers=1))
    qtmodeltester.check(LaneTreeModel(st))
    qtmodeltester.check(CounterListModel(st))
    qtmodeltester.check(LaneTreeModel(ViewState()))
    win.state.set_trace(st.trace)
    win.state.select(5)
    qtmodeltester.check(win.details.model())


def test_render_png(tmp_path, qapp):
    tr = demo_trace(steps=2, layers=1)
    out = tmp_path / "shot.png"
    times = render_png(tr, str(out), size=(640, 360), timing=True, frames=3)
    assert len(times) == 3 and all(t > 0 for t in times)
    img = QImage(str(out))
    assert (img.width(), img.height()) == (640, 360)
    lo, hi = tr.time_bounds()
    assert render_png(tr, str(out), window=(lo, lo + (hi - lo) / 10), size=(320, 200)) == []


def test_counter_list_offers_derived_metrics(qtmodeltester):
    """The shipped demo capture's counters feed derived metrics: the list offers them with
    units, and their series and range means are finite."""
    from importlib import resources

    demo = resources.files("accelview.resources").joinpath("demo.h5")
    model = CounterListModel(ViewState(load_trace(str(demo))))
    derived = [i for i, e in enumerate(model.entries) if e.metric]
    assert derived, "the demo capture's counters feed no derived metric"
    ts, vals = model.series(derived[0])
    assert len(ts) == len(vals) > 0
    assert model.entries[derived[0]].unit
    a, b = int(ts[len(ts) // 4]), int(ts[len(ts) // 2])
    assert np.isfinite(model.range_mean(derived[0], a, b))
    assert np.isfinite(model.range_mean(0, a, b))  # a base counter
    qtmodeltester.check(model)


def test_window_layout_is_saved_and_restored(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "layout.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings=settings)
    qtbot.addWidget(w)
    w.resize(900, 700)
    w.show()
    w.docks["Details"].hide()
    w.close()
    w2 = MainWindow(settings=settings)
    qtbot.addWidget(w2)
    w2.restore_layout()
    w2.show()
    assert not w2.docks["Details"].isVisible()
    assert w2.docks["Lanes"].isVisible()


def test_loaded_trace_arrives_with_its_timeline_index_prepared(win, qtbot, tmp_path):
    path = tmp_path / "x.h5"
    path.write_bytes(b"x")
    job = win.open_path(str(path))
    with qtbot.waitSignal(win.state.trace_changed, timeout=10000):
        pass
    assert job.lod is not None and win.state.lod is job.lod
    assert win.state.lod._g is not None  # built on the worker thread


def test_opening_another_file_cancels_the_first(qtbot, tmp_path):
    fast = demo_trace(steps=1, layers=1)

    def load(path, progress=None, cancel=None):
        if "slow" in str(path):
            while not cancel():
                time.sleep(0.01)
            time.sleep(0.3)  # still unwinding when the GUI thread starts to wait for it
            raise CaptureError(path, "loading cancelled")
        return fast

    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), loader=load)
    qtbot.addWidget(w)
    first = w.open_path("/data/slow.h5")
    with qtbot.waitSignal(w.state.trace_changed, timeout=10000):
        w.open_path("/data/fast.h5")
    assert first.wait(5000), "the cancelled load's thread never ended"
    assert w.state.trace is fast and not first.running
    assert w.error_box is None  # a cancelled load is not an error


def test_profile_script_action_opens_the_capture(qtbot, tmp_path):
    script = tmp_path / "tiny.py"
    script.write_text("from accelview.capture import sim\n"
                      "dev = sim.device(0)\n"
                      "for _ in range(20):\n    dev.launch('elementwise', elements=4096)\n"
                      "dev.synchronize()\n")
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    assert w.profile_action in w.findChildren(QToolBar)[0].actions()
    dialog = w.profile_dialog()
    qtbot.addWidget(dialog)
    dialog.script.setText(str(script))
    dialog.output.setText(str(tmp_path / "tiny.h5"))
    with qtbot.waitSignal(w.state.trace_changed, timeout=60_000):
        dialog.start()
    dialog.wait()
    assert "tiny.h5" in w.windowTitle()
    assert len(w.state.trace.slices) >= 20


def test_the_counter_pane_is_as_tall_as_its_strips(win, qtbot):
    win.set_trace(load_trace(Path(__file__).resolve().parents[2] / "resources" / "demo.h5"))
    qtbot.wait(10)
    model, split = win.counter_model, win.centralWidget()
    assert len(model.checked) >= 3
    four = split.sizes()[1]
    assert four == win.counters.height()
    model.beginResetModel()
    model.checked = model.checked[:1]
    model.endResetModel()
    qtbot.wait(10)
    assert split.sizes()[1] == win.counters.height() < four  # no empty band above or below the strip
    assert sum(split.sizes()) > 0 and split.sizes()[0] > 0
