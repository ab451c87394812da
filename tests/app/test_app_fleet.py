"""The fleet view: built from a FleetReport dict, sorted by any metric (box or header), stragglers
and failures shown, arrows and Enter, the analysis in the background with progress, and in the
window: a large folder opens on it, a small one keeps the merged timeline, and drilling into a
host shows the trace ``host_timeline`` gives for that host."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import threading

import pytest
from accelview.app.fleet_model import HOST, METRIC, STRIP
from accelview.app.fleet_view import FleetView
from accelview.app.fleet_window import FLEET_FIRST, FLEET_LOCAL, fleet_files, fleet_options
from accelview.app.theme import THEMES
from accelview.app.window import MainWindow
from accelview.capture.synthetic import demo_trace
from accelview.model import CaptureError
from fleet_reports import fake_report
from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtWidgets import QStyleOptionViewItem


@pytest.fixture
def view(qtbot):
    v = FleetView(THEMES["dark"])
    qtbot.addWidget(v)
    v.resize(1200, 700)
    v.show()
    return v


def test_view_builds_from_a_report_ranked(view):
    report = fake_report(12, late=(7, 2))
    view.set_report(report)
    by_rank = [h["host"] for h in sorted(report["hosts"], key=lambda h: h["rank"])]
    assert view.hosts_in_order() == by_rank
    assert view.hosts_in_order()[:2] == ["host2", "host7"] or view.hosts_in_order()[:2] == ["host7", "host2"]
    assert view.model.index(0, 0).data() == "1"
    assert view.selected_host() == by_rank[0]
    assert "stragglers: host2, host7" in view.title.text()
    stragglers = [view.findings.item(i).text() for i in range(2)]
    assert all(t.startswith("straggler host") for t in stragglers)  # stragglers before other findings
    assert not view.banner.isVisible() and not view.failures.isVisible()
    img = view.delegate.image(report["hosts"][0]["utilisation"])
    assert img.width() == len(report["hosts"][0]["utilisation"]) and img.height() == 1


def test_sorting_by_box_and_header_changes_the_order(view):
    report = fake_report(10, late=(4,), seed=3)
    view.set_report(report)
    hosts = report["hosts"]
    view.sort_by("lost_ns")
    assert view.hosts_in_order() == [h["host"] for h in sorted(hosts, key=lambda h: -h["lost_ns"])]
    view.sort_by("clock.error_ns")  # a nested metric goes to the metric column
    assert view.model.metric == "clock.error_ns"
    assert view.model.headerData(METRIC, Qt.Orientation.Horizontal) == "clock error"
    assert view.hosts_in_order() == [h["host"] for h in sorted(hosts, key=lambda h: -h["clock"]["error_ns"])]
    view.table.sortByColumn(HOST, Qt.SortOrder.AscendingOrder)  # a header click
    assert view.hosts_in_order() == [f"host{i}" for i in range(10)]  # host2 before host10: by number
    assert view.sort_box.currentData() == "host"
    view.table.sortByColumn(STRIP, Qt.SortOrder.AscendingOrder)
    means = {h["host"]: sum(h["utilisation"]) / len(h["utilisation"]) for h in hosts}
    order = view.hosts_in_order()
    assert [means[h] for h in order] == sorted(means.values())
    assert {view.sort_box.itemData(i) for i in range(view.sort_box.count())} >= {
        "rank", "late_ns", "lost_ns", "busy", "host", "compute_ns", "devices", "clock.steps"}
    texts = [view.sort_box.itemText(i) for i in range(view.sort_box.count())]
    assert {"host name", "clock steps", "clock error"} <= set(texts)
    assert not [t for t in texts if "." in t or "_" in t]  # no raw keys


def test_the_sort_box_keeps_the_chosen_sort_while_analysing(view, qtbot):
    view.set_report(fake_report(6, seed=2))
    view.sort_by("lost_ns")
    go = threading.Event()
    view.analyze(["/f/a.h5"], lambda paths, progress=None: go.wait(10) and fake_report(6, seed=4))
    view.set_report(None)  # as a newly opened fleet shows while its analysis runs
    assert view.sort_box.currentData() == "lost_ns" and view.sort_box.currentText() == "lost"
    with qtbot.waitSignal(view.report_ready, timeout=5000):
        go.set()
    assert view.sort_box.currentData() == "lost_ns"


def test_the_model_passes_the_model_tester_and_a_strip_tells_its_time(view, qtmodeltester):
    report = fake_report(6)
    view.set_report(report)
    qtmodeltester.check(view.model)
    rect = view.table.visualRect(view.model.index(0, STRIP))
    option = QStyleOptionViewItem()
    option.rect = rect
    bins = len(report["hosts"][0]["utilisation"])
    assert view.delegate.bin_at(option, rect.left() + 3, bins) == 0
    assert view.delegate.bin_at(option, rect.right() - 3, bins) == bins - 1
    assert view.delegate.bin_at(option, rect.left() + 3 + (rect.width() - 6) / 2, bins) == bins // 2
    assert view.delegate.bin_at(option, rect.left(), bins) == -1  # the padding is no bin


def test_failures_are_named_and_the_answer_marked_partial(view):
    view.set_report(fake_report(6, failures={"/f/host6.h5": "worker died",
                                             "/f/host7.h5": "/f/host7.h5: not an HDF5 capture"}))
    assert view.banner.isVisible() and "Partial answer: 2 of 8" in view.banner.text()
    assert "host6.h5, host7.h5" in view.banner.text()
    items = [view.failures.item(i).text() for i in range(view.failures.count())]
    assert items == ["host6.h5 — worker died", "host7.h5 — not an HDF5 capture"]
    assert view.failures.item(1).toolTip().startswith("/f/host7.h5")
    assert view.failures_label.text() == "Failed captures (2)"


def test_arrows_move_and_enter_drills_down(view, qtbot):
    view.set_report(fake_report(5, late=(3,)))
    order = view.hosts_in_order()
    qtbot.keyClick(view.table, Qt.Key.Key_Down)
    assert view.selected_host() == order[1]
    with qtbot.waitSignal(view.drill, timeout=1000) as sig:
        qtbot.keyClick(view.table, Qt.Key.Key_Return)
    assert sig.args == [order[1]]
    view.findings.setCurrentRow(0)  # a straggler finding selects its host
    view.findings.itemClicked.emit(view.findings.item(0))
    assert view.selected_host() == "host3"


def test_analysis_runs_in_the_background_with_progress(view, qtbot):
    report = fake_report(4)
    go = threading.Event()
    seen: list[tuple[int, int]] = []  # the bar's (value, maximum) as it moves

    def analyze(paths, progress=None, workers=None):
        assert workers == 2
        for i in range(1, len(paths) + 1):
            progress(i, len(paths))
            if i == 2:
                go.wait(10)
        return report

    view.progress.valueChanged.connect(lambda v: seen.append((v, view.progress.maximum())))
    view.analyze([f"/f/host{i}.h5" for i in range(4)], analyze, workers=2)
    qtbot.waitUntil(lambda: view.progress.value() == 2, timeout=5000)
    assert view.running and view.model.rowCount() == 0  # the UI answers while the analysis waits
    with qtbot.waitSignal(view.report_ready, timeout=5000):
        go.set()
    assert seen == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    assert not view.running and view.model.rowCount() == 4


def test_a_new_analysis_drops_the_one_under_way_without_waiting(view, qtbot):
    go = threading.Event()
    calls: list[str] = []

    def slow(paths, progress=None):
        calls.append("slow")
        go.wait(10)
        calls.append("woke")
        progress(1, 1)  # raises: this run was dropped
        return fake_report(3)

    view.analyze(["/f/a.h5"], slow)
    qtbot.waitUntil(lambda: calls == ["slow"], timeout=5000)
    with qtbot.waitSignal(view.report_ready, timeout=5000):
        view.analyze(["/f/b.h5"], lambda paths, progress=None: fake_report(5))  # while the first still runs
        assert calls == ["slow"]  # not waited for
    go.set()
    view.shutdown()
    qtbot.wait(10)
    assert view.model.rowCount() == 5 and not view.banner.isVisible() and not view.running


def test_a_failed_analysis_says_why(view, qtbot):
    def analyze(paths, progress=None):
        raise CaptureError(paths[0], "no capture in this fleet could be read")

    with qtbot.waitSignal(view.analysis_failed, timeout=5000) as sig:
        view.analyze(["/f/a.h5"], analyze)
    assert "no capture in this fleet could be read" in sig.args[0]
    assert "no capture in this fleet could be read" in view.banner.text() and not view.running


def test_fleet_files_and_engine_options(tmp_path):
    for i in range(3):
        (tmp_path / f"host{i}.h5").write_bytes(b"")
    assert fleet_files([str(tmp_path)]) == [str(tmp_path / f"host{i}.h5") for i in range(3)]
    assert fleet_files([str(tmp_path / "host0.h5")]) == []  # one capture is no fleet
    s = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    assert fleet_options(FLEET_LOCAL - 1, s) == {"workers": None}
    assert fleet_options(FLEET_LOCAL, s)["workers"] >= 1
    s.setValue("fleet/scheduler", "tcp://10.0.0.1:8786")
    assert fleet_options(3, s) == {"scheduler": "tcp://10.0.0.1:8786"}


@pytest.fixture
def win(qtbot, tmp_path):
    w = MainWindow(theme="dark", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1200, 800)
    w.show()
    return w


def _fleet_dir(path, n):
    path.mkdir()
    for i in range(n):
        (path / f"host{i}.h5").write_bytes(b"")
    return path


def test_a_large_fleet_opens_on_the_fleet_view_and_drills_into_a_host(win, qtbot, tmp_path):
    n = FLEET_FIRST + 4
    folder = _fleet_dir(tmp_path / "fleet", n)
    report = fake_report(n, late=(9,), folder=str(folder))
    calls: list[tuple[list[str], dict]] = []
    trace = demo_trace(steps=2, layers=1)
    drilled: list[str] = []
    win.fleet_analyze = lambda paths, progress=None, **kw: calls.append((paths, kw)) or report
    win.fleet_drill = lambda rep, host: drilled.append(host) or trace
    with qtbot.waitSignal(win.fleet_view.report_ready, timeout=5000):
        win.open_paths([str(folder)])
    assert win.pages.currentWidget() is win.fleet_view and win.fleet_action.isChecked()
    assert sorted(calls[0][0]) == sorted(str(folder / f"host{i}.h5") for i in range(n))
    assert win.job is None  # no merged timeline loaded
    assert win.docks["Findings"].windowTitle() == "Findings"  # nothing behind the fleet: "No capture open"
    assert win.fleet_view.hosts_in_order()[0] == "host9"
    with qtbot.waitSignal(win.state.trace_changed, timeout=10000):
        qtbot.keyClick(win.fleet_view.table, Qt.Key.Key_Return)
    assert drilled == ["host9"] and win.state.trace is trace
    assert win.state.time_origin == report["span_ns"][0] - win.state.origin  # the ruler counts as the fleet's
    assert win.pages.currentIndex() == 0 and not win.fleet_action.isChecked()
    assert "host9 of fleet" in win.windowTitle()
    assert win.docks["Findings"].windowTitle() == "Findings"  # the timeline shows the host: plain titles
    win.fleet_action.trigger()  # View → Fleet goes back, the report kept (not analysed again)
    assert win.pages.currentWidget() is win.fleet_view and len(calls) == 1
    for name in ("Lanes", "Findings", "Details"):  # the side docks still show host9: they say so
        assert win.docks[name].windowTitle() == f"{name} · host9 (drilled in)"
    win.fleet_action.trigger()
    assert win.docks["Lanes"].windowTitle() == "Lanes"


def test_a_small_cluster_opens_merged_with_the_fleet_behind_view_fleet(win, qtbot, tmp_path):
    folder = _fleet_dir(tmp_path / "small", 3)
    win.fleet_analyze = lambda paths, progress=None, **kw: fake_report(len(paths))
    job = win.open_paths([str(folder)])
    job.wait(10000)  # the merged load (of empty files: it fails with a dialog)
    assert win.pages.currentIndex() == 0 and win.fleet_action.isEnabled() and not win.fleet_action.isChecked()
    with qtbot.waitSignal(win.fleet_view.report_ready, timeout=5000):
        win.fleet_action.trigger()
    assert win.pages.currentWidget() is win.fleet_view
    assert win.fleet_view.model.rowCount() == 3


def test_a_fleet_nothing_could_be_read_of_gets_a_dialog(win, qtbot, tmp_path):
    folder = _fleet_dir(tmp_path / "junk", 3)  # empty files: the real engine reads none of them
    job = win.open_paths([str(folder)])
    job.wait(10000)
    qtbot.wait(10)
    with qtbot.waitSignal(win.fleet_view.analysis_failed, timeout=30000):
        win.fleet_action.trigger()
    assert win.error_box is not None and "none of the 3 captures could be analysed" in win.error_box.text()
    assert "host0.h5" in win.error_box.text() and win.fleet_view.banner.isVisible()


def test_a_crowded_fleet_gets_the_whole_fleet_map_which_picks_hosts(view, qtbot):
    view.set_report(fake_report(8))
    assert not view.map.isVisibleTo(view)  # all in the table: no map
    view.set_report(fake_report(200, late=(150,)))
    assert view.map.isVisibleTo(view)
    assert view.map._image.height() == 200
    order = view.hosts_in_order()
    qtbot.wait(20)  # laid out now it shows
    qtbot.mouseClick(view.map, Qt.MouseButton.LeftButton, pos=QPoint(1, view.map.height() - 1))
    assert view.selected_host() == order[-1]
    assert view.map.current == 199 and view.map.shown[1] == 199  # the table scrolled to it


def test_a_real_fleet_analysed_and_drilled_into(win, qtbot, tmp_path):
    """The real engine (in this process) and the real drill-down on a small simulated fleet."""
    from fleet_tasks import write_fleet

    folder = tmp_path / "real"
    write_fleet(folder, hosts=3, devices=2, steps=4)
    job = win.open_paths([str(folder)])  # three hosts: the merged timeline, the fleet behind View → Fleet
    with qtbot.waitSignal(win.fleet_view.report_ready, timeout=60000):
        win.fleet_action.trigger()
    job.wait(60000)
    qtbot.waitUntil(lambda: win.state.trace is not None, timeout=60000)
    assert win.pages.currentIndex() == 1  # the merged timeline, arriving late, stays behind the fleet
    view = win.fleet_view
    assert sorted(view.hosts_in_order()) == ["host0", "host1", "host2"]
    assert view.hosts_in_order()[0] == "host1"  # the planted straggler ranks first
    assert "stragglers: host1" in view.title.text()
    assert all(len(view.model.host_at(r)["utilisation"]) > 0 for r in range(3))
    qtbot.keyClick(view.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "host1 of fleet" in win.windowTitle(), timeout=60000)
    assert win.pages.currentIndex() == 0
    assert len(win.state.trace.slices) > 0


def test_open_merged_timeline_leaves_the_fleet_view_and_loads_every_host(win, qtbot, tmp_path):
    folder = _fleet_dir(tmp_path / "fleet", FLEET_FIRST + 1)
    win.fleet_analyze = lambda paths, progress=None, **kw: fake_report(len(paths), folder=str(folder))
    with qtbot.waitSignal(win.fleet_view.report_ready, timeout=5000):
        win.open_paths([str(folder)])
    assert win.pages.currentWidget() is win.fleet_view and win.job is None
    qtbot.mouseClick(win.fleet_view.merged_button, Qt.MouseButton.LeftButton)
    assert win.job is not None  # the merged load of every host started (of these empty files it fails)
    win.job.wait(10000)
    assert win.pages.currentIndex() == 0
