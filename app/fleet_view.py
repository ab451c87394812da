"""The fleet view: a FleetReport (``analyze_fleet``) as one summary lane per host, its devices'
busy fraction over the fleet's span as a heat strip beside its rank, lateness and lost time,
sortable by any numeric metric (the box, or a click on a header); the stragglers and other
findings at the side, captures that failed listed by name with the answer marked partial. The
analysis runs off the UI thread with a progress bar; Enter or a double-click on a host asks for
its timeline (``drill``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accelview.model.text.values import format_duration
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from .fleet_map import FleetMap
from .fleet_model import HOST, HOST_ROLE, LATE, LOST, METRIC, RANK, STRIP, FleetModel, default_order, label, metric_keys
from .fleet_run import Analyze, FleetRun, default_analyze
from .fleet_strip import StripDelegate, StripHeader, legend_pixmap
from .theme import Theme

SIDE_MAX_W = 300  # px of the findings' column: the strips keep the width
MIN_ROW, MAX_ROW = 12, 22  # px of a host's lane: fit the fleet to the height within these
HOST_ROLE_ITEM = Qt.ItemDataRole.UserRole  # a finding's culprit host in the side list


class FleetTable(QTableView):
    """The hosts' table: arrows move the selection, Enter asks for the host's timeline."""

    enter_pressed = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.enter_pressed.emit()
            return
        super().keyPressEvent(event)


class FleetView(QWidget):
    """One fleet's report; ``analyze`` runs ``analyze_fleet`` for it in the background."""

    drill = Signal(str)  # a host's name: open its timeline on the fleet's timebase
    merged_requested = Signal()  # the user asks for the whole fleet as one merged timeline
    report_ready = Signal(object)
    analysis_failed = Signal(str)  # no answer at all: the one line why

    def __init__(self, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.report: dict[str, Any] | None = None
        self._run: FleetRun | None = None
        self.model = FleetModel(self)
        self.title = QLabel("No fleet analysed")
        self.title.setObjectName("fleet-title")
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # a long title is cut
        self.sort_box = QComboBox()
        self.sort_box.setToolTip("Sort the hosts by this metric (or click a column's header)")
        self.sort_box.currentIndexChanged.connect(lambda _i: self.sort_by(self.sort_box.currentData()))
        self.progress = QProgressBar()
        self.progress.setFormat("analysing %v / %m captures")
        self.progress.setVisible(False)
        self.merged_button = QPushButton("Open merged timeline")
        self.merged_button.clicked.connect(lambda _checked=False: self.merged_requested.emit())
        self.merged_button.setToolTip("Every host of the fleet as one timeline (heavy for many hosts)")
        key = QLabel()
        key.setPixmap(legend_pixmap(80, 10))
        bar = QHBoxLayout()
        bar.setContentsMargins(6, 4, 6, 4)
        bar.addWidget(self.title, 1)
        bar.addWidget(self.progress, 1)
        for w in (QLabel("idle"), key, QLabel("busy"), QLabel("  sort by"), self.sort_box, self.merged_button):
            bar.addWidget(w)
        self.banner = QLabel("")
        self.banner.setWordWrap(True)
        self.banner.setVisible(False)
        self.table = self._build_table()
        side = QWidget()
        col = QVBoxLayout(side)
        col.setContentsMargins(4, 0, 0, 0)
        self.findings = QListWidget()
        self.findings.setWordWrap(True)
        self.findings.setSpacing(3)
        self.findings.itemClicked.connect(lambda it: self.select_host(it.data(HOST_ROLE_ITEM) or ""))
        self.findings.itemActivated.connect(self._drill_item)
        self.failures = QListWidget()
        self.failures.setWordWrap(True)
        self.failures_label = QLabel("Failed captures")
        self.map = FleetMap(self.model, theme)
        self.map.picked.connect(self._map_picked)
        self.map_label = QLabel("The whole fleet")
        for w in (self.map_label, self.map, QLabel("Stragglers and findings"), self.findings, self.failures_label,
                  self.failures):
            col.addWidget(w, 0 if isinstance(w, QLabel) else 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(side)
        side.setMaximumWidth(SIDE_MAX_W)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 0)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(bar)
        lay.addWidget(self.banner)
        lay.addWidget(split, 1)
        self.set_theme(theme)
        self.set_report(None)

    def _build_table(self) -> FleetTable:
        t = FleetTable()
        self.header = StripHeader(self.theme, t)
        t.setHorizontalHeader(self.header)
        t.setModel(self.model)
        self.delegate = StripDelegate(self.theme, t)
        t.setItemDelegateForColumn(STRIP, self.delegate)
        t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        t.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        t.setWordWrap(False)
        t.setShowGrid(False)
        t.verticalHeader().hide()
        t.verticalHeader().setMinimumSectionSize(1)
        t.setSortingEnabled(True)
        t.sortByColumn(RANK, Qt.SortOrder.AscendingOrder)
        h = t.horizontalHeader()
        h.sortIndicatorChanged.connect(self._header_sorted)
        for c, w in ((RANK, 54), (HOST, 110), (LATE, 76), (LOST, 76), (METRIC, 96)):
            h.setSectionResizeMode(c, QHeaderView.ResizeMode.Interactive)
            t.setColumnWidth(c, w)
        h.setSectionResizeMode(STRIP, QHeaderView.ResizeMode.Stretch)
        t.verticalScrollBar().valueChanged.connect(lambda _v: self._show_view_on_map())
        t.selectionModel().currentRowChanged.connect(lambda _c, _p: self._show_view_on_map())
        t.doubleClicked.connect(lambda _i: self._drill_current())
        t.enter_pressed.connect(self._drill_current)
        return t

    # -- the report -----------------------------------------------------------------------------
    def set_report(self, report: dict[str, Any] | None) -> None:
        """Show ``report`` (None: nothing yet), keeping the chosen sort; the first host selected."""
        self.report = report
        self.delegate.clear()
        self.model.set_report(report)
        self._fill_sort_box(report)
        hosts = (report or {}).get("hosts", [])
        culprits = self._fill_findings(report)
        self.model.stragglers = culprits
        self._fill_failures(report)
        span = (report or {}).get("span_ns") or [0, 0]
        self.header.span_ns = self.delegate.span_ns = float(span[1]) - float(span[0])
        if report is not None:
            devices = sum(int(h.get("devices", 0) or 0) for h in hosts)
            late = ", ".join(sorted(culprits)) or "none"
            self.title.setText(f"{len(hosts)} hosts · {devices} devices · span "
                               f"{format_duration(float(span[1]) - float(span[0]))} · stragglers: {late}")
            self.title.setToolTip(self.title.text())  # whole, when the bar cuts it
        self._fit_rows()
        if hosts:
            self.table.selectRow(0)
        if self.isVisible():  # not from behind the timeline: its keys stay its own
            self.table.setFocus()

    def _fill_sort_box(self, report: dict[str, Any] | None) -> None:
        current = self.model.sort_key
        self.sort_box.blockSignals(True)
        self.sort_box.clear()
        keys = metric_keys(report or {})
        if current not in keys:  # no report yet (analysing): the chosen sort still reads as chosen
            keys.insert(0, current)
        for k in keys:
            self.sort_box.addItem(label(k), k)
        self.sort_box.setCurrentIndex(max(self.sort_box.findData(current), 0))
        self.sort_box.blockSignals(False)

    def _fill_findings(self, report: dict[str, Any] | None) -> set[str]:
        """The findings, stragglers first then by time lost; returns the stragglers' hosts."""
        self.findings.clear()
        found = list((report or {}).get("findings", []))
        found.sort(key=lambda f: (f.get("kind") != "straggler", -float(f.get("time_lost_ns", 0) or 0)))
        culprits: set[str] = set()
        for f in found:
            host = (f.get("culprit") or {}).get("host") if isinstance(f.get("culprit"), dict) else None
            lost = format_duration(float(f.get("time_lost_ns", 0) or 0))
            head = f"straggler {host}" if f.get("kind") == "straggler" and host else str(f.get("kind", "finding"))
            item = QListWidgetItem(f"{head} · {lost} lost\n{f.get('summary', '')}")
            item.setToolTip(str(f.get("suggestion", "")))
            if host:
                item.setData(HOST_ROLE_ITEM, str(host))
                if f.get("kind") == "straggler":
                    culprits.add(str(host))
                    item.setForeground(self.theme.c("accent"))
            self.findings.addItem(item)
        if not found:
            self.findings.addItem("no findings" if report is not None else "")
        return culprits

    def _fill_failures(self, report: dict[str, Any] | None) -> None:
        fails = dict((report or {}).get("failures", {}))
        self.failures.clear()
        for path, line in sorted(fails.items()):
            name = Path(path).name  # the line often starts with the path again: once is enough
            item = QListWidgetItem(f"{name} — {str(line).removeprefix(f'{path}: ').removeprefix(f'{name}: ')}")
            item.setToolTip(f"{path}\n{line}")
            self.failures.addItem(item)
        self.failures_label.setText(f"Failed captures ({len(fails)})")
        self.failures.setVisible(bool(fails))
        self.failures_label.setVisible(bool(fails))
        if report is not None and (report.get("partial") or fails):
            n = len(report.get("hosts", []))
            names = ", ".join(sorted(Path(p).name for p in fails)) or "see the list"
            self.show_banner(f"Partial answer: {len(fails)} of {n + len(fails)} captures could not be analysed "
                             f"({names}); ranks and figures are over the other {n}.")
        else:
            self.show_banner("")

    def show_banner(self, text: str) -> None:
        """A warning line over the table (empty: none)."""
        self.banner.setText(text)
        self.banner.setVisible(bool(text))

    # -- sorting and selection --------------------------------------------------------------------
    def sort_by(self, key: str | None) -> None:
        """Sort the hosts by metric ``key`` (shown in the metric column when no fixed column has
        it), rank and name ascending, the rest largest first."""
        if not key:
            return
        fixed = {self.model.key_of(c): c for c in (RANK, HOST, LATE, LOST, STRIP)}
        column = fixed.get(key, METRIC)
        if column == METRIC:
            self.model.set_metric(key)
        host = self.selected_host()
        self.table.sortByColumn(column, default_order(key))
        self.select_host(host or "")

    def _header_sorted(self, column: int, _order: Qt.SortOrder) -> None:
        i = self.sort_box.findData(self.model.key_of(column))
        if i >= 0:
            self.sort_box.blockSignals(True)
            self.sort_box.setCurrentIndex(i)
            self.sort_box.blockSignals(False)

    def hosts_in_order(self) -> list[str]:
        """The hosts' names as the table shows them, top to bottom."""
        return [str(self.model.host_at(r).get("host", "")) for r in range(self.model.rowCount())]

    def selected_host(self) -> str | None:
        """The host of the current row, if any."""
        idx = self.table.currentIndex()
        return idx.data(HOST_ROLE) if idx.isValid() else None

    def select_host(self, name: str) -> None:
        """Make host ``name``'s row current and visible."""
        row = self.model.row_of(name)
        if row >= 0:
            self.table.selectRow(row)
            self.table.scrollTo(self.model.index(row, HOST))

    def _map_picked(self, row: int) -> None:
        self.table.selectRow(row)
        self.table.scrollTo(self.model.index(row, HOST))

    def _show_view_on_map(self) -> None:
        t, n = self.table, self.model.rowCount()
        first = max(t.rowAt(0), 0)
        last = t.rowAt(t.viewport().height() - 1)
        self.map.set_view(first, n - 1 if last < 0 else last, t.currentIndex().row())

    def _drill_current(self) -> None:
        host = self.selected_host()
        if host:
            self.drill.emit(host)

    def _drill_item(self, item: QListWidgetItem) -> None:
        host = item.data(HOST_ROLE_ITEM)
        if host and self.model.row_of(host) >= 0:
            self.drill.emit(str(host))

    # -- the analysis ---------------------------------------------------------------------------
    def analyze(self, paths: Sequence[str], analyze: Analyze | None = None, **options: Any) -> None:
        """Run ``analyze(paths, progress=..., **options)`` (``analyze_fleet`` by default) off the UI
        thread, dropping any run under way; the progress bar follows it and its report replaces
        the one shown."""
        self.stop()
        run = FleetRun(self)
        run.progressed.connect(self.set_progress)
        run.done.connect(self._done)
        run.failed.connect(self._failed)
        self._run = run
        self.show_banner("")
        self.set_progress(0, len(paths))
        self.progress.setVisible(True)
        self.title.setText(f"Analysing {len(paths)} host captures…")
        run.start(analyze or default_analyze(), paths, **options)

    def set_progress(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` captures analysed."""
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(min(done, max(total, 1)))

    @property
    def running(self) -> bool:
        """Whether an analysis is under way."""
        return self._run is not None

    def _done(self, report: object) -> None:
        self._run = None
        self.progress.setVisible(False)
        if isinstance(report, dict):
            self.set_report(report)
            self.report_ready.emit(report)

    def _failed(self, message: str) -> None:
        self._run = None
        self.progress.setVisible(False)
        self.title.setText("Fleet analysis failed")
        self.show_banner(message)
        self.analysis_failed.emit(message)

    def stop(self) -> None:
        """Drop the analysis under way, if any, without waiting for it."""
        if self._run is not None:
            self._run.cancel()
            self._run = None
        self.progress.setVisible(False)

    def shutdown(self) -> None:
        """Drop every analysis and wait for their threads to end (before the window goes)."""
        self.stop()
        for run in self.findChildren(FleetRun):
            run.cancel()
            run.wait()

    # -- display --------------------------------------------------------------------------------
    def set_theme(self, theme: Theme) -> None:
        """Draw with ``theme``'s colours."""
        self.theme = theme
        self.delegate.set_theme(theme)
        self.header.theme = theme
        self.map.set_theme(theme)
        self.model.mark = theme.c("accent")
        self.banner.setStyleSheet(f"background: {theme.header}; color: {theme.accent}; padding: 4px 8px;")
        self.title.setStyleSheet(f"color: {theme.text}; font-weight: bold;")
        self.table.viewport().update()

    def _fit_rows(self) -> None:
        """Hosts' lanes as tall as lets the fleet fill the height, within MIN_ROW..MAX_ROW px."""
        n = max(self.model.rowCount(), 1)
        h = max(MIN_ROW, min(MAX_ROW, self.table.viewport().height() // n))
        font = self.table.font()
        font.setPixelSize(max(9, min(12, h - 3)))
        self.table.setFont(font)
        self.table.verticalHeader().setDefaultSectionSize(h)
        crowded = n * h > self.table.viewport().height()  # not all in the table: the map shows them all
        self.map.setVisible(crowded)
        self.map_label.setVisible(crowded)
        self._show_view_on_map()

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self._fit_rows()
