"""Widgets shown offscreen for the app tests: a timeline over a fresh view state, a main window
with its own settings file, and an image's pixels as an array."""

from __future__ import annotations

import numpy as np
from accelview.app.state import ViewState
from accelview.app.theme import DARK
from accelview.app.timeline import TimelineWidget
from accelview.app.window import MainWindow
from PySide6.QtCore import QSettings
from PySide6.QtGui import QImage


def shown_timeline(qtbot, width: int, height: int) -> tuple[ViewState, TimelineWidget]:
    """A dark-themed timeline of ``width``×``height`` px, shown and exposed, on its own state."""
    st = ViewState()
    w = TimelineWidget(st, DARK)
    qtbot.addWidget(w)
    w.resize(width, height)
    w.show()
    qtbot.waitExposed(w)
    return st, w


def shown_window(qtbot, tmp_path) -> MainWindow:
    """A 1400×800 main window, shown and exposed, its settings in ``tmp_path`` (not the user's)."""
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.resize(1400, 800)
    w.show()
    qtbot.waitExposed(w)
    return w


def pixels(img: QImage) -> np.ndarray:
    """The image as rows of 0xAARRGGBB values (a copy: the buffer goes with the image)."""
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    px = np.frombuffer(img.constBits(), np.uint32).reshape(img.height(), img.bytesPerLine() // 4)
    return px[:, : img.width()].copy()
