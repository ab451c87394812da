"""Loading a file in a worker thread: the window stays responsive, a progress dialog shows
how far it got and can cancel; the result or a one-line error comes back as a signal."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from accelview.model import AccelviewError, Trace

if TYPE_CHECKING:
    from accelview.model.view.lod import TraceLOD
from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtWidgets import QProgressDialog, QWidget

INDEXING = "Building the timeline index…"


def _default_loader() -> Callable[..., Trace]:
    from accelview.model.loader import load_trace

    return load_trace


class _Worker(QObject):
    progressed = Signal(float)
    stage = Signal(str)
    loaded = Signal(object)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, path: str, loader: Callable[..., Trace], stop: threading.Event) -> None:
        super().__init__()
        self.path, self.loader, self.stop = path, loader, stop
        self.lod = None

    def run(self) -> None:
        try:
            trace = self.loader(self.path, progress=self.progressed.emit, cancel=self.stop.is_set)
        except AccelviewError as e:
            if self.stop.is_set():
                self.cancelled.emit()
            else:
                self.failed.emit(str(e))
            return
        except Exception as e:  # a bug in a reader must not take the window down
            self.failed.emit(f"{self.path}: could not be read ({type(e).__name__}: {e})")
            return
        if self.stop.is_set():
            self.cancelled.emit()
            return
        self.stage.emit(INDEXING)  # the bar is full; say what the next second is spent on
        try:  # the timeline's indexes, built here so the first frame does not wait for them
            from accelview.model.view.lod import TraceLOD

            self.lod = TraceLOD(trace, origin=int(trace.time_bounds()[0])).prepare()
        except Exception:  # the view builds them itself then
            self.lod = None
        self.loaded.emit(trace)


class LoadJob(QObject):
    """One file being loaded on its own thread. Connect to ``loaded`` (the Trace), ``failed``
    (the message), ``cancelled``, ``progressed`` (0..1) and ``stage`` (what it does after
    reading), then call ``start()``."""

    progressed = Signal(float)
    stage = Signal(str)
    loaded = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    finished = Signal()

    def __init__(self, path: str, loader: Callable[..., Trace] | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.path = path
        self._stop = threading.Event()
        self._thread = QThread()
        self._worker = _Worker(path, loader or _default_loader(), self._stop)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.progressed.connect(self.progressed)
        self._worker.stage.connect(self.stage)
        for sig, mine in ((self._worker.loaded, self.loaded), (self._worker.failed, self.failed),
                          (self._worker.cancelled, self.cancelled)):
            sig.connect(mine)
            # Direct: QThread.quit is thread-safe, and a queued quit would wait for the GUI
            # thread's event loop, so wait() on the GUI thread (shutdown, tests) would hang.
            sig.connect(self._thread.quit, Qt.ConnectionType.DirectConnection)
        self._thread.finished.connect(self.finished)

    def start(self) -> None:
        """Start loading."""
        self._thread.start()

    @property
    def lod(self) -> TraceLOD | None:
        """The timeline index the worker prepared for the loaded trace (or None)."""
        return self._worker.lod

    def cancel(self) -> None:
        """Ask the loader to stop at its next check."""
        self._stop.set()

    def wait(self, ms: int = 30000) -> bool:
        """Block until the thread ends (tests and shutdown)."""
        return self._thread.wait(ms)

    @property
    def running(self) -> bool:
        """True while the worker thread runs."""
        return self._thread.isRunning()


def progress_dialog(job: LoadJob, name: str, parent: QWidget) -> QProgressDialog:
    """The job's progress dialog: the bar while reading, then a busy bar naming the step after
    it (a full bar with no text looked hung on large files); Cancel cancels the job."""
    dialog = QProgressDialog(f"Loading {name}…", "Cancel", 0, 1000, parent)
    dialog.setWindowTitle("accelview")
    dialog.setMinimumDuration(300)
    dialog.setAutoClose(False)
    dialog.setAutoReset(False)
    dialog.canceled.connect(job.cancel)

    def progressed(f: float) -> None:
        if f >= 1.0 and dialog.maximum():
            dialog.setLabelText(f"Loading {name}: finishing the read…")
        dialog.setValue(int(max(0.0, min(f, 1.0)) * 1000))

    def stage(text: str) -> None:
        dialog.setLabelText(f"Loading {name}: {text}")
        dialog.setRange(0, 0)  # busy: no fraction is known for this step

    job.progressed.connect(progressed)
    job.stage.connect(stage)
    job.finished.connect(lambda: (dialog.reset(), dialog.hide()))  # this job's dialog only
    return dialog
