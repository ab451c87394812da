"""One fleet analysis off the UI thread: ``analyze_fleet`` (or a stand-in) on a BackgroundTask,
its progress, report or one-line failure coming back as signals. A run that is no longer wanted
is cancelled without waiting for it: its next progress report raises, and whatever it still
returns is dropped, so opening another fleet never freezes the window."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal

from .background import BackgroundTask

Analyze = Callable[..., dict[str, Any]]


class AnalysisStopped(Exception):
    """Raised from the progress callback of a cancelled run, to end it at that point."""


def default_analyze() -> Analyze:
    """``analyze_fleet``, imported when first needed (it brings Dask)."""
    from accelview.model.fleet.analyze import analyze_fleet

    return analyze_fleet


class FleetRun(QObject):
    """``fn(paths, progress=..., **options)`` on its own thread: ``progressed(done, total)``, then
    ``done(report)`` or ``failed(line)``, none of them after ``cancel``."""

    progressed = Signal(int, int)
    done = Signal(object)
    failed = Signal(str)

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self._stop = threading.Event()
        self._task = BackgroundTask(self)
        self.finished = False

    def start(self, fn: Analyze, paths: Sequence[str], **options: Any) -> None:
        """Start the analysis."""
        files, stop, relay = list(paths), self._stop, self.progressed

        def progress(done: int, total: int) -> None:
            if stop.is_set():
                raise AnalysisStopped("the fleet analysis was cancelled")
            relay.emit(int(done), int(total))

        self._task.start(lambda: fn(files, progress=progress, **options), "fleet analysis", self._done, self._failed)

    def _done(self, report: object) -> None:
        self.finished = True
        if not self._stop.is_set():
            self.done.emit(report)

    def _failed(self, line: str) -> None:
        self.finished = True
        if not self._stop.is_set():
            self.failed.emit(line)

    def cancel(self) -> None:
        """Drop this run: it ends at its next progress report; nothing more is emitted."""
        self._stop.set()

    def wait(self) -> None:
        """Block until its thread has ended (before the window goes)."""
        self._task.shutdown()
