"""Entry points of the GUI: ``run_app`` for the command line, ``make_main_window`` for tests."""

from __future__ import annotations

import sys

from PySide6.QtCore import QSettings
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from .window import MainWindow


def _app() -> QApplication:
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
    app.setApplicationName("accelview")
    app.setOrganizationName("accelview")
    return app  # type: ignore[return-value]


def make_main_window(theme: str | None = None, settings: QSettings | None = None) -> MainWindow:
    """A main window with no file open (a QApplication must exist); ``settings`` defaults to
    the user's (recent files, theme)."""
    return MainWindow(theme=theme, settings=settings)


def run_app(path: str | list[str] | None = None) -> int:
    """Create the application and the main window, open ``path`` if given (several host
    captures, or their folder: one cluster), and run the event loop; returns the exit code."""
    app = _app()
    win = make_main_window()
    app.setWindowIcon(QIcon(win.icon_path()))
    win.resize(1600, 1000)
    win.restore_layout()
    win.show()
    if path:
        win.open_paths([path] if isinstance(path, str) else list(path))
    return int(app.exec())
