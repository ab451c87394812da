"""The window's file choosing: File → Open (one file, or the per-rank files of one folder),
File → Open folder of traces, the recent-files menu, drag-and-drop, and File → Export (the view
as PNG, the trace as Chrome JSON for Perfetto, written on a worker thread). A mixin of MainWindow,
which provides ``open_path``, ``settings``, ``recent_menu``, ``state``, ``timeline`` and ``_failed``."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QThread, Signal
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressDialog

from .cluster_open import cluster_label, cluster_loader, is_cluster_choice, is_set_label

MAX_RECENT = 8
FILE_FILTER = "Captures and traces (*.h5 *.hdf5 *.json *.json.gz *.pt.trace.json);;All files (*)"


class ExportJob(QThread):
    """Chrome JSON export of one trace on its own thread: ``progressed`` (0..1), then ``done``
    (the path) or ``failed`` (a one-line message, the partial file removed)."""

    progressed = Signal(float)
    done = Signal(str)
    failed = Signal(str)

    def __init__(self, trace: object, path: str, parent: object = None) -> None:
        super().__init__(parent)
        self.trace, self.path = trace, path

    def run(self) -> None:
        from accelview.model.export.chrome import export_chrome

        try:
            export_chrome(self.trace, self.path, progress=self.progressed.emit)
        except Exception as e:  # any failure is one line in a dialog, not a crash
            Path(self.path).unlink(missing_ok=True)
            self.failed.emit(f"{Path(self.path).name}: {getattr(e, 'strerror', None) or e}".splitlines()[0])
        else:
            self.done.emit(self.path)


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
        """File → Open: one file, several per-rank files of one folder (opened as that folder),
        or several host captures (opened as one cluster)."""
        paths, _ = QFileDialog.getOpenFileNames(self, "Open capture or trace", "", FILE_FILTER)
        if paths:
            self.open_paths(paths)

    def open_paths(self, paths: list[str]) -> object:
        """Open what ``paths`` stand for: one file or trace folder as it is; the per-rank files
        of one folder as that folder; host captures (several, or a folder of them) as one
        cluster, with a dialog naming the file when they are not one cluster's hosts."""
        folder = rank_folder(paths) if len(paths) > 1 else None
        if folder is not None or not is_cluster_choice(paths):
            return self.open_path(folder or paths[0])
        return self.open_path(cluster_label(paths), cluster_loader(paths))

    def open_folder_dialog(self) -> None:
        """File → Open folder of traces: a directory of per-rank traces or of host captures
        opens as one trace."""
        folder = QFileDialog.getExistingDirectory(self, "Open a folder of per-rank traces or host captures")
        if folder:
            self.open_paths([folder])

    def export_png_dialog(self) -> None:
        """File → Export view as PNG: the timeline exactly as shown."""
        path, _ = QFileDialog.getSaveFileName(self, "Export view as PNG", "timeline.png", "PNG images (*.png)")
        if path:
            self.export_png(path if path.lower().endswith(".png") else path + ".png")

    def export_png(self, path: str) -> bool:
        """Save the timeline view to ``path``; a failure is a one-line dialog."""
        if not self.timeline.grab().save(path, "PNG"):
            self._export_failed(f"{Path(path).name}: could not write the PNG there")
            return False
        self.statusBar().showMessage(f"Exported the view to {path}", 5000)
        return True

    def export_chrome_dialog(self) -> None:
        """File → Export for Perfetto: Chrome trace JSON (.json, or .json.gz gzipped)."""
        path, _ = QFileDialog.getSaveFileName(self, "Export for Perfetto", "trace.json.gz",
                                              "Chrome trace JSON (*.json *.json.gz)")
        if path:
            self.export_chrome(path)

    def export_chrome(self, path: str) -> ExportJob | None:
        """Write the open trace to ``path`` on a worker thread behind a progress dialog."""
        trace, source = self.state.trace, getattr(self.bookmarks, "source", None)
        if trace is None:
            return None
        if source is not None and Path(path).resolve() == source.resolve():
            self._export_failed(f"{Path(path).name} is the open capture; choose another file")
            return None
        job = ExportJob(trace, path, self)
        dialog = QProgressDialog(f"Exporting {Path(path).name}…", "", 0, 1000, self)
        dialog.setCancelButton(None)  # the writer cannot stop half-way; it is quick next to a load
        dialog.setMinimumDuration(300)
        job.progressed.connect(lambda f: dialog.setValue(int(min(max(f, 0.0), 1.0) * 1000)))
        job.done.connect(lambda p: self.statusBar().showMessage(f"Exported for Perfetto to {p}", 8000))
        job.failed.connect(self._export_failed)
        job.finished.connect(lambda: (dialog.reset(), dialog.hide(), dialog.deleteLater()))
        self.export_job = job
        job.start()
        return job

    def _export_failed(self, message: str) -> None:
        box = QMessageBox(QMessageBox.Icon.Warning, "Export failed", message, QMessageBox.StandardButton.Ok, self)
        self.error_box = box
        box.open()

    def recent_files(self) -> list[str]:
        """Recently opened files, newest first."""
        v = self.settings.value("recent", [])
        if isinstance(v, str):
            v = [v]
        return [str(x) for x in (v or [])]

    def add_recent(self, path: str) -> None:
        """Put a file at the top of the recent list (not the label of a set of files)."""
        if is_set_label(path):
            return
        p = str(Path(path).resolve())
        items = [p] + [x for x in self.recent_files() if x != p]
        self.settings.setValue("recent", items[:MAX_RECENT])
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        files = self.recent_files()
        for f in files:
            self.recent_menu.addAction(QAction(f, self, triggered=lambda _=False, f=f: self.open_paths([f])))
        self.recent_menu.setEnabled(bool(files))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier and self.state.trace is not None:
                self.compare_with(paths[0])  # Shift: compare the run on screen with the dropped one
            else:
                self.open_paths(paths)

