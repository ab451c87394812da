"""The Findings panel: what ``accelview analyze`` found, ranked by time lost. A click zooms the
timeline to the finding and highlights its evidence; the analysis runs in a worker thread."""

from __future__ import annotations

from typing import Any

import numpy as np
from accelview.model.analysis.findings import Finding
from accelview.model.analysis.report import Report, analyze
from accelview.model.importstats import describe_problems, import_problems
from accelview.model.text.report import device_time_headline
from accelview.model.text.values import format_duration
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableView, QVBoxLayout, QWidget

from .background import BackgroundTask
from .state import ViewState

Index = QModelIndex | QPersistentModelIndex
COLUMNS = ("Severity", "Finding", "Time lost", "Summary")


class FindingsModel(QAbstractTableModel):
    """Findings as table rows: severity, kind, time lost, summary (the suggestion as tooltip)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.findings: list[Finding] = []

    def set_findings(self, findings: list[Finding]) -> None:
        """Replace the rows."""
        self.beginResetModel()
        self.findings = list(findings)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.findings)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal and 0 <= section < 4:
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.findings):
            return None
        f = self.findings[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (f.severity, f.kind, format_duration(f.time_lost_ns), f.summary)[col]
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{f.summary}\n\nFix: {f.suggestion}"
        if role == Qt.ItemDataRole.UserRole:
            return f
        return None


class FindingsPanel(QWidget):
    """A table of findings over the shared view state."""

    report_ready = Signal(object)

    def __init__(self, state: ViewState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.report: Report | None = None
        self.model = FindingsModel(self)
        self.status = QLabel("No capture open")
        self.status.setWordWrap(True)  # a long status must not widen the dock (and shrink the timeline)
        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.verticalHeader().hide()
        self.view.setWordWrap(False)
        header = self.view.horizontalHeader()
        for col in range(3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.view.clicked.connect(lambda idx: self.show_finding(idx.row()))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        self.detail = QLabel("")
        self.detail.setWordWrap(True)  # the chosen finding in full, with its fix
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.status)
        lay.addWidget(self.view, 1)
        lay.addWidget(self.detail)
        self._task = BackgroundTask(self)
        state.trace_changed.connect(self.analyze_current)

    def analyze_current(self) -> None:
        """Analyse the state's trace in a worker thread."""
        self.model.set_findings([])
        self.detail.setText("")
        self.report = None
        if self.state.trace is None:
            return
        self.status.setText("Analysing…")
        trace = self.state.trace
        self._task.start(lambda: analyze(trace), "analysis", self._done, self.status.setText)

    def shutdown(self) -> None:
        """Wait for a running analysis to finish (before the window goes)."""
        self._task.shutdown()

    def _done(self, report: Report) -> None:
        if report.trace is not self.state.trace:
            return  # a newer trace was opened meanwhile
        self.report = report
        self.model.set_findings(report.findings)
        n = len(report.findings)
        skipped = describe_problems(import_problems(report.trace.metadata))
        self.status.setText(f"{n} finding{'s' if n != 1 else ''} · {device_time_headline(report)}"
                            + (" · click one to see it" if n else "")
                            + (f" · import skipped {skipped} (accelview info lists them)" if skipped else ""))
        self.report_ready.emit(report)

    def show_finding(self, row: int) -> None:
        """Zoom the timeline to finding ``row`` and highlight its evidence slices."""
        if not 0 <= row < len(self.model.findings) or self.state.trace is None:
            return
        f = self.model.findings[row]
        self.detail.setText(f"<b>{f.kind}</b> ({f.severity}, {format_duration(f.time_lost_ns)} lost): "
                            f"{f.summary}.<br><b>Fix:</b> {f.suggestion}.")
        self.state.show_window(f.start_ns, f.end_ns, pad=0.02)
        self.state.hits = np.asarray(f.slices, dtype=np.int64)
        self.state.hit_index = -1
        self.state.search_text = f"finding: {f.kind}"
        self.state.search_changed.emit()
        if f.slices:
            self.state.select(int(f.slices[0]))

    def closeEvent(self, event: Any) -> None:
        """Finish the worker before the widget goes."""
        self.shutdown()
        super().closeEvent(event)
