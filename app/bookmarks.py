"""The Bookmarks dock: the view's marks (M) as a named list kept in the trace's sidecar
(model/view/bookmarks.py). Double-click or Enter jumps the view there, F2 renames, Delete
removes. Sidecar trouble becomes a ``message`` for the status bar, never a crash."""

from __future__ import annotations

from pathlib import Path

from accelview.app.safe_paint import painting
from accelview.model.text.values import format_duration
from accelview.model.view.bookmarks import (
    Bookmark,
    BookmarkError,
    load_bookmarks,
    reconcile,
    save_bookmarks,
)
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QPaintEvent
from PySide6.QtWidgets import QAbstractItemView, QListWidget, QListWidgetItem

from .state import ViewState


class BookmarksPanel(QListWidget):
    """One row per mark of the open trace, in the order they were made."""

    message = Signal(str)

    def __init__(self, state: ViewState) -> None:
        super().__init__()
        self.state = state
        self.source: Path | None = None  # the open file; None: bookmarks live in memory only
        self.bookmarks: list[Bookmark] = []
        self.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed)
        self.setToolTip("M marks the selection · double-click or Enter jumps · F2 renames · Del removes")
        state.trace_changed.connect(self._trace_changed)
        state.range_changed.connect(self._marks_changed)
        self.itemActivated.connect(lambda item: self.jump(self.row(item)))
        self.itemChanged.connect(self._renamed)

    def set_source(self, path: str | None) -> None:
        """The open trace's file: show (and from now on keep) the bookmarks beside it."""
        self.source = Path(path) if path else None
        loaded: list[Bookmark] = []
        if self.source is not None:
            try:
                loaded = load_bookmarks(self.source)
            except BookmarkError as e:
                self.message.emit(f"Bookmarks not loaded: {e}")
                self.source = None  # never overwrite a sidecar we could not read
        o = self.state.origin
        self.bookmarks = loaded
        self.state.set_marks([(float(b.start_ns - o), float(b.end_ns - o)) for b in loaded])
        self._show()

    def jump(self, row: int) -> None:
        """Bring bookmark ``row`` into view (a point mark: centred at the current zoom)."""
        if not 0 <= row < len(self.bookmarks) or self.state.trace is None:
            return
        b, o = self.bookmarks[row], self.state.origin
        a, e = float(b.start_ns - o), float(b.end_ns - o)
        if e - a < 1.0:
            half = (self.state.scale.r1 - self.state.scale.r0) / 2
            self.state.set_scale(self.state.scale.with_window(a - half, a + half))
        else:
            self.state.show_relative(a, e, pad=0.05)

    def step(self, delta: int) -> int:
        """Jump to the next (+1) or previous (-1) bookmark, wrapping; returns its row (-1: none)."""
        if not self.bookmarks:
            return -1
        row = self.currentRow()
        row = (0 if delta > 0 else len(self.bookmarks) - 1) if row < 0 else (row + delta) % len(self.bookmarks)
        self.setCurrentRow(row)
        self.jump(row)
        return row

    def remove(self, row: int) -> None:
        """Delete bookmark ``row`` (and its mark on the timeline)."""
        if 0 <= row < len(self.bookmarks):
            marks = list(self.state.marks)
            del marks[row]
            self.state.set_marks(marks)

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if not self.count():  # an empty list says how to fill it
            with painting(self.viewport(), "bookmarks") as p:
                p.setPen(self.palette().placeholderText().color())
                p.drawText(self.viewport().rect().adjusted(6, 4, -6, -4), Qt.TextFlag.TextWordWrap,
                           "M on a range or a slice adds a bookmark; it is kept beside the file.")

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and self.currentRow() >= 0:
            self.remove(self.currentRow())
        else:
            super().keyPressEvent(event)

    # -- keeping the list, the marks and the sidecar in step ---------------------------------------
    def _trace_changed(self) -> None:
        self.source, self.bookmarks = None, []
        self._show()

    def _marks_changed(self) -> None:
        o = self.state.origin
        spans = [(round(a) + o, round(b) + o) for a, b in self.state.marks]
        new = reconcile(self.bookmarks, spans)
        if new != self.bookmarks:
            self.bookmarks = new
            self._show()
            self._save()

    def _renamed(self, item: QListWidgetItem) -> None:
        row, name = self.row(item), item.text().split("  ·  ")[0].strip()
        if 0 <= row < len(self.bookmarks) and name and name != self.bookmarks[row].name:
            b = self.bookmarks[row]
            self.bookmarks[row] = Bookmark(name, b.start_ns, b.end_ns)
            self._save()
        self._show()

    def _show(self) -> None:
        self.blockSignals(True)
        row = self.currentRow()
        self.clear()
        t0 = self.state.origin
        for b in self.bookmarks:
            span = "" if b.end_ns == b.start_ns else f", {format_duration(b.end_ns - b.start_ns)}"
            item = QListWidgetItem(f"{b.name}  ·  @{format_duration(b.start_ns - t0)}{span}")
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
            item.setToolTip(b.name)
            self.addItem(item)
        self.setCurrentRow(min(row, self.count() - 1))
        self.blockSignals(False)

    def _save(self) -> None:
        if self.source is None:
            return
        try:
            save_bookmarks(self.source, self.bookmarks)
        except BookmarkError as e:
            self.message.emit(f"Bookmarks not saved: {e}")
