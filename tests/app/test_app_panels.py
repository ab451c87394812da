"""Issue 22's panel defects: search focus, help table, legend, open folder, loading state,
op details, layout. Each test drives the real window offscreen."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from accelview.app.window import MainWindow
from accelview.capture.synthetic import demo_trace
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication


@pytest.fixture
def win(qtbot, tmp_path):
    w = MainWindow(theme="dark", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1600, 1000)
    w.show()
    w.activateWindow()
    qtbot.waitExposed(w)
    w.set_trace(demo_trace(steps=2, layers=1), "demo")
    return w


def test_escape_in_search_gives_keys_back_to_timeline(win, qtbot):
    edit = win.search.edit
    edit.setFocus()
    qtbot.keyClicks(edit, "gemm")
    qtbot.keyClick(edit, Qt.Key.Key_Return)
    qtbot.keyClick(edit, Qt.Key.Key_Escape)
    assert edit.text() == ""
    assert QApplication.focusWidget() is win.timeline
    span = win.state.scale.span
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_W)
    assert edit.text() == ""
    assert win.state.scale.span < span  # W zoomed the timeline instead of typing


def test_f1_shows_a_table_of_every_shortcut(win, qtbot):
    from PySide6.QtGui import QAction

    qtbot.keyClick(win.timeline, Qt.Key.Key_F1)
    dlg = win.keys_dialog
    assert dlg is not None and dlg.isVisible()
    assert dlg.table.columnCount() == 2
    keys = " | ".join(dlg.keys())
    shortcuts = {a.shortcut().toString() for a in win.findChildren(QAction) if not a.shortcut().isEmpty()}
    assert {"B", "Ctrl+0", "Ctrl+T", "Alt+Up", "Ctrl+F"} <= shortcuts
    missing = {s for s in shortcuts if s not in keys}
    assert not missing, f"shortcuts missing from the F1 table: {missing}"
    assert "Show only this lane" in keys  # the lane menu


def test_details_of_a_device_op_state_bottleneck_and_share_of_peak(win, qtbot):
    from accelview.model.loader import load_trace

    win.set_trace(load_trace("resources/demo.h5"), "demo")  # ops with counters and a device spec
    qtbot.waitUntil(lambda: win.findings.report is not None, timeout=20000)
    ops = win.findings.report.ops
    sid = int(ops.slice[int(np.flatnonzero(ops.label != "unknown")[0])])
    win.state.select(sid)
    keys, values = win.details.texts(0), win.details.texts(1)
    row = dict(zip(keys, values, strict=True))
    assert row["Bottleneck"].startswith(str(ops.label[ops.slice == sid][0]))
    assert "confidence" in row["Bottleneck"]
    assert "FLOP/s" in row["Compute"] and "of peak" in row["Compute"]
    assert "/s" in row["HBM bandwidth"] and "of peak" in row["HBM bandwidth"]


def test_bottleneck_legend_stays_while_b_is_on_and_range_has_its_own_colour(win, qtbot):
    from accelview.app.theme import THEMES
    from accelview.model.analysis.ops import CLASS_COLOURS
    from accelview.model.loader import load_trace
    from PySide6.QtGui import QColor

    win.set_trace(load_trace("resources/demo.h5"), "demo")
    qtbot.waitUntil(lambda: win.bottleneck_action.isEnabled(), timeout=20000)
    qtbot.keyClick(win.timeline, Qt.Key.Key_B)
    assert win.bottleneck_action.isChecked()
    win.statusBar().clearMessage()  # a lasting widget, not a message that times out
    assert win.legend.isVisible()
    palette = win.theme.slice_colours
    assert QColor(win.legend.colour_of("memory")) == palette[CLASS_COLOURS["memory"]]
    for theme in THEMES.values():
        sel = QColor(theme.range_fill)
        for index in CLASS_COLOURS.values():
            cls = palette[index]
            if cls.saturationF() > 0.2:  # grey classes differ by saturation already
                assert abs((sel.hueF() - cls.hueF() + 0.5) % 1 - 0.5) > 0.08, (theme.name, cls.name())
    qtbot.keyClick(win.timeline, Qt.Key.Key_B)
    assert not win.legend.isVisible()


def test_open_can_pick_a_folder_of_rank_traces_or_several_files(qtbot, tmp_path, monkeypatch):
    from accelview.app import file_choosing as window_module
    from PySide6.QtWidgets import QFileDialog

    opened: list[str] = []

    def loader(path, progress=None, cancel=None):
        opened.append(str(path))
        return demo_trace(steps=1, layers=1)

    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), loader=loader)
    qtbot.addWidget(w)
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(ranks))
    with qtbot.waitSignal(w.state.trace_changed, timeout=20000):
        w.open_folder_action.trigger()
    assert opened == [str(ranks)]
    files = [str(ranks / f"rank-{r}.json") for r in (0, 1)]
    monkeypatch.setattr(window_module, "rank_folder", lambda paths: str(ranks) if paths == files else None)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: (files, ""))
    with qtbot.waitSignal(w.state.trace_changed, timeout=20000):
        w.open_action.trigger()
    assert opened[-1] == str(ranks)  # several rank files open as their folder, one multi-rank trace


def test_rank_folder_accepts_exactly_the_folders_rank_files(tmp_path):
    from accelview.app.file_choosing import rank_folder

    head = '{"schemaVersion": 1, "traceEvents": []}'
    for r in (0, 1):
        (tmp_path / f"rank-{r}.json").write_text(head)
    both = [str(tmp_path / f"rank-{r}.json") for r in (0, 1)]
    assert rank_folder(both) == str(tmp_path)
    assert rank_folder([*both[:1], str(tmp_path / "other" / "x.json")]) is None
    (tmp_path / "rank-2.json").write_text(head)
    assert rank_folder(both) is None  # not the whole folder: do not open ranks the user left out


def test_loading_from_the_command_line_says_loading_not_open_a_capture(qtbot, tmp_path):
    import threading

    release = threading.Event()

    def loader(path, progress=None, cancel=None):
        progress(1.0)
        release.wait(20)
        return demo_trace(steps=1, layers=1)

    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), loader=loader)
    qtbot.addWidget(w)
    w.show()
    job = w.open_path(str(tmp_path / "run.h5"))
    assert not w.timeline.isVisible()  # its "Open a capture" placeholder would show behind the dialog
    assert w.loading_label.isVisible() and "Loading run.h5" in w.loading_label.text()
    labels: list[str] = []
    job.stage.connect(lambda _t: labels.append(w.progress.labelText()))
    with qtbot.waitSignal(w.state.trace_changed, timeout=20000):
        release.set()
    qtbot.waitUntil(lambda: not job.running, timeout=20000)
    assert labels and "timeline index" in labels[0]  # after the bar is full it says what it does
    assert w.timeline.isVisible() and not w.loading_label.isVisible()


def test_profile_dialog_suggests_output_shows_checkboxes_and_closes_when_done(qtbot, tmp_path):
    from accelview.app.theme import stylesheet
    from PySide6.QtGui import QColor

    script = tmp_path / "tiny.py"
    script.write_text("from accelview.capture import sim\n"
                      "dev = sim.device(0)\n"
                      "for _ in range(20):\n    dev.launch('elementwise', elements=4096)\n"
                      "dev.synchronize()\n")
    w = MainWindow(theme="dark", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.setStyleSheet(stylesheet("dark"))
    dialog = w.profile_dialog()
    qtbot.addWidget(dialog)
    dialog.script.setText(str(script))
    assert dialog.output.text() == str(tmp_path / "tiny.h5")  # beside the script
    dialog.output.setText(str(tmp_path / "mine.h5"))
    dialog.script.setText(str(tmp_path / "other.py"))
    assert dialog.output.text() == str(tmp_path / "mine.h5")  # a path the user typed stays
    img = dialog.force.grab().toImage()
    bg = QColor(img.pixel(img.width() - 1, img.height() // 2)).lightness()
    box = [QColor(img.pixel(x, y)).lightness() for x in range(16) for y in range(img.height())]
    assert max(abs(v - bg) for v in box) > 60  # the unchecked box stands out of the dark background
    dialog.script.setText(str(script))
    with qtbot.waitSignal(w.state.trace_changed, timeout=60_000):
        dialog.start()
    dialog.wait()
    assert "mine.h5" in w.windowTitle()
    assert not dialog.isVisible()  # done: the capture is open, the dialog closed


def test_default_layout_gives_the_timeline_most_of_the_width_and_names_fit(win, qtbot):
    from accelview.model.loader import load_trace

    win.set_trace(load_trace("resources/demo.h5"), "demo")
    qtbot.waitUntil(lambda: win.findings.report is not None, timeout=20000)
    assert win.timeline.width() >= 0.66 * win.width()
    assert win.docks["Counters"] in win.tabifiedDockWidgets(win.docks["Lanes"])
    assert win.lane_view.isColumnHidden(1)  # the lane kind is in the tooltip, the name gets the width
    ops = win.findings.report.ops
    win.state.select(int(ops.slice[0]))
    details = win.details
    names = [details.items.item(i, 0).child(j, 0).text()
             for i in range(details.items.rowCount()) for j in range(details.items.item(i, 0).rowCount())
             if details.items.item(i, 0).text() == "Args"]
    longest = max(names, key=details.fontMetrics().horizontalAdvance)
    assert details.columnWidth(0) >= details.fontMetrics().horizontalAdvance(longest) + 2 * details.indentation()
    item = details.items.item(0, 0)
    assert item.toolTip() == item.text()  # an elided name shows whole on hover


def test_lanes_dock_fits_the_names_within_a_cap_elided_at_the_right(win, qtbot):
    from accelview.app.window import LEFT_DOCK_MAX, LEFT_DOCK_W
    from accelview.model.loader import load_trace

    win.set_trace(load_trace("resources/demo.h5"), "demo")
    QApplication.processEvents()
    tree, dock = win.lane_view, win.docks["Lanes"]
    assert LEFT_DOCK_W <= dock.width() <= LEFT_DOCK_MAX
    assert tree.viewport().width() >= tree.sizeHintForColumn(0)  # every shown name whole
    assert tree.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    assert tree.textElideMode() == Qt.TextElideMode.ElideRight
    tree.names_width = lambda: 900  # names far too long: the dock stops at the cap, the timeline keeps its width
    win.fit_lanes_dock()
    QApplication.processEvents()
    assert dock.width() <= LEFT_DOCK_MAX and win.timeline.width() >= 0.66 * win.width()


def test_details_values_wrap_rather_than_being_cut(win, qtbot):
    details = win.details
    win.state.select(int(np.argmax(win.state.trace.slices.dur_ns)))
    win.resizeDocks([win.docks["Details"]], [200], Qt.Orientation.Horizontal)
    QApplication.processEvents()
    fm = details.fontMetrics()
    values = [details.items.index(i, 1) for i in range(details.items.rowCount())]
    value = max(values, key=lambda v: fm.horizontalAdvance(v.data()))
    text = value.data()
    assert fm.horizontalAdvance(text) > details.columnWidth(1)  # too long for one line here
    assert details.visualRect(value).height() >= 2 * fm.height()  # so it takes two
    assert details.items.itemFromIndex(value).toolTip() == text
