""""Profile script…": pick a script and its arguments, run it under capture, watch it, open the result.

The capture service (:class:`accelview.capture.service.runner.CaptureService`) runs on a worker
``QThread``, so the window stays responsive while the script runs in its own process.
Cancel stops the script and keeps what was captured (marked incomplete); once the script has
ended, while the service converts its records, it stops the conversion. When the capture
is closed the dialog emits ``captured`` with its path; the main window opens it, and a complete
capture closes the dialog (an incomplete one leaves it open, saying why).
"""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

SCRIPT_CHOICE = "(the script's choice)"
OUTPUT_TAIL = 64 << 10  # bytes of the script's output the dialog keeps and shows


class _Worker(QObject):
    progressed = Signal(object)  # capture.service.Progress
    done = Signal(object)  # capture.service.ProfileResult
    failed = Signal(str)

    def __init__(self, service: Any) -> None:
        super().__init__()
        self.service = service
        # a copy each time: the service goes on updating its Progress while the GUI thread shows one
        service.on_progress = lambda p: self.progressed.emit(dataclasses.replace(p))

    def run(self) -> None:
        from accelview.model import AccelviewError

        try:
            self.done.emit(self.service.run())
        except AccelviewError as e:
            self.failed.emit(str(e))
        except Exception as e:  # the window must survive a failed start
            self.failed.emit(f"profile: could not run ({type(e).__name__}: {e})")
        finally:
            QThread.currentThread().quit()  # from here: the GUI thread's event loop may not be running


class ProfileDialog(QDialog):
    """Runs one script under capture; ``captured(path)`` when the capture file is closed."""

    captured = Signal(str)

    def __init__(self, parent: QWidget | None = None, script: str = "", output: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Profile script")
        self.script = QLineEdit(script)
        self.args = QLineEdit()
        self.args.setPlaceholderText("arguments, as on a shell command line")
        self.output = QLineEdit(output)
        self._auto_output = ""  # the output path this dialog suggested (replaced as the script changes)
        self.script.textChanged.connect(self._suggest_output)
        self._suggest_output(script)
        self.force = QCheckBox("Overwrite an existing file")
        self.call_sites = QCheckBox("Record each API call's file:line (about doubles the tracer's cost)")
        self.call_sites.setToolTip("Shows where in the script every call was made, at 2-3 µs a call in the "
                                   "benchmark: about as much as the rest of the tracer, or more.")
        self.spec = QComboBox()
        from accelview.capture.sim.device.specs import list_presets

        self.spec.addItems([SCRIPT_CHOICE, *list_presets()])
        form = QFormLayout()
        form.addRow("Script", self._with_browse(self.script, self._pick_script))
        form.addRow("Arguments", self.args)
        form.addRow("Capture file", self._with_browse(self.output, self._pick_output))
        form.addRow("", self.force)
        form.addRow("Device", self.spec)
        form.addRow("", self.call_sites)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)  # busy: a script's length is unknown
        self.bar.hide()
        self.buttons = QDialogButtonBox()
        self.start_button = self.buttons.addButton("Profile", QDialogButtonBox.ButtonRole.AcceptRole)
        self.cancel_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self._cancel_or_close)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.bar)
        layout.addWidget(self.status)
        self.script_output = QPlainTextEdit()  # what the script printed (its last OUTPUT_TAIL bytes)
        self.script_output.setReadOnly(True)
        self.script_output.setPlaceholderText("the script's output")
        self.script_output.hide()
        layout.addWidget(self.script_output)
        layout.addWidget(self.buttons)
        self._thread: QThread | None = None
        self._worker: _Worker | None = None
        self._service: Any = None
        self.result: Any = None

    def _with_browse(self, edit: QLineEdit, pick: Any) -> QWidget:
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(edit)
        button = QPushButton("Browse…")
        button.clicked.connect(pick)
        row.addWidget(button)
        return box

    def _pick_script(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Script to profile", "", "Python scripts (*.py);;All files (*)")
        if path:
            self.script.setText(path)

    def _suggest_output(self, script: str) -> None:
        """Offer ``<script>.h5`` beside the script unless the user typed an output path."""
        current = self.output.text().strip()
        if script.strip() and current in ("", self._auto_output):
            self._auto_output = str(Path(script.strip()).with_suffix(".h5"))
            self.output.setText(self._auto_output)

    def _pick_output(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Capture file", self.output.text(), "Captures (*.h5)")
        if path:
            self.output.setText(path)
            self.force.setChecked(True)  # the file dialog already asked about replacing it

    @property
    def running(self) -> bool:
        """True while a capture runs."""
        return self._thread is not None and self._thread.isRunning()

    def start(self) -> None:
        """Start the capture with the fields' values (errors show in the status line)."""
        from accelview.capture.protocol.config import CaptureConfig
        from accelview.capture.service.runner import CaptureService

        script, output = self.script.text().strip(), self.output.text().strip()
        if not script or not Path(script).is_file():
            self.status.setText(f"{script or 'The script'}: no such file")
            return
        if not output:
            self.status.setText("Choose the capture file to write.")
            return
        try:
            args = shlex.split(self.args.text())
        except ValueError as e:
            self.status.setText(f"Arguments: {e}")
            return
        spec = None if self.spec.currentText() == SCRIPT_CHOICE else self.spec.currentText()
        config = CaptureConfig(output=output, overwrite=self.force.isChecked(), spec=spec,
                               call_sites=self.call_sites.isChecked())
        self.result = None
        # the script's output is read as it comes (the last 64 KiB shown here): a script that prints
        # megabytes never blocks on a pipe, whatever the app's own stdout is
        self._service = CaptureService(config, [script, *args], stdin=subprocess.DEVNULL, output_tail=OUTPUT_TAIL)
        self.script_output.clear()
        self.script_output.hide()
        self._thread = QThread(self)
        self._worker = _Worker(self._service)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.progressed.connect(self._show_progress)
        self._worker.done.connect(self._done)
        self._worker.failed.connect(self._failed)
        self.start_button.setEnabled(False)
        self.cancel_button.setText("Stop")
        self.bar.setRange(0, 0)
        self.bar.show()
        self.status.setText(f"Starting {Path(script).name}…")
        self._thread.start()

    def cancel(self) -> None:
        """Stop the script (once it has ended: the conversion of its records); what was captured
        (converted) so far is kept."""
        if self._service is not None and self.running:
            converting = self._service.progress.phase == "converting"
            self._service.cancel()
            self.status.setText("Stopping the conversion — keeping what was converted…" if converting
                                else "Stopping — keeping what was captured…")

    def _cancel_or_close(self) -> None:
        if self.running:
            self.cancel()
        else:
            self.reject()

    def _show_progress(self, p: Any) -> None:
        self.status.setText(p.describe())
        if p.phase == "converting" and p.bytes_received:  # its length is known now: how far it is
            self.bar.setRange(0, 100)
            self.bar.setValue(round(100 * p.converted_bytes / p.bytes_received))

    def _done(self, result: Any) -> None:
        self.result = result
        self._finish_ui()
        state = "complete" if result.complete else f"incomplete: {result.reason}"
        self.status.setText(f"Capture {result.path} ({state}); the script exited with status {result.exit_code}.")
        self.captured.emit(str(result.path))
        if result.complete:
            self.accept()  # the window opens the capture; nothing is left to do here

    def _failed(self, message: str) -> None:
        self._finish_ui()
        self.status.setText(message)

    def _finish_ui(self) -> None:
        tail = self._service.output if self._service is not None else None
        if tail is not None and tail.total:
            tail.thread.join(0.5)
            self.script_output.setPlainText(tail.text())
            self.script_output.show()
        self.bar.hide()
        self.start_button.setEnabled(True)
        self.cancel_button.setText("Close")

    def wait(self, ms: int = 30000) -> bool:
        """Block until the capture thread has ended (tests and shutdown)."""
        return self._thread.wait(ms) if self._thread is not None else True

    def done(self, code: int) -> None:
        """Closing the dialog while a capture runs stops it (keeping the capture) first."""
        if self.running and self.result is None:  # with a result the thread is only ending
            self.cancel()
            self.wait()
        super().done(code)
