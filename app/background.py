"""One computation off the UI thread: a worker on a QThread whose result (or one-line error)
comes back as a signal, so a slow analysis never freezes the window and a bug in it never
takes the window down."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accelview.model.errors import AccelviewError
from PySide6.QtCore import QObject, QThread, Signal


class _Worker(QObject):
    done = Signal(object)
    failed = Signal(str)

    def __init__(self, compute: Callable[[], Any], what: str) -> None:
        super().__init__()
        self.compute, self.what = compute, what

    def run(self) -> None:
        try:
            self.done.emit(self.compute())
        except AccelviewError as e:  # a file the computation cannot use: its one line
            self.failed.emit(str(e))
        except Exception as e:  # a bug here must not take the window down
            self.failed.emit(f"{self.what} failed: {type(e).__name__}: {e}")


class BackgroundTask:
    """Runs one computation at a time for ``parent``; starting another waits for the last."""

    def __init__(self, parent: QObject) -> None:
        self.parent = parent
        self._thread: QThread | None = None
        self._worker: _Worker | None = None

    def start(self, compute: Callable[[], Any], what: str, on_done: Callable[[Any], None],
              on_failed: Callable[[str], None]) -> None:
        """Run ``compute()`` on a thread; its result goes to ``on_done``, an error line (naming
        ``what``) to ``on_failed``, both on the UI thread."""
        self.shutdown()
        self._thread = QThread(self.parent)
        self._worker = _Worker(compute, what)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.done.connect(on_done)
        self._worker.failed.connect(on_failed)
        self._worker.done.connect(self._thread.quit)
        self._worker.failed.connect(self._thread.quit)
        self._thread.start()

    def shutdown(self) -> None:
        """Wait for a running computation to finish (before the window goes)."""
        if self._thread is not None:
            self._thread.quit()
            self._thread.wait()
            self._thread = None
