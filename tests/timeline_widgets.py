"""A timeline widget shown offscreen over a fresh view state, and its pixels as an array, for
the tests that look at what the timeline painted."""

from __future__ import annotations

import numpy as np
from accelview.app.state import ViewState
from accelview.app.theme import DARK
from accelview.app.timeline import TimelineWidget
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


def pixels(img: QImage) -> np.ndarray:
    """The image as rows of 0xAARRGGBB values (a copy: the buffer goes with the image)."""
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    px = np.frombuffer(img.constBits(), np.uint32).reshape(img.height(), img.bytesPerLine() // 4)
    return px[:, : img.width()].copy()
