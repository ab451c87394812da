"""The details panel: the selected slice's name, lane, timing and args, and the slices of its
dependency chain as links (activating one selects it on the timeline)."""

from __future__ import annotations

from accelview.model.analysis.op_detail import op_detail
from accelview.model.analysis.ops import OpLabels
from accelview.model.schema import TrackKind
from accelview.model.text.clip import clip
from accelview.model.text.report import EVIDENCE_TEXT
from accelview.model.text.values import (
    MISSING,
    format_bandwidth,
    format_count,
    format_duration,
    format_number,
    format_percent,
    format_value,
)
from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QStyledItemDelegate, QStyleOptionViewItem, QTreeView, QWidget

from .state import ViewState

SLICE_ROLE = Qt.ItemDataRole.UserRole + 1


def _row(parent: QStandardItemModel | QStandardItem, key: str, value: str, sid: int | None = None,
         bold: bool = False) -> QStandardItem:
    k, v = QStandardItem(key), QStandardItem(value)
    for it in (k, v):
        it.setEditable(False)
        it.setToolTip(it.text())  # the columns elide; hovering shows the whole text
        if sid is not None:
            it.setData(sid, SLICE_ROLE)
        if bold:
            f = it.font()
            f.setBold(True)
            it.setFont(f)
    parent.appendRow([k, v])
    return k


class WrapDelegate(QStyledItemDelegate):
    """Rows as tall as their text wrapped to its column's width (Qt's own size hint ignores the
    width), so a long value takes a second line instead of being cut."""

    def __init__(self, view: QTreeView) -> None:
        super().__init__(view)
        self.view = view

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        size = super().sizeHint(option, index)
        indent = self.view.indentation() * (1 + _level(index)) if index.column() == 0 else 0
        width = self.view.columnWidth(index.column()) - indent - 8
        text = str(index.data() or "")
        if width <= 0 or not text:
            return size
        flags = Qt.TextFlag.TextWordWrap | Qt.TextFlag.TextWrapAnywhere
        high = option.fontMetrics.boundingRect(QRect(0, 0, width, 10_000), flags, text).height()
        return QSize(size.width(), max(size.height(), high + 4))


def _level(index: QModelIndex | QPersistentModelIndex) -> int:
    n, p = 0, index.parent()
    while p.isValid():
        n, p = n + 1, p.parent()
    return n


class DetailsPanel(QTreeView):
    """Property/value rows of the selection; chain rows carry their slice id."""

    def __init__(self, state: ViewState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.items = QStandardItemModel(self)
        self.labels: OpLabels | None = None
        self.setModel(self.items)
        self.setAlternatingRowColors(True)
        self.setWordWrap(True)  # a long value takes a second line rather than being cut (whole in its tooltip)
        self.setItemDelegate(WrapDelegate(self))
        self.setUniformRowHeights(False)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.header().sectionResized.connect(lambda *_: self.scheduleDelayedItemsLayout())  # re-wrap to the width
        state.selection_changed.connect(self.refresh)
        state.trace_changed.connect(lambda: self.set_report(None))  # labels of the old trace no longer apply
        self.activated.connect(self._activate)
        self.doubleClicked.connect(self._activate)
        self.refresh()

    def texts(self, column: int = 1) -> list[str]:
        """The top-level texts of one column (for tests and copying)."""
        return [self.items.item(i, column).text() for i in range(self.items.rowCount())]

    def set_report(self, report: object) -> None:
        """Take the op labels of a finished analysis (``Report.ops``) so ops show their class."""
        self.labels = getattr(report, "ops", None)
        self.refresh()

    def refresh(self) -> None:
        """Show the current selection (or a hint when none)."""
        self.items.clear()
        self.items.setHorizontalHeaderLabels(["Property", "Value"])
        st = self.state
        if st.trace is None or st.selected < 0:
            _row(self.items, "No selection", "click a slice")
            return
        tr, sid = st.trace, st.selected
        sl = tr.slices
        track = int(sl.track[sid])
        rows = [
            ("Name", clip(tr.strings[sl.name[sid]])),
            ("Category", tr.strings[sl.category[sid]]),
            ("Lane", f"{clip(tr.track_name(track))} ({TrackKind(int(tr.tracks.kind[track])).label})"),
            ("Start", _exact(int(sl.start_ns[sid]) - st.origin)),
            ("Duration", _exact(int(sl.dur_ns[sid]))),
            ("Depth", str(int(sl.depth[sid]))),
            ("Correlation", str(int(sl.correlation[sid])) if sl.correlation[sid] >= 0 else MISSING),
            ("Slice id", str(sid)),
        ]
        rows[5:5] = self._op_rows(sid)
        for k, v in rows:
            _row(self.items, k, v)
        args = tr.slice_args(sid)
        if args:
            top = _row(self.items, "Args", str(len(args)))
            for k, v in args.items():
                _row(top, k, format_number(v))
            self.expand(top.index())
        self._fit_keys()
        if len(st.chain) > 1:
            top = _row(self.items, "Chain", f"{len(st.chain)} slices  ([ / ] to step)")
            for c in st.chain.tolist():
                text = f"{clip(tr.strings[sl.name[c]])}  ·  {format_duration(float(sl.dur_ns[c]))}"
                _row(top, clip(tr.track_name(int(sl.track[c]))), text, sid=c, bold=c == sid)
            self.expand(top.index())

    def _fit_keys(self) -> None:
        """Property names whole where they fit, up to 3/5 of the panel (the rest elide, with a tooltip)."""
        self.resizeColumnToContents(0)
        self.setColumnWidth(0, min(self.columnWidth(0) + 8, max(self.viewport().width() * 3 // 5, 130)))

    def _op_rows(self, sid: int) -> list[tuple[str, str]]:
        """Bottleneck, confidence and speed of light of a device op (computed by the model)."""
        d = op_detail(self.state.trace, self.labels, sid) if self.labels is not None else None
        if d is None:
            return []

        def share(sol: float) -> str:  # first, so a narrow panel elides the rate, not the share
            return "" if sol != sol else f"{format_percent(sol)} of peak · "

        rows = [("Bottleneck", f"{d.label} · {format_percent(d.confidence, 0)} confidence"),
                ("Evidence", EVIDENCE_TEXT.get(d.evidence, d.evidence) + (f" ({d.family})" if d.family else ""))]
        if d.flops_per_s == d.flops_per_s:
            rows.append(("Compute", share(d.compute_sol) + format_value(d.flops_per_s, "FLOP/s")))
        if d.bytes_per_s == d.bytes_per_s:
            rows.append(("HBM bandwidth", share(d.memory_sol) + format_bandwidth(d.bytes_per_s)))
        return rows

    def _activate(self, index: QModelIndex) -> None:
        sid = index.data(SLICE_ROLE)
        if sid is not None and sid != self.state.selected:
            self.state.select(int(sid))
            self.state.fit_selection()


def _exact(ns: int) -> str:
    """A time as everywhere else, then to the nanosecond when that rounded it: ``1.23 ms (1,234,567 ns)``."""
    short = format_duration(ns)
    return short if short == f"{ns} ns" else f"{short}  ({format_count(ns)} ns)"
