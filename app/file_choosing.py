"""The window's file choosing: File → Open (one file, or the per-rank files of one folder),
File → Open folder of traces, the recent-files menu and drag-and-drop. A mixin of MainWindow,
which provides ``open_path``, ``settings``, ``recent_menu`` and ``_failed``."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog

MAX_RECENT = 8
FILE_FILTER = "Captures and traces (*.h5 *.hdf5 *.json *.json.gz *.pt.trace.json);;All files (*)"


def rank_folder(paths: list[str]) -> str | None:
    """The folder of ``paths`` when they are exactly its per-rank trace files, else None."""
    from accelview.model.importers.kineto import rank_files

    folders = {str(Path(p).parent) for p in paths}
    if len(folders) != 1:
        return None
    folder = folders.pop()
    chosen = {Path(p).resolve() for p in paths}
    return folder if chosen == {p.resolve() for p in rank_files(Path(folder))} else None


class FileChoosing:
    """File dialogs, recent files and drops for the main window."""

    def open_dialog(self) -> None:
        """File → Open: one file, or several per-rank files of one folder (opened as that folder)."""
        paths, _ = QFileDialog.getOpenFileNames(self, "Open capture or trace", "", FILE_FILTER)
        if len(paths) == 1:
            self.open_path(paths[0])
        elif paths:
            folder = rank_folder(paths)
            if folder is None:
                self._failed("Pick one file, or the per-rank trace files of one folder "
                             "(File → Open folder of traces opens a whole folder).")
            else:
                self.open_path(folder)

    def open_folder_dialog(self) -> None:
        """File → Open folder of traces: a directory of per-rank traces opens as one trace."""
        folder = QFileDialog.getExistingDirectory(self, "Open a folder of per-rank traces")
        if folder:
            self.open_path(folder)


    def recent_files(self) -> list[str]:
        """Recently opened files, newest first."""
        v = self.settings.value("recent", [])
        if isinstance(v, str):
            v = [v]
        return [str(x) for x in (v or [])]

    def add_recent(self, path: str) -> None:
        """Put a file at the top of the recent list."""
        p = str(Path(path).resolve())
        items = [p] + [x for x in self.recent_files() if x != p]
        self.settings.setValue("recent", items[:MAX_RECENT])
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        files = self.recent_files()
        for f in files:
            self.recent_menu.addAction(QAction(f, self, triggered=lambda _=False, f=f: self.open_path(f)))
        self.recent_menu.setEnabled(bool(files))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_path(paths[0])

