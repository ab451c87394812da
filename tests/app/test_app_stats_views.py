"""The Statistics panel and the Utilisation charts in the window: models pass qtmodeltester,
sorting is by value, the filter, the range selection, histogram bars selecting slices on the
timeline, copy and CSV, the charts following the timeline's window, and render --view."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.app.paint import GUTTER_W
from accelview.app.stats_panel import SORT_ROLE
from accelview.model.loader import load_trace
from accelview.model.text.values import format_value
from PySide6.QtCore import Qt
from timeline_widgets import shown_window

DEMO = "resources/demo.h5"


@pytest.fixture(scope="module")
def demo():
    return load_trace(DEMO)


@pytest.fixture
def win(qtbot, tmp_path, demo):
    w = shown_window(qtbot, tmp_path)
    w.set_trace(demo, "demo")
    return w


def test_stats_model_passes_the_model_tester_and_sorts_by_value(win, qtbot, qtmodeltester):
    win.docks["Statistics"].show()
    panel = win.stats
    qtbot.waitUntil(lambda: panel.model.rowCount() > 0)
    qtmodeltester.check(panel.model)
    qtmodeltester.check(panel.proxy)
    panel.view.sortByColumn(1, Qt.SortOrder.DescendingOrder)  # count
    counts = [panel.proxy.index(r, 1).data(SORT_ROLE) for r in range(panel.proxy.rowCount())]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
    total = panel.proxy.rowCount()
    panel.filter.setText("LM_HEAD")  # case-insensitive, on the name
    shown = [panel.proxy.index(r, 0).data() for r in range(panel.proxy.rowCount())]
    assert 0 < len(shown) < total and all("lm_head" in n for n in shown)


def test_grouping_switch_and_range_selection_recompute(win, qtbot):
    win.docks["Statistics"].show()
    panel = win.stats
    whole = int(panel.model.table.count.sum())
    panel.by.setCurrentIndex(2)  # by phase
    assert panel.model.table.by == "phase" and panel.model.headerData(0, Qt.Orientation.Horizontal) == "phase"
    lo, hi = win.state.trace.time_bounds()
    win.state.set_range((0, (hi - lo) * 0.2))
    assert panel.model.table.window is not None and 0 < int(panel.model.table.count.sum()) < whole
    assert panel.scope.text().startswith("range")
    win.state.set_range(None)
    assert panel.scope.text() == "whole run" and int(panel.model.table.count.sum()) == whole


def test_histogram_bar_selects_its_slices_on_the_timeline(win, qtbot):
    win.docks["Statistics"].show()
    panel = win.stats
    panel.by.setCurrentIndex(2)  # phases hold hundreds of ops of many durations
    panel.view.selectRow(0)
    bars = [len(b) for b in panel.hist_ids]
    row = panel.proxy.mapToSource(panel.proxy.index(0, 0)).row()
    assert sum(bars) == panel.model.table.count[row]
    i = int(np.argmax(bars))
    panel.select_bin(i)
    st = win.state
    assert sorted(st.hits.tolist()) == sorted(panel.hist_ids[i].tolist())
    assert st.selected in set(st.hits.tolist())
    dur = st.trace.slices.dur_ns[st.hits]
    assert dur.min() >= panel.hist_edges[i] - 1e-6 and dur.max() <= panel.hist_edges[i + 1] + 1e-6
    s0 = float(st.trace.slices.start_ns[st.hits].min() - st.origin)
    assert st.scale.r0 <= s0 <= st.scale.r1  # the view moved to them


def test_copy_and_csv_hold_the_shown_rows(win, qtbot, tmp_path):
    win.docks["Statistics"].show()
    panel = win.stats
    panel.filter.setText("gate_up")
    n = panel.proxy.rowCount()
    assert n > 1
    text = panel.copy_text()
    assert text.splitlines()[0].split("\t")[:3] == ["name", "count", "total"] and len(text.splitlines()) == n + 1
    panel.view.selectRow(0)
    assert len(panel.copy_text().splitlines()) == 2
    path = tmp_path / "s.csv"
    panel.export_csv(str(path))
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert len(rows) == n and all("gate_up" in r["name"] for r in rows) and int(rows[0]["count"]) > 0


def test_utilisation_charts_follow_the_timeline(win, qtbot):
    win.docks["Utilisation"].show()
    win.docks["Utilisation"].raise_()
    panel = win.utilisation
    qtbot.waitUntil(lambda: bool(panel.frames))
    st = win.state
    lo, hi = st.trace.time_bounds()
    st.show_window(lo + (hi - lo) * 0.4, lo + (hi - lo) * 0.5, pad=0)
    fr = panel.frames[0]
    assert fr.edges[0] == pytest.approx(st.scale.r0) and fr.edges[-1] == pytest.approx(st.scale.r1)
    x0, x1 = panel._items[0]["share"].getViewBox().viewRange()[0]
    tol = 1e-6 * st.scale.span
    assert x0 == pytest.approx(st.scale.r0, abs=tol) and x1 == pytest.approx(st.scale.r1, abs=tol)
    assert np.allclose(sum(fr.shares.values()), 1.0)
    vb = panel._items[0]["share"].getViewBox()
    left = panel.mapFromScene(vb.mapToScene(vb.boundingRect().topLeft())).x()
    assert abs(left - GUTTER_W) <= 1  # the charts' time axis starts under the timeline's
    assert {s.label for s in fr.bandwidth} >= {"HBM", "PCIe H2D", "PCIe D2H"}
    assert all(s.unit == "%" for s in fr.bandwidth)
    img = panel.grab().toImage()
    assert img.width() > 100 and img.pixelColor(img.width() // 2, img.height() // 4) != win.theme.c("bg")


@pytest.mark.parametrize("view", ["stats", "utilisation"])
def test_render_view_writes_a_png(tmp_path, view, qapp):
    out = tmp_path / f"{view}.png"
    assert main(["render", DEMO, "--view", view, "--out", str(out), "--size", "900x500"]) == 0
    from PySide6.QtGui import QImage

    img = QImage(str(out))
    assert (img.width(), img.height()) == (900, 500)
    colours = {img.pixelColor(x, y).name() for x in range(0, 900, 37) for y in range(0, 500, 23)}
    assert len(colours) > 4  # drawn, not a blank


def test_counter_strips_align_with_the_timeline_and_speak_units(win, qtbot, qtmodeltester):
    qtmodeltester.check(win.counter_model)
    charts = win.counters
    qtbot.waitUntil(lambda: bool(charts._strips))
    strip = charts._strips[0]
    vb = strip["plot"].getViewBox()
    left = charts.mapFromScene(vb.mapToScene(vb.boundingRect().topLeft())).x()
    assert left == GUTTER_W  # the strips' time axis starts where the timeline's does
    st = win.state
    assert vb.viewRange()[0] == pytest.approx([st.scale.r0, st.scale.r1])
    entry = win.counter_model.entries[strip["row"]]
    ticks = strip["plot"].getAxis("left")._tickLevels[0]
    assert ticks == [(strip["vmax"], format_value(strip["vmax"], entry.unit))]  # the maximum, in the counter's unit
    assert "max in view" in strip["html"]
    lo, hi = st.trace.time_bounds()
    st.set_range(((hi - lo) * 0.2, (hi - lo) * 0.4))
    assert strip["region"].isVisible() and "mean in range" in strip["html"]
