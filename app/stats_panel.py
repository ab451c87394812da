"""The Statistics panel: device work by op name, lane or phase in a sortable, filterable table
(the same figures as ``accelview stats``), recomputed for the range selection; a duration
histogram of the chosen row, whose bars select their slices on the timeline; copy and CSV."""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np
import pyqtgraph as pg
from accelview.model.analysis.report import Report
from accelview.model.analysis.stats_table import GROUPINGS, StatsSource, StatsTable
from accelview.model.text.stats import CSV_HEADERS, cells, headers
from accelview.model.text.values import format_duration
from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from .chart_axes import DurationAxis
from .state import ViewState
from .theme import Theme

Index = QModelIndex | QPersistentModelIndex
SORT_ROLE = Qt.ItemDataRole.UserRole + 1  # raw numbers, so columns sort by value, not by text
HIST_BINS = 40
NAME_W = 260  # px of the name column (interactive; the full name is its tooltip)
SIZE_ROWS = 64  # rows measured when sizing a column to its text
LOG_RATIO = 30  # longest / shortest duration above which the histogram's bins are even in log


def _raw(table: StatsTable, row: int, col: int) -> Any:
    if col == 0:
        return table.keys[row].lower()
    values = (table.count, table.total_ns, table.mean_ns, table.p50_ns, table.p95_ns, table.p99_ns, table.share)
    if col <= len(values):
        return float(values[col - 1][row])
    if col == len(values) + 1:
        return table.bottleneck[row]
    v = float((table.flops_per_s, table.bytes_per_s)[col - len(values) - 2][row])
    return -1.0 if v != v else v  # unknown rates sort below every known one


class StatsModel(QAbstractTableModel):
    """One ``StatsTable`` as rows: display text as ``accelview stats`` prints it, raw numbers
    under ``SORT_ROLE``."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.table: StatsTable | None = None
        self._cells: dict[int, tuple[str, ...]] = {}  # display text of the rows shown so far

    def set_table(self, table: StatsTable | None) -> None:
        """Replace the rows."""
        self.beginResetModel()
        self.table = table
        self._cells = {}
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() or self.table is None else len(self.table)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(CSV_HEADERS) + 1

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole or orientation != Qt.Orientation.Horizontal:
            return None
        names = headers(self.table) if self.table is not None else ("name", *CSV_HEADERS)
        return names[section] if 0 <= section < len(names) else None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        t = self.table
        if t is None or not index.isValid() or not 0 <= index.row() < len(t):
            return None
        row, col = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if row not in self._cells:
                self._cells[row] = cells(t, row)
            return self._cells[row][col]
        if role == SORT_ROLE:
            return _raw(t, row, col)
        if role == Qt.ItemDataRole.ToolTipRole and col == 0:
            return t.keys[row]
        if role == Qt.ItemDataRole.TextAlignmentRole and col > 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class StatsPanel(QWidget):
    """Table, grouping switch, filter, copy/export and the histogram of the chosen row."""

    def __init__(self, state: ViewState, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.theme = theme
        self.source: StatsSource | None = None
        self._dirty = True
        self.hist_ids: list[np.ndarray] = []  # slices of each histogram bar
        self.hist_edges = np.empty(0)
        self.model = StatsModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.proxy.setFilterKeyColumn(0)
        self.by = QComboBox()
        self.by.addItems([f"by {g}" for g in GROUPINGS])
        self.by.currentIndexChanged.connect(lambda _i: self.refresh())
        self.filter = QLineEdit(placeholderText="filter…", clearButtonEnabled=True)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.scope = QLabel("")
        self.copy_button = QPushButton("Copy", clicked=self.copy)
        self.export_button = QPushButton("Export CSV…", clicked=self.export_dialog)
        bar = QHBoxLayout()
        for w in (self.by, self.filter, self.scope, self.copy_button, self.export_button):
            bar.addWidget(w, 1 if w is self.filter else 0)
        self.view = QTableView()
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(2, Qt.SortOrder.DescendingOrder)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.verticalHeader().hide()
        self.view.setWordWrap(False)
        header = self.view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setResizeContentsPrecision(SIZE_ROWS)  # widths from the first rows: thousands of names stay quick
        self.model.modelReset.connect(self._fit_columns)
        self.view.selectionModel().currentRowChanged.connect(lambda cur, _prev: self.show_histogram(cur.row()))
        QShortcut(QKeySequence.StandardKey.Copy, self.view, activated=self.copy)
        self.plot = pg.PlotWidget(axisItems={"bottom": DurationAxis("bottom")})
        self.plot.setMouseEnabled(False, False)
        self.plot.hideButtons()
        self.plot.setLabel("left", "slices")
        self.plot.setMinimumHeight(140)
        self.bars = pg.BarGraphItem(x0=[], x1=[], height=[], brush=pg.mkBrush(theme.c("accent")))
        self.plot.addItem(self.bars)
        self.plot.scene().sigMouseClicked.connect(self._plot_clicked)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.view)
        split.addWidget(self.plot)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(bar)
        lay.addWidget(split, 1)
        self.set_theme(theme)
        state.trace_changed.connect(self._trace_changed)
        state.range_changed.connect(self._invalidate)

    def _fit_columns(self) -> None:
        """Size the figures' columns to their text once per table (not on every repaint)."""
        for col in range(1, self.model.columnCount()):
            self.view.resizeColumnToContents(col)
        self.view.setColumnWidth(0, NAME_W)

    # -- data -------------------------------------------------------------------------------------
    def _trace_changed(self) -> None:
        self.source = None
        self._invalidate()

    def set_report(self, report: Report) -> None:
        """Take the analysis's op labels if no table was made yet (the same labels the model
        would compute: this only spares a second classification)."""
        if report.trace is self.state.trace and self.source is None:
            self.source = StatsSource(report.trace, labels=report.ops)

    def _invalidate(self) -> None:
        self._dirty = True
        if self.isVisible():
            self.refresh()

    def showEvent(self, event: Any) -> None:
        if self._dirty:
            self.refresh()
        super().showEvent(event)

    def refresh(self) -> None:
        """Recompute the table for the current grouping and range selection."""
        self._dirty = False
        st = self.state
        if st.trace is None:
            self.model.set_table(None)
            self.scope.setText("")
            return
        if self.source is None or self.source.trace is not st.trace:
            self.source = StatsSource(st.trace)
        window = None
        if st.range is not None:
            window = (st.origin + int(st.range[0]), st.origin + int(np.ceil(st.range[1])))
        by = GROUPINGS[max(self.by.currentIndex(), 0)]
        self.model.set_table(self.source.table(by, window))
        self.scope.setText("whole run" if window is None else f"range {format_duration(window[1] - window[0])}")
        self.show_histogram(-1)

    def current_table(self) -> StatsTable | None:
        """The table on screen."""
        return self.model.table

    # -- histogram --------------------------------------------------------------------------------
    def show_histogram(self, proxy_row: int) -> None:
        """Durations of the slices of one row (a row of the sorted, filtered view; -1: none)."""
        t = self.model.table
        self.hist_ids, self.hist_edges = [], np.empty(0)
        if t is None or proxy_row < 0:
            self.bars.setOpts(x0=[], x1=[], height=[])
            self.plot.setTitle("")
            return
        row = self.proxy.mapToSource(self.proxy.index(proxy_row, 0)).row()
        ids = t.slices_of(row)
        dur = self.state.trace.slices.dur_ns[ids].astype(np.float64)
        lo, hi = float(dur.min()), float(dur.max())
        log = lo > 0 and hi / lo > LOG_RATIO  # durations over decades: bins even in log, like Tracy's
        if hi - lo < max(lo * 0.01, 1.0):  # (nearly) one duration: a bar in the middle of a ±5% axis
            lo, hi = lo - max(lo * 0.05, 1.0), hi + max(hi * 0.05, 1.0)
        edges = np.geomspace(lo, hi, HIST_BINS + 1) if log else np.linspace(lo, hi, HIST_BINS + 1)
        which = np.clip(np.searchsorted(edges, dur, "right") - 1, 0, HIST_BINS - 1)
        counts = np.bincount(which, minlength=HIST_BINS)
        order = np.argsort(which, kind="stable")
        self.hist_ids = np.split(ids[order], np.cumsum(counts)[:-1])
        self.hist_edges = edges
        x = np.log10(edges) if log else edges
        self.plot.getAxis("bottom").log10 = log
        self.bars.setOpts(x0=x[:-1], x1=x[1:], height=counts)
        self.plot.setXRange(x[0], x[-1], padding=0.02)
        self.plot.setYRange(0, max(int(counts.max()), 1), padding=0.05)
        self.plot.setTitle(f"{t.keys[row]}: {len(ids)} slices by duration{' (log scale)' if log else ''}"
                           " — click a bar to see them")

    def _plot_clicked(self, event: Any) -> None:
        x = self.plot.getViewBox().mapSceneToView(event.scenePos()).x()
        if self.plot.getAxis("bottom").log10:
            x = 10.0 ** x
        self.select_bin(int(np.searchsorted(self.hist_edges, x, "right")) - 1)

    def select_bin(self, i: int) -> None:
        """Show the slices of histogram bar ``i`` on the timeline: highlighted as hits, the
        first selected, the view fitted to them."""
        if not 0 <= i < len(self.hist_ids) or not len(self.hist_ids[i]) or self.state.trace is None:
            return
        ids = np.sort(self.hist_ids[i])
        sl = self.state.trace.slices
        st = self.state
        st.hits = ids
        st.hit_index = 0
        st.search_text = f"histogram: {format_duration(self.hist_edges[i])}–{format_duration(self.hist_edges[i + 1])}"
        st.search_changed.emit()
        first = ids[np.argmin(sl.start_ns[ids])]
        st.select(int(first))
        st.show_window(int(sl.start_ns[ids].min()), int((sl.start_ns[ids] + sl.dur_ns[ids]).max()), pad=0.02)

    # -- copy and export --------------------------------------------------------------------------
    def _visible_rows(self, selected_only: bool) -> list[int]:
        rows = sorted({i.row() for i in self.view.selectionModel().selectedRows()}) if selected_only else []
        rows = rows or list(range(self.proxy.rowCount()))
        return [self.proxy.mapToSource(self.proxy.index(r, 0)).row() for r in rows]

    def copy_text(self) -> str:
        """The selected rows (all shown rows when none is) as tab-separated text, with headers."""
        t = self.model.table
        if t is None:
            return ""
        lines = ["\t".join(headers(t))] + ["\t".join(cells(t, r)) for r in self._visible_rows(True)]
        return "\n".join(lines) + "\n"

    def copy(self) -> None:
        """Copy the selected rows to the clipboard."""
        QGuiApplication.clipboard().setText(self.copy_text())

    def csv_text(self) -> str:
        """The rows shown (filtered, in the view's order) as CSV with raw numbers."""
        t = self.model.table
        buf = io.StringIO()
        if t is None:
            return ""
        w = csv.writer(buf, lineterminator="\n")
        w.writerow((t.by, *CSV_HEADERS))
        for r in self._visible_rows(False):
            row = t.row(r)
            w.writerow([row[t.by], *("" if isinstance(row[k], float) and row[k] != row[k] else row[k]
                                     for k in CSV_HEADERS)])
        return buf.getvalue()

    def export_dialog(self) -> None:
        """Ask for a file and write the shown rows to it as CSV."""
        path, _ = QFileDialog.getSaveFileName(self, "Export statistics", "stats.csv", "CSV (*.csv)")
        if path:
            self.export_csv(path)

    def export_csv(self, path: str) -> None:
        """Write the shown rows to ``path`` as CSV."""
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(self.csv_text())

    def set_theme(self, theme: Theme) -> None:
        """Redraw the histogram in another theme."""
        self.theme = theme
        self.plot.setBackground(theme.c("bg"))
        self.bars.setOpts(brush=pg.mkBrush(theme.c("accent")), pen=pg.mkPen(theme.c("bg")))
        for name in ("left", "bottom"):
            ax = self.plot.getAxis(name)
            ax.setPen(theme.c("dim"))
            ax.setTextPen(theme.c("text"))
