"""The diff as a sortable table model: one row per entry of ``compare``'s diff (significant
first, as ranked), columns for what changed and by how much; sorting by a column sorts by its
value, not its text."""

from __future__ import annotations

from typing import Any

from accelview.model.compare.diff import Diff
from accelview.model.compare.entries import Entry
from accelview.model.text.diff import change_text, relative
from accelview.model.text.values import format_duration
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

Index = QModelIndex | QPersistentModelIndex
COLUMNS = ("", "kind", "name", "group", "A", "B", "change", "%")


def _sort_value(e: Entry, column: int, rank: int) -> Any:
    pct = e.change_pct
    return (rank if column == 0 else e.kind if column == 1 else e.name if column == 2 else e.group if column == 3
            else e.a_ns if column == 4 else e.b_ns if column == 5 else e.change_ns if column == 6
            else (pct if pct is not None else float("inf")))


class DiffTableModel(QAbstractTableModel):
    """The entries of a diff as rows. ``entry(row)`` gives the entry behind a row."""

    def __init__(self, diff: Diff | None = None, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[Entry] = []
        self._rank: dict[int, int] = {}
        if diff is not None:
            self.set_diff(diff)

    def set_diff(self, diff: Diff) -> None:
        """Show another diff, in its ranked order."""
        self.beginResetModel()
        self.rows = list(diff.entries)
        self._rank = {id(e): i for i, e in enumerate(self.rows)}
        self.endResetModel()

    def entry(self, row: int) -> Entry:
        """The entry shown in ``row``."""
        return self.rows[row]

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's default argument
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        horizontal = orientation == Qt.Orientation.Horizontal
        if horizontal and role == Qt.ItemDataRole.DisplayRole and 0 <= section < len(COLUMNS):
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        e, c = self.rows[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if c == 0:
                return "*" if e.significant else "~"
            if c in (1, 2, 3):
                return (e.kind, e.name, e.group)[c - 1]
            if c in (4, 5):
                return format_duration(e.a_ns if c == 4 else e.b_ns)
            if c == 6:
                return change_text(e, percent=False)
            return relative(e.a_ns, e.b_ns)
        if role == Qt.ItemDataRole.UserRole:
            return _sort_value(e, c, self._rank.get(id(e), 0))
        if role == Qt.ItemDataRole.ToolTipRole:
            ci = "" if e.a_ci is None else (f"A 95% interval {format_duration(e.a_ci[0])}–"
                                            f"{format_duration(e.a_ci[1])}, n = {e.a_n} vs {e.b_n}\n")
            return f"{e.name}\n{ci}{e.test} p = {e.p_adjusted:.3g} (adjusted)" + (f"\n{e.detail}" if e.detail else "")
        if role == Qt.ItemDataRole.TextAlignmentRole and c >= 4:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort rows by a column's value (the first column: the diff's ranking)."""
        if not 0 <= column < len(COLUMNS):
            return
        self.layoutAboutToBeChanged.emit()
        old = list(self.rows)
        self.rows.sort(key=lambda e: _sort_value(e, column, self._rank[id(e)]),
                       reverse=order == Qt.SortOrder.DescendingOrder)
        moved = {id(e): i for i, e in enumerate(self.rows)}
        for idx in self.persistentIndexList():
            if idx.isValid():
                row = moved[id(old[idx.row()])]
                self.changePersistentIndex(idx, self.index(row, idx.column()))
        self.layoutChanged.emit()
