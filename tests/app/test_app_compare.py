"""The comparison view: the diff table (model tester, sorting), both timelines aligned on the
matched iteration and moving together, a row or a click selecting the op in both, and opening it
from File → Compare with… and from a Shift+drop."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.app.compare_view import ComparisonView
from accelview.app.diff_table import COLUMNS, DiffTableModel
from accelview.app.theme import DARK
from accelview.model.compare.diff import compare
from accelview.model.store.writer import write_capture
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication
from sim_pairs import slow_vector_spec, stepped
from timeline_widgets import pixels, shown_window


@pytest.fixture(scope="module")
def diff(tmp_path_factory):
    return compare(stepped(), stepped(slow_vector_spec(tmp_path_factory.mktemp("spec")), seed=1))


@pytest.fixture
def view(qtbot, diff):
    v = ComparisonView(diff, DARK)
    qtbot.addWidget(v)
    v.resize(1400, 800)
    v.show()
    qtbot.waitExposed(v)
    return v


def test_table_model_passes_the_model_tester(qtmodeltester, diff):
    qtmodeltester.check(DiffTableModel(diff))


def test_table_sorts_by_value(diff):
    m = DiffTableModel(diff)
    assert m.data(m.index(0, 2)) == diff.top.name  # the diff's ranking first
    m.sort(COLUMNS.index("change"), Qt.SortOrder.DescendingOrder)
    changes = [m.entry(r).change_ns for r in range(m.rowCount())]
    assert changes == sorted(changes, reverse=True)
    m.sort(0)
    assert m.entry(0) is diff.entries[0]


def test_timelines_are_aligned_on_the_iteration_and_move_together(view):
    a, b = view.state_a, view.state_b
    links = view.links
    assert links is not None and links.group == "step #"
    oa, ob = links.a_window[0] - a.origin, links.b_window[0] - b.origin
    assert a.scale.r0 - oa == pytest.approx(b.scale.r0 - ob) and a.scale.span == pytest.approx(b.scale.span)
    a.set_scale(a.scale.zoom(2.0))  # zoom A: B follows
    assert a.scale.r0 - oa == pytest.approx(b.scale.r0 - ob) and a.scale.span == pytest.approx(b.scale.span)


def test_a_table_row_selects_the_op_in_both(view, qtbot):
    row = next(r for r in range(view.model.rowCount()) if view.model.entry(r).name == "activation"
               and view.model.entry(r).kind == "op")
    view.table.selectRow(row)
    names = [st.trace.strings[st.trace.slices.name[st.selected]] for st in (view.state_a, view.state_b)]
    assert names == ["activation", "activation"]


def test_selecting_an_op_in_one_timeline_selects_its_partner(view):
    links = view.links
    view.state_b.select(int(links.b_slice[-1]))
    assert view.state_a.selected == int(links.a_slice[-1])


def test_the_link_strip_draws_slower_ops_red(view):
    assert len(view.strip.visible(view.links)) == len(view.links.a_slice)  # 3 ops per step, all in view
    px = pixels(view.strip.grab().toImage())
    r, g, b = (px >> 16) & 255, (px >> 8) & 255, px & 255
    assert np.any((r > 180) & (g < 120) & (b < 120))  # the activation took 4x longer: a red link


def test_compare_with_opens_the_view_and_a_bad_file_gets_a_dialog(qtbot, tmp_path):
    win = shown_window(qtbot, tmp_path)
    assert not win.compare_action.isEnabled()
    win.set_trace(stepped())
    assert win.compare_action.isEnabled()
    path = tmp_path / "b.h5"
    write_capture(stepped(extra_op=True), path)
    win.compare_with(str(path))
    qtbot.waitUntil(lambda: win.comparison is not None and win.comparison.isVisible(), timeout=30000)
    qtbot.addWidget(win.comparison)
    assert any(e.name == "inserted_scale" and e.status == "new" for e in win.comparison.diff.entries)
    win.compare_with(str(tmp_path / "missing.h5"))
    qtbot.waitUntil(lambda: win.error_box is not None and win.error_box.isVisible(), timeout=10000)
    assert "missing.h5: no such file" in win.error_box.text()
    assert win.state.trace is not None  # the run on screen stays


def test_shift_drop_compares_instead_of_opening(qtbot, tmp_path):
    win = shown_window(qtbot, tmp_path)
    trace = stepped()
    win.set_trace(trace)
    path = tmp_path / "other.h5"
    write_capture(stepped(), path)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    shift = Qt.KeyboardModifier.ShiftModifier
    QApplication.sendEvent(win, QDragEnterEvent(QPoint(50, 50), Qt.DropAction.CopyAction, mime,
                                                Qt.MouseButton.LeftButton, shift))
    QApplication.sendEvent(win, QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime,
                                           Qt.MouseButton.LeftButton, shift))
    assert win.compare_job is not None and win.compare_job.path_b == str(path)
    qtbot.waitUntil(lambda: win.comparison is not None, timeout=30000)
    qtbot.addWidget(win.comparison)
    assert win.state.trace is trace  # not replaced by the dropped file
    assert win.comparison.diff.summary.startswith("no significant change")  # the same run twice
