"""Noticing that the open file changed on disk.

The window reads a capture or trace whole when it opens it and never goes back to the file, so a
file rewritten, truncated, replaced or deleted while it is open cannot break the view; but the view
then shows what is no longer there. ``FileWatch`` watches the open file (a folder: the files in it)
and says so in the status bar, with a link that reopens it, until another file is opened."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, Qt, Signal
from PySide6.QtWidgets import QLabel, QStatusBar

LINK = "#3b8eea"  # a blue that reads on the dark and the light theme (Qt's default link blue does not on dark)
Stamp = tuple[int, int, int, int] | None  # device, inode, size, mtime; None: gone or unreadable


def _stamp(path: Path) -> Stamp:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _files(path: Path) -> list[Path]:
    """What opening ``path`` read: the file, or the regular files directly in the folder."""
    if path.is_dir():
        try:
            return sorted(p for p in path.iterdir() if p.is_file())
        except OSError:
            return []
    return [path]


class FileWatch(QObject):
    """Watches what the window opened; ``reopen`` (the path) when the user follows the link."""

    reopen = Signal(str)

    def __init__(self, status_bar: QStatusBar) -> None:
        super().__init__(status_bar)
        self.path: str | None = None
        self._stamps: dict[Path, Stamp] = {}
        self._watcher = QFileSystemWatcher(self)
        self._watcher.fileChanged.connect(self.check)
        self._watcher.directoryChanged.connect(self.check)  # a file replaced by a rename, or deleted
        self.label = QLabel("")
        self.label.setObjectName("changedOnDisk")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.linkActivated.connect(lambda _link: self.path and self.reopen.emit(self.path))
        self.label.setVisible(False)
        status_bar.addPermanentWidget(self.label)

    def watch(self, path: str | None) -> None:
        """Watch ``path`` (the file or folder just opened; None or a label of several files:
        nothing) and forget what was said about the one before."""
        for old in self._watcher.files() + self._watcher.directories():
            self._watcher.removePath(old)
        self.label.setVisible(False)
        self.path, self._stamps = None, {}
        if path is None or not Path(path).exists():
            return
        self.path = path
        p = Path(path)
        self._stamps = {f: _stamp(f) for f in _files(p)}
        folders = {str(p if p.is_dir() else p.parent)}
        self._watcher.addPaths([str(f) for f in self._stamps] + sorted(folders))

    def changed(self) -> Path | None:
        """The first watched file that differs from when it was opened (or None)."""
        return next((f for f, s in self._stamps.items() if _stamp(f) != s), None)

    def check(self, *_: object) -> None:
        """Say so in the status bar when a watched file changed (a file the watcher dropped on a
        replacement or deletion keeps being compared through its folder)."""
        if self.path is None or not self.label.isHidden():  # said already (isVisible: false in a hidden window)
            return
        f = self.changed()
        if f is None:
            return
        link = f"<a href='reopen' style='color: {LINK}'>reopen it</a>"
        name = _escape(os.fspath(f.name))
        self.label.setText(f"<b>{name} changed on disk</b>: {link} (the view shows it as it was read)")
        self.label.setToolTip(f"{f} was rewritten, replaced or deleted after it was opened; the view keeps "
                              "what it read then")
        self.label.setVisible(True)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
