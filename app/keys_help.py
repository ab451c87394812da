"""Help → Keyboard shortcuts (F1): every key and mouse gesture of the window as a two-column
table grouped by where it acts, so a new user can scan it like Perfetto's help."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

# (section, key, what it does): section rows have an empty key.
KEYS: tuple[tuple[str, str], ...] = (
    ("Timeline", ""),
    ("W / S", "Zoom in / out at the mouse cursor"),
    ("A / D", "Pan left / right"),
    ("Wheel", "Zoom at the cursor"),
    ("Shift+Wheel", "Scroll the lanes up and down"),
    ("Drag", "Pan"),
    ("Shift+Drag", "Select a time range (duration and per-lane busy %)"),
    ("Click", "Select a slice and its dependency chain"),
    ("[ / ]", "Previous / next slice along the chain"),
    ("F", "Fit the selection (slice or range); with none, the trace's activity"),
    ("M / Shift+M", "Add a mark at the selection / clear all marks"),
    ("Esc", "Clear the selection and the range"),
    ("Click a lane header", "Collapse / expand its group"),
    ("View", ""),
    ("Ctrl+0", "Fit the whole trace"),
    ("Ctrl+] / Ctrl+[", "Jump to the next / previous bookmark"),
    ("B", "Colour device ops by class (compute, memory, latency, transfer, communication)"),
    ("Ctrl+T", "Switch between the dark and light theme"),
    ("Ctrl+K", "Show clock error: each aligned host's and device's error bound at its lane's edge"),
    ("G", "Devices together: every device of every host as one compact row, fit to the height"),
    ("Ctrl+Shift+F", "Fleet: the hosts of a cluster ranked, one summary lane each (back to the timeline)"),
    ("Fleet view", ""),
    ("Up / Down", "Select the previous / next host"),
    ("Enter / Double-click", "Open the host's timeline on the fleet's timebase"),
    ("Click a column header", "Sort the hosts by it (again: the other way)"),
    ("Search", ""),
    ("Ctrl+F", "Go to the search box"),
    ("Enter / Shift+Enter", "Next / previous result"),
    ("Esc", "Clear the search and give the keys back to the timeline"),
    ("Bookmarks panel", ""),
    ("Enter / Double-click", "Jump the view to the bookmark (M adds one)"),
    ("F2", "Rename the bookmark (kept in <file>.accelview.json beside it)"),
    ("Del", "Remove the bookmark and its mark"),
    ("Lanes panel (right-click a lane)", ""),
    ("Alt+Up / Alt+Down", "Move the lane up / down"),
    ("Show only this lane", "Hide every other lane"),
    ("Show all lanes", "Show the hidden lanes again"),
    ("File", ""),
    ("Ctrl+O", "Open a capture or a trace (all per-rank files of one folder; several host captures as one cluster)"),
    ("Ctrl+Shift+O", "Open a folder of per-rank traces or of host captures as one trace"),
    ("Ctrl+P", "Profile a script"),
    ("Ctrl+Shift+D", "Compare the run on screen with another (or drop a file with Shift held)"),
    ("Ctrl+E", "Export the timeline view as PNG"),
    ("Ctrl+Shift+E", "Export the trace for Perfetto (Chrome JSON)"),
    ("Ctrl+Q", "Quit"),
    ("F1", "This table"),
)


class KeysDialog(QDialog):
    """The shortcut table; section rows span both columns in bold."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.table = QTableWidget(len(KEYS), 2, self)
        self.table.setHorizontalHeaderLabels(["Key", "Action"])
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        for row, (key, what) in enumerate(KEYS):
            if not what:
                continue
            self.table.setItem(row, 0, QTableWidgetItem(key))
            self.table.setItem(row, 1, QTableWidgetItem(what))
        for row, (section, what) in enumerate(KEYS):
            if not what:
                item = QTableWidgetItem(section)
                f = item.font()
                f.setBold(True)
                item.setFont(f)
                self.table.setItem(row, 0, item)
                self.table.setSpan(row, 0, 1, 2)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(self.table)
        lay.addWidget(buttons)
        self.resize(640, 800)

    def keys(self) -> list[str]:
        """The key column's texts (sections included), for tests."""
        return [self.table.item(r, 0).text() for r in range(self.table.rowCount())]
