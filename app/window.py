"""The main window: timeline in the centre with counter panels under it on the same time axis,
the lane tree and counter list on the left, details on the right, search in the toolbar,
File → Open / recent files / drag-and-drop, loading in a worker thread, themes, status bar."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

from accelview.model import Trace
from accelview.model.analysis.ops import bottleneck_colour_table
from accelview.model.text.report import class_evidence
from accelview.model.text.values import format_count
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QListView,
    QMainWindow,
    QMessageBox,
    QProgressDialog,
    QSplitter,
    QToolBar,
    QWidget,
)

from .bookmarks import BookmarksPanel
from .comparing import Comparing
from .counter_charts import CounterCharts
from .counter_list import CounterListModel
from .details import DetailsPanel
from .file_choosing import ExportJob, FileChoosing
from .findings_panel import FindingsPanel
from .fleet_window import Fleeting
from .graph_panel import GraphPanel
from .keys_help import KeysDialog
from .lane_tree import LanePanel, LaneTreeView
from .loading import LoadJob, progress_dialog
from .paint import GUTTER_W
from .profile_dialog import ProfileDialog
from .search import SearchBar
from .state import ViewState
from .stats_panel import StatsPanel
from .status_line import StatusLine
from .theme import THEMES, stylesheet
from .timeline import TimelineWidget
from .utilisation_panel import UtilisationPanel

LEFT_DOCK_W, RIGHT_DOCK_W = 170, 320  # at 1600 px the timeline keeps over two thirds of the width
LEFT_DOCK_MAX = 200  # at 1600 px (in proportion to others): the Lanes dock grows to its names up to it, the
# timeline still keeping two thirds of the width
LAYOUT_VERSION = 2  # saved dock states of older layouts (wide, untabbed docks) are not restored


class MainWindow(Fleeting, StatusLine, FileChoosing, Comparing, QMainWindow):
    """The accelview window. ``set_trace`` shows a loaded trace; ``open_path`` loads a file."""

    def __init__(self, theme: str | None = None, settings: QSettings | None = None,
                 loader: Callable[..., Trace] | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings("accelview", "accelview")
        self.loader = loader
        self.theme = THEMES.get(theme or str(self.settings.value("theme", "dark")), THEMES["dark"])
        self.state = ViewState()
        self.job: LoadJob | None = None
        self.progress: QProgressDialog | None = None
        self.error_box: QMessageBox | None = None
        self.keys_dialog: KeysDialog | None = None
        self.export_job: ExportJob | None = None
        self.setWindowTitle("accelview")
        self.setWindowIcon(QIcon(self.icon_path()))
        self.setAcceptDrops(True)
        self._build_views()
        self._build_actions()
        self._build_status()
        self._build_fleet()
        self.apply_theme(self.theme.name)

    # -- construction ---------------------------------------------------------------------------
    def _build_views(self) -> None:
        st = self.state
        self.timeline = TimelineWidget(st, self.theme)
        self.counter_model = CounterListModel(st, self)
        self.counters = CounterCharts(st, self.counter_model, self.theme)
        self.counters.wheel_target = self.timeline
        top = QWidget()
        lay = QHBoxLayout(top)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.timeline)
        self.loading_label = QLabel("", alignment=Qt.AlignmentFlag.AlignCenter)
        self.loading_label.setObjectName("loading")
        self.loading_label.setVisible(False)
        lay.addWidget(self.loading_label, 1)
        lay.addWidget(self.timeline.vbar)
        bottom = QWidget()
        lay2 = QHBoxLayout(bottom)
        lay2.setContentsMargins(0, 0, 0, 0)
        lay2.setSpacing(0)
        lay2.addWidget(self.counters)
        self._bar_spacer = QWidget()  # keeps the counters' time axis under the timeline's
        lay2.addWidget(self._bar_spacer)
        bottom.setVisible(False)  # shown when a trace has counters
        self.counter_model.modelReset.connect(lambda: bottom.setVisible(bool(self.counter_model.entries)))
        self.counter_model.modelReset.connect(
            lambda: self.docks["Counters"].setVisible(bool(self.counter_model.entries)) if self.docks else None)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(0, 1)
        split.setChildrenCollapsible(False)

        def fit(*_: object) -> None:  # the strips' pane as tall as its strips: no empty band when some are unticked
            h = self.counters.maximumHeight()
            bottom.setFixedHeight(h)
            if bottom.isVisible() and sum(split.sizes()):
                split.setSizes([max(sum(split.sizes()) - h, 1), h])

        self.counter_model.modelReset.connect(fit)
        self.counter_model.dataChanged.connect(fit)
        fit()
        self.setCentralWidget(split)

        self.lane_view = LaneTreeView(st)
        self.counter_list = QListView()
        self.counter_list.setModel(self.counter_model)
        self.details = DetailsPanel(st)
        self.findings = FindingsPanel(st)
        self.bookmarks = BookmarksPanel(st)
        self.graph_panel = GraphPanel(st, self.theme)
        self.bookmarks.message.connect(lambda text: self.statusBar().showMessage(text, 10000))
        self.stats = StatsPanel(st, self.theme)
        self.utilisation = UtilisationPanel(st, self.theme)
        self.utilisation.wheel_target = self.timeline
        self.utilisation.gutter = (GUTTER_W, self.timeline.vbar.sizeHint().width())
        self.findings.report_ready.connect(self.stats.set_report)
        self.findings.report_ready.connect(self.utilisation.set_report)
        self.docks = {}
        for name, w, area in (("Lanes", LanePanel(self.lane_view), Qt.DockWidgetArea.LeftDockWidgetArea),
                              ("Counters", self.counter_list, Qt.DockWidgetArea.LeftDockWidgetArea),
                              ("Details", self.details, Qt.DockWidgetArea.RightDockWidgetArea),
                              ("Findings", self.findings, Qt.DockWidgetArea.RightDockWidgetArea),
                              ("Bookmarks", self.bookmarks, Qt.DockWidgetArea.RightDockWidgetArea),
                              ("Graph", self.graph_panel, Qt.DockWidgetArea.BottomDockWidgetArea)):
            dock = QDockWidget(name, self)
            dock.setObjectName(name)
            dock.setWidget(w)
            self.addDockWidget(area, dock)
            self.docks[name] = dock
        for name, w in (("Statistics", self.stats), ("Utilisation", self.utilisation)):  # tabbed under the timeline,
            dock = QDockWidget(name, self)  # hidden until opened from the View menu: the timeline keeps its height
            dock.setObjectName(name)
            dock.setWidget(w)
            self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
            self.docks[name] = dock
        self.tabifyDockWidget(self.docks["Statistics"], self.docks["Utilisation"])
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)  # the bottom docks sit
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)  # under the timeline
        # The timeline gets most of the width: lanes and counters share one narrow tabbed dock;
        # bookmarks get a short strip under the findings (tabbed there, they squeezed Details).
        self.docks["Graph"].setVisible(False)  # View → Graph; built when first shown (large captures take a while)
        self.tabifyDockWidget(self.docks["Lanes"], self.docks["Counters"])
        self.docks["Lanes"].raise_()
        for name in ("Statistics", "Utilisation"):  # hidden until opened from the View menu
            self.docks[name].hide()
        self._sized = False  # the default dock sizes apply at the first show (with bottom docks, not before)
        self.state.trace_changed.connect(self.fit_lanes_dock)

    def _build_actions(self) -> None:
        fm = self.menuBar().addMenu("&File")
        self.open_action = QAction("&Open…", self, shortcut=QKeySequence.StandardKey.Open, triggered=self.open_dialog)
        fm.addAction(self.open_action)
        self.open_folder_action = QAction("Open &folder of traces…", self, shortcut="Ctrl+Shift+O",
                                          triggered=self.open_folder_dialog)
        fm.addAction(self.open_folder_action)
        self.profile_action = QAction("&Profile script…", self, shortcut="Ctrl+P", triggered=self.profile_dialog)
        fm.addAction(self.profile_action)
        self.recent_menu = fm.addMenu("Open &Recent")
        self.compare_action = QAction("&Compare with…", self, shortcut="Ctrl+Shift+D", enabled=False,
                                      triggered=self.compare_dialog)
        self.state.trace_changed.connect(lambda: self.compare_action.setEnabled(self.state.trace is not None))
        fm.addAction(self.compare_action)
        fm.addSeparator()
        self.export_png_action = QAction("Export view as &PNG…", self, shortcut="Ctrl+E",
                                         triggered=self.export_png_dialog)
        self.export_chrome_action = QAction("Export for P&erfetto…", self, shortcut="Ctrl+Shift+E",
                                            triggered=self.export_chrome_dialog)
        for a in (self.export_png_action, self.export_chrome_action):
            a.setEnabled(False)  # until a trace is open
            self.state.trace_changed.connect(lambda a=a: a.setEnabled(self.state.trace is not None))
            fm.addAction(a)
        fm.addSeparator()
        fm.addAction(QAction("&Quit", self, shortcut=QKeySequence.StandardKey.Quit, triggered=self.close))
        vm = self.menuBar().addMenu("&View")
        fit = QAction("&Fit all", self, shortcut="Ctrl+0", triggered=self._fit_all)
        vm.addAction(fit)
        self.theme_action = QAction("&Light theme", self, checkable=True, shortcut="Ctrl+T")
        self.theme_action.toggled.connect(lambda on: self.apply_theme("light" if on else "dark"))
        vm.addAction(self.theme_action)
        self.bottleneck_action = QAction("Colour by &bottleneck", self, checkable=True, shortcut="B", enabled=False)
        self.bottleneck_action.setToolTip("compute red · memory blue · latency yellow · transfer green · "
                                          "communication purple · other grey")
        self.bottleneck_action.toggled.connect(self._colour_by_bottleneck)
        self.findings.report_ready.connect(lambda _r: self.bottleneck_action.setEnabled(True))
        self.findings.report_ready.connect(self.details.set_report)
        self.state.trace_changed.connect(self._trace_changed_colours)
        vm.addAction(self.bottleneck_action)
        self.together_action = QAction("&Devices together", self, checkable=True, shortcut="G")
        self.together_action.setToolTip("Every device of every host as one compact row, under the host threads")
        self.together_action.toggled.connect(self.state.set_together)
        vm.addAction(self.together_action)
        self.clock_error_action = QAction("Show &clock error", self, checkable=True, shortcut="Ctrl+K")
        self.clock_error_action.setToolTip("Each aligned host's and device's clock error bound at its lane's edge")
        self.clock_error_action.toggled.connect(self.state.set_show_clock_error)
        vm.addAction(self.clock_error_action)
        vm.addAction(QAction("&Next bookmark", self, shortcut="Ctrl+]", triggered=lambda: self.bookmarks.step(1)))
        vm.addAction(QAction("P&revious bookmark", self, shortcut="Ctrl+[", triggered=lambda: self.bookmarks.step(-1)))
        vm.addSeparator()
        for dock in self.docks.values():
            vm.addAction(dock.toggleViewAction())
        hm = self.menuBar().addMenu("&Help")
        hm.addAction(QAction("&Keyboard shortcuts", self, shortcut="F1", triggered=self.show_keys))
        tb = QToolBar("Main", self)
        tb.setObjectName("main-toolbar")
        tb.setMovable(False)
        tb.addAction(self.open_action)
        tb.addAction(self.profile_action)
        tb.addAction(fit)
        tb.addSeparator()
        self.search = SearchBar(self.state)
        self.search.escaped.connect(lambda: self.timeline.setFocus(Qt.FocusReason.ShortcutFocusReason))
        tb.addWidget(self.search)
        self.addToolBar(tb)
        focus = QAction(self, shortcut=QKeySequence.StandardKey.Find, triggered=lambda: self.search.edit.setFocus())
        self.addAction(focus)
        self._refresh_recent()

    def show_keys(self) -> KeysDialog:
        """Help → Keyboard shortcuts: the table of every key (non-modal, one at a time)."""
        if self.keys_dialog is None:
            self.keys_dialog = KeysDialog(self)
        self.keys_dialog.show()
        self.keys_dialog.raise_()
        return self.keys_dialog

    # -- themes ---------------------------------------------------------------------------------
    @staticmethod
    def icon_path() -> str:
        """Path of the app icon."""
        return str(resources.files("accelview.resources").joinpath("icon.svg"))

    def apply_theme(self, name: str) -> None:
        """Switch between the dark and light theme (remembered in the settings)."""
        self.theme = THEMES.get(name, THEMES["dark"])
        self.setStyleSheet(stylesheet(self.theme.name))
        self.timeline.set_theme(self.theme)
        self.counters.set_theme(self.theme)
        self.stats.set_theme(self.theme)
        self.utilisation.set_theme(self.theme)
        self.legend.set_theme(self.theme)
        self.graph_panel.set_theme(self.theme)
        self.settings.setValue("theme", self.theme.name)
        self.theme_action.blockSignals(True)
        self.theme_action.setChecked(self.theme.name == "light")
        self.theme_action.blockSignals(False)

    def showEvent(self, event) -> None:
        self._bar_spacer.setFixedWidth(self.timeline.vbar.sizeHint().width())
        if not self._sized:
            self._sized = True
            self.resizeDocks([self.docks["Lanes"], self.docks["Details"]], [LEFT_DOCK_W, RIGHT_DOCK_W],
                             Qt.Orientation.Horizontal)
            self.resizeDocks([self.docks["Details"], self.docks["Findings"], self.docks["Bookmarks"]],
                             [480, 260, 120], Qt.Orientation.Vertical)
            self.fit_lanes_dock()
        super().showEvent(event)

    def fit_lanes_dock(self) -> None:
        """The Lanes dock as wide as its lanes' names, from LEFT_DOCK_W up to LEFT_DOCK_MAX (less
        in a narrower window; longer names elide), when shown and for each new trace."""
        if not self._sized:
            return  # the first show fits it
        cap = max(LEFT_DOCK_W, min(LEFT_DOCK_MAX, self.width() * LEFT_DOCK_MAX // 1600))
        width = max(LEFT_DOCK_W, min(cap, self.lane_view.names_width()))
        self.resizeDocks([self.docks["Lanes"]], [width], Qt.Orientation.Horizontal)

    # -- files ----------------------------------------------------------------------------------
    def set_trace(self, trace: Trace, title: str = "", lod: object = None) -> None:
        """Show a trace that is already in memory (``lod``: its prepared timeline index)."""
        self.timeline.painter.hover_sid = -1
        self.state.set_trace(trace, lod)
        self.setWindowTitle(f"accelview — {title or trace.source or 'trace'}")
        self._show_view()
        self.timeline.setFocus()  # W/A/S/D work at once

    def _trace_changed_colours(self) -> None:
        self.bottleneck_action.setEnabled(False)
        self.bottleneck_action.setChecked(False)

    def _colour_by_bottleneck(self, on: bool) -> None:
        """Colour device ops by their bottleneck class (from the Findings panel's analysis)."""
        report, lod = self.findings.report, self.state.lod
        if lod is None:
            return
        if on and report is not None:
            trace = self.state.trace
            lod.set_colour_table(bottleneck_colour_table(len(trace.strings), trace.slices.name, report.ops))
        else:
            lod.set_colour_table(None)
        self.legend.setVisible(on and report is not None)
        if on and report is not None:
            self.legend.show_classes(set(report.ops.label.tolist()), class_evidence(report))
        self.timeline.update()

    def _fit_all(self) -> None:
        self.state.set_range(None)
        self.state.select(-1)
        self.state.fit_all()

    def profile_dialog(self) -> ProfileDialog:
        """Run a script under capture (live progress, cancel keeps what was captured) and open the
        capture when it is closed."""
        dlg = ProfileDialog(self)
        dlg.captured.connect(self.open_path)
        dlg.setModal(False)
        dlg.show()
        return dlg

    def open_path(self, path: str, loader: Callable[..., Trace] | None = None) -> LoadJob:
        """Load a file on a worker thread; the current view stays until it succeeds. ``loader``
        reads it instead of the window's (a cluster's, for which ``path`` is the label)."""
        if self.job is not None and self.job.running:
            self.job.cancel()
        job = LoadJob(path, loader or self.loader, self)
        self.job = job
        self.progress = progress_dialog(job, Path(path).name, self)
        self._show_loading(path)
        job.loaded.connect(lambda tr: self._loaded(path, tr, job.lod))
        job.failed.connect(self._failed)
        job.cancelled.connect(lambda: self.statusBar().showMessage(f"Loading {path} cancelled", 5000))
        job.finished.connect(lambda: self._show_loading(None) if self.job is job else None)
        job.start()
        return job

    def _show_loading(self, path: str | None) -> None:
        """While the first file loads, say so where the timeline will be, instead of its
        "Open a capture" placeholder behind the progress dialog."""
        loading = path is not None and self.state.trace is None
        self.loading_label.setText(f"Loading {Path(path).name}…" if loading else "")
        self.loading_label.setVisible(loading)
        self.timeline.setVisible(not loading)

    def _loaded(self, path: str, trace: Trace, lod: object = None) -> None:
        self._show_loading(None)
        self.set_trace(trace, Path(path).name, lod)
        self.add_recent(path)
        self.statusBar().showMessage(f"Opened {path}: {format_count(len(trace.slices))} slices", 5000)
        self.bookmarks.set_source(path)  # after: a bad sidecar's line must not be overwritten
        self.file_watch.watch(path)  # a label of several files is no path: not watched

    def _failed(self, message: str) -> None:
        """Show a bad-file dialog; the trace on screen stays as it was."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Cannot open file", message, QMessageBox.StandardButton.Ok, self)
        box.setInformativeText("The current view is unchanged.")
        self.error_box = box
        box.open()

    def restore_layout(self) -> None:
        """Restore the window geometry and dock layout saved at the last close."""
        geo, dock = self.settings.value("geometry"), self.settings.value("dock_state")
        if geo is not None:
            self.restoreGeometry(geo)
        if dock is not None and self.restoreState(dock, LAYOUT_VERSION):
            self._sized = True  # the saved sizes, not the defaults

    def closeEvent(self, event) -> None:
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("dock_state", self.saveState(LAYOUT_VERSION))
        if self.job is not None and self.job.running:
            self.job.cancel()
            self.job.wait(5000)
        if self.export_job is not None and self.export_job.isRunning():
            self.export_job.wait()  # finish the file rather than leave half of it (Qt aborts on a live thread)
        self.findings.shutdown()
        self.graph_panel.shutdown()
        super().closeEvent(event)
