"""File → Compare with… and Shift+drop for the main window: load a second run, compare it with
the one on screen on a worker thread, and open the comparison view (a dialog for a bad file)."""

from __future__ import annotations

from pathlib import Path

from accelview.model.compare.diff import Diff
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressDialog

from .compare_view import CompareJob, ComparisonView

FILTER = "Captures and traces (*.h5 *.hdf5 *.json *.json.gz *.gz);;All files (*)"


class Comparing:
    """Mixed into the main window (which has ``state``, ``theme`` and ``statusBar``)."""

    compare_job: CompareJob | None = None
    comparison: ComparisonView | None = None

    def compare_dialog(self) -> None:
        """Ask for the second run and compare the one on screen with it."""
        path, _ = QFileDialog.getOpenFileName(self, "Compare with", "", FILTER)
        if path:
            self.compare_with(path)

    def compare_with(self, path: str) -> CompareJob | None:
        """Compare the trace on screen (A) with the file ``path`` (B)."""
        if self.state.trace is None:
            self.statusBar().showMessage("Open a run first, then compare another with it", 5000)
            return None
        if Path(path).is_dir():
            self._compare_failed(f"{path}: a folder; the comparison view compares one capture or trace with another. "
                                 "Two folders of hosts or ranks compare host by host with accelview diff A_DIR B_DIR")
            return None
        job = CompareJob(self.state.trace, path, self)
        self.compare_job = job
        progress = QProgressDialog(f"Comparing with {Path(path).name}…", "", 0, 0, self)
        progress.setCancelButton(None)
        progress.setMinimumDuration(300)
        progress.setWindowTitle("accelview")
        job.done.connect(progress.close)
        job.failed.connect(progress.close)
        job.done.connect(self._show_comparison)
        job.failed.connect(self._compare_failed)
        job.start()
        return job

    def _show_comparison(self, diff: Diff) -> None:
        lods = self.compare_job.lods if self.compare_job is not None else (None, None)
        view = ComparisonView(diff, self.theme, *lods)
        view.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        view.setStyleSheet(self.styleSheet())
        view.resize(1600, 900)
        view.show()
        self.comparison = view
        self.statusBar().showMessage(diff.summary, 10000)

    def _compare_failed(self, message: str) -> None:
        box = QMessageBox(QMessageBox.Icon.Warning, "Cannot compare", message, QMessageBox.StandardButton.Ok, self)
        self.error_box = box
        box.open()
