"""The search box: finds slices by name, or by argument value with ``key=value`` or
``arg:text`` (the model does the finding), shows the count and the current hit, and steps
through hits with Enter / Shift+Enter or the arrows."""

from __future__ import annotations

from accelview.model.text.values import format_count
from accelview.model.view.argsearch import SYNTAX
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from .state import ViewState


class SearchLine(QLineEdit):
    """A line edit where Shift+Enter means 'previous'."""

    def __init__(self, bar: SearchBar) -> None:
        super().__init__(bar)
        self.bar = bar

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            back = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            self.bar.step(-1 if back else 1)
        elif event.key() == Qt.Key.Key_Escape:
            self.clear()
            self.bar.escaped.emit()  # the window hands the keys back to the timeline
        else:
            super().keyPressEvent(event)


class SearchBar(QWidget):
    """Search field, result count and previous/next buttons. ``escaped`` fires when Esc
    clears the field, so the window can give the keyboard back to the timeline."""

    escaped = Signal()

    def __init__(self, state: ViewState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.edit = SearchLine(self)
        self.edit.setPlaceholderText("Search names, key=value or arg:text  (Ctrl+F)")
        self.edit.setToolTip("Search slices: " + SYNTAX + ".\nEnter: next result, Shift+Enter: previous, Esc: clear.")
        self.edit.setClearButtonEnabled(True)
        self.edit.setMinimumWidth(260)
        self.count = QLabel("", self)
        self.count.setMinimumWidth(90)
        self.prev = QToolButton(self)
        self.prev.setText("▲")
        self.prev.setToolTip("Previous result (Shift+Enter)")
        self.next = QToolButton(self)
        self.next.setText("▼")
        self.next.setToolTip("Next result (Enter)")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        for w in (self.edit, self.count, self.prev, self.next):
            lay.addWidget(w)
        # Search once typing pauses: on a 10M-slice trace each search scans the name column.
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(150)
        self._debounce.timeout.connect(lambda: self.state.search(self.edit.text()))
        self.edit.textChanged.connect(lambda _t: self._debounce.start())
        self.prev.clicked.connect(lambda: self.step(-1))
        self.next.clicked.connect(lambda: self.step(1))
        state.search_changed.connect(self._update_count)
        state.trace_changed.connect(self._trace_changed)

    def _trace_changed(self) -> None:
        if self.edit.text():
            self.state.search(self.edit.text())

    def step(self, direction: int) -> None:
        """Go to the next (+1) or previous (-1) hit."""
        self._debounce.stop()
        if self.state.search_text != self.edit.text():
            self.state.search(self.edit.text())
        self.state.step_hit(direction)

    def _update_count(self) -> None:
        n = len(self.state.hits)
        if not self.state.search_text:
            self.count.setText("")
        elif n == 0:
            self.count.setText("no results")
        elif self.state.hit_index < 0:
            self.count.setText(f"{format_count(n)} results")
        else:
            self.count.setText(f"{format_count(self.state.hit_index + 1)} / {format_count(n)}")
