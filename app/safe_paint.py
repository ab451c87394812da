"""Painting that never leaves a QPainter active, whatever the drawing code raises.

An exception between ``QPainter(device)`` and ``end()`` left the painter active; Qt then tore
down an active painter (``render`` died with SIGSEGV) or refused every later paint. Here the
painter always ends, and the error is logged once per message and drawn where the view was.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPaintDevice, QPainter

log = logging.getLogger("accelview.paint")
_told: set[str] = set()  # the failures logged already (a view repaints many times a second)


@contextmanager
def painting(device: QPaintDevice, what: str, reraise: bool = False) -> Iterator[QPainter]:
    """A painter on ``device`` for ``what`` (a view's name). An exception inside is logged and
    shown on the device in one line (``reraise``: then raised again, for a caller that reports
    it itself); the painter ends either way."""
    p = QPainter(device)
    try:
        yield p
    except Exception as e:
        message = f"drawing the {what} failed: {type(e).__name__}: {e}"[:300]
        if message not in _told:
            _told.add(message)
            log.error(message, exc_info=True)
        if p.isActive():
            _notice(p, device, message)
        if reraise:
            raise
    finally:
        if p.isActive():
            p.end()


def _notice(p: QPainter, device: QPaintDevice, message: str) -> None:
    p.resetTransform()
    p.setClipping(False)
    p.setOpacity(1.0)
    box = QRectF(0, 0, device.width(), min(device.height(), 24))
    p.fillRect(box, QColor(120, 20, 20))
    p.setPen(QColor(255, 255, 255))
    p.drawText(box.adjusted(6, 0, -6, 0), Qt.AlignmentFlag.AlignVCenter, message)
