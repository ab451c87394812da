"""The lane tree on the left: the trace's tracks as a tree (hosts → processes → threads,
devices → units) with a check box per track to show or hide it; collapsing a group in the
tree collapses it on the timeline. A filter field over it shows only lanes whose name matches
(with their parents), in the tree and on the timeline."""

from __future__ import annotations

from accelview.model.schema import TrackKind
from accelview.model.text.clip import clip
from accelview.model.view.lanes import track_children
from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, QPoint, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHeaderView, QLineEdit, QMenu, QTreeView, QVBoxLayout, QWidget

from .state import ViewState

_Index = QModelIndex | QPersistentModelIndex


class LaneTreeModel(QAbstractItemModel):
    """Two columns (name, kind); the check state of column 0 is the track's visibility.
    Each index's internal id is its track id."""

    HEADERS = ("Lane", "Kind")

    def __init__(self, state: ViewState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._kids: dict[int, list[int]] = {}
        self._parent: dict[int, int] = {}
        state.trace_changed.connect(self.reload)
        self.reload()

    def reload(self) -> None:
        """Re-read the track tree of the current trace."""
        self.beginResetModel()
        tr = self.state.trace
        self._kids = track_children(tr, self.state.order) if tr is not None else {}
        self._parent = {c: p for p, cs in self._kids.items() for c in cs}
        self.endResetModel()

    def track_of(self, index: _Index) -> int:
        """The track id of an index (-1 for the root)."""
        return int(index.internalId()) if index.isValid() else -1

    def index(self, row: int, column: int, parent: _Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        kids = self._kids.get(self.track_of(parent), [])
        if not (0 <= row < len(kids) and 0 <= column < len(self.HEADERS)):
            return QModelIndex()
        return self.createIndex(row, column, kids[row])

    def parent(self, index: _Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        if not index.isValid():
            return QModelIndex()
        p = self._parent.get(self.track_of(index), -1)
        if p < 0:
            return QModelIndex()
        gp = self._parent.get(p, -1)
        return self.createIndex(self._kids[gp].index(p), 0, p)

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self._kids.get(self.track_of(parent), []))

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return len(self.HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole \
                and 0 <= section < len(self.HEADERS):
            return self.HEADERS[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or self.state.trace is None:
            return None
        t = self.track_of(index)
        tr = self.state.trace
        if role == Qt.ItemDataRole.DisplayRole:
            return clip(tr.track_name(t)) if index.column() == 0 else TrackKind(int(tr.tracks.kind[t])).label
        if role == Qt.ItemDataRole.CheckStateRole and index.column() == 0:
            return Qt.CheckState.Unchecked if t in self.state.hidden else Qt.CheckState.Checked
        if role == Qt.ItemDataRole.ToolTipRole:
            host = tr.strings[tr.tracks.host[t]]
            name = clip(tr.track_name(t))
            return f"{name} — {TrackKind(int(tr.tracks.kind[t])).label}" + (f" on {host}" if host else "")
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        f = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        return f | Qt.ItemFlag.ItemIsUserCheckable if index.column() == 0 else f

    def setData(self, index: _Index, value: object, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or role != Qt.ItemDataRole.CheckStateRole or index.column() != 0:
            return False
        visible = value in (Qt.CheckState.Checked, Qt.CheckState.Checked.value, 2, True)
        self.state.set_hidden(self.track_of(index), not visible)
        self.dataChanged.emit(index, index, [role])
        return True


    def move(self, index: _Index, step: int) -> bool:
        """Move a lane up (-1) or down (+1) among its siblings, on the timeline too."""
        if not index.isValid():
            return False
        t = self.track_of(index)
        parent = self.parent(index)
        sibs = self._kids[self._parent.get(t, -1)]
        row = sibs.index(t)
        new = row + step
        if not 0 <= new < len(sibs):
            return False
        self.beginMoveRows(parent, row, row, parent, new + 1 if step > 0 else new)
        sibs[row], sibs[new] = sibs[new], sibs[row]
        self.endMoveRows()
        self.state.set_sibling_order(list(sibs))
        return True


class LaneTreeView(QTreeView):
    """The tree view over ``LaneTreeModel``; expanding or collapsing a group does the same
    on the timeline."""

    def __init__(self, state: ViewState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.lanes = LaneTreeModel(state, self)
        self.setModel(self.lanes)
        self.setHeaderHidden(False)
        self.setUniformRowHeights(True)
        self.lanes.modelReset.connect(lambda: self.setColumnHidden(1, True))  # the kind is in the tooltip
        self.setColumnHidden(1, True)
        self.header().setStretchLastSection(False)
        self.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)  # the names take the width:
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # no sideways scrolling
        self.setTextElideMode(Qt.TextElideMode.ElideRight)  # "device 0 (gen5…" reads from its start
        self._syncing = False
        self.lanes.modelReset.connect(self.sync_from_state)
        self.collapsed.connect(lambda ix: self._user_toggled(ix, True))
        self.expanded.connect(lambda ix: self._user_toggled(ix, False))
        state.layout_changed.connect(self.sync_from_state)  # a header clicked on the timeline
        self.sync_from_state()
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        for text, key, step in (("Move lane up", "Alt+Up", -1), ("Move lane down", "Alt+Down", 1)):
            act = QAction(text, self, shortcut=key)
            act.triggered.connect(lambda _=False, s=step: self.lanes.move(self.currentIndex().siblingAtColumn(0), s))
            self.addAction(act)
        only = QAction("Show only this lane", self)
        only.triggered.connect(lambda: self.show_only(self.currentIndex().siblingAtColumn(0)))
        everything = QAction("Show all lanes", self)
        everything.triggered.connect(self.show_all)
        self.addActions([only, everything])

    def names_width(self) -> int:
        """The width in px that shows the shown lanes' names whole (indent, arrow, check box and
        text, as Qt measures them), plus the vertical scroll bar's when the rows overflow."""
        rows, stack = 0, [QModelIndex()]
        while stack:
            parent = stack.pop()
            for row in range(self.lanes.rowCount(parent)):
                ix = self.lanes.index(row, 0, parent)
                rows += 1
                if self.isExpanded(ix):
                    stack.append(ix)
        bar = self.verticalScrollBar().sizeHint().width() if rows * self.sizeHintForRow(0) > self.height() else 0
        return self.sizeHintForColumn(0) + 2 * self.frameWidth() + bar

    def show_only(self, index: QModelIndex) -> None:
        """Hide every lane except ``index``'s track, its ancestors and its children."""
        if not index.isValid():
            return
        chosen = self.lanes.track_of(index)
        keep = {chosen}
        ix = index
        while ix.isValid():
            keep.add(self.lanes.track_of(ix))
            ix = ix.parent()
        tr = self.state.trace
        hide = {int(t) for t in range(len(tr.tracks))} - keep if tr is not None else set()
        # Only roots and the siblings along the path need hiding: hidden parents hide children.
        parent = tr.tracks.parent if tr is not None else []
        self.state.hidden = {
            t for t in hide if int(parent[t]) < 0 or (int(parent[t]) in keep and int(parent[t]) != chosen)
        }
        self.state.collapsed -= keep  # the chosen lane's folded ancestors open to show it
        self.state.relayout()
        self.sync_from_state()
        self.lanes.dataChanged.emit(self.lanes.index(0, 0), self.lanes.index(self.lanes.rowCount() - 1, 0))
        self.viewport().update()

    def show_all(self) -> None:
        """Show every lane again."""
        self.state.hidden = set()
        self.state.relayout()
        self.viewport().update()

    def _user_toggled(self, index: QModelIndex, collapsed: bool) -> None:
        if not self._syncing:
            self.state.set_collapsed(self.lanes.track_of(index), collapsed)

    def sync_from_state(self) -> None:
        """Expand every group except those collapsed in the view state; hide the rows the
        lane filter hides (and open the groups holding its matches)."""
        self._syncing = True
        hide, opened = self.state.filtered
        try:
            stack = [QModelIndex()]
            while stack:
                parent = stack.pop()
                for row in range(self.lanes.rowCount(parent)):
                    ix = self.lanes.index(row, 0, parent)
                    t = self.lanes.track_of(ix)
                    self.setRowHidden(row, parent, t in hide)
                    if self.lanes.rowCount(ix):
                        self.setExpanded(ix, t in opened or t not in self.state.collapsed)
                        stack.append(ix)
        finally:
            self._syncing = False

    def _menu(self, pos: QPoint) -> None:
        menu = QMenu(self)
        for act in self.actions():
            menu.addAction(act)
        menu.popup(self.viewport().mapToGlobal(pos))


class LanePanel(QWidget):
    """The Lanes dock's contents: a filter field over the lane tree. Typing in it shows only
    lanes whose name contains the text, with their parents, in the tree and on the timeline."""

    def __init__(self, tree: LaneTreeView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = tree
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Filter lanes by name")
        self.filter.setToolTip("Show only lanes whose name contains this text, with their parents")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(tree.state.set_lane_filter)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(self.filter)
        lay.addWidget(tree)
