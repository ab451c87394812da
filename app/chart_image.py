"""A pyqtgraph item that draws a numpy image of 0xAARRGGBB pixels into a rectangle of data
coordinates: one blit per frame, for charts computed per pixel (pyqtgraph's ImageItem converts
levels and lookup tables on every draw)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter


class PixelImage(pg.GraphicsObject):
    """Shows ``set_pixels``' array stretched over ``rect`` (x, y, width, height in data units;
    a negative height puts row 0 at the top)."""

    def __init__(self) -> None:
        super().__init__()
        self._pixels = np.zeros((1, 1), np.uint32)
        self._image = QImage()
        self._rect = QRectF()

    def set_pixels(self, pixels: np.ndarray, rect: QRectF) -> None:
        """Replace the image (a (rows, columns) uint32 array, kept alive while shown)."""
        self.prepareGeometryChange()
        self._pixels = np.ascontiguousarray(pixels, np.uint32)
        h, w = self._pixels.shape
        self._image = QImage(self._pixels.data, w, h, w * 4, QImage.Format.Format_ARGB32)
        self._rect = QRectF(rect)
        self.update()

    def boundingRect(self) -> QRectF:
        return self._rect.normalized()

    def paint(self, p: QPainter, *args: Any) -> None:
        if self._image.isNull():
            return
        r = self._rect.normalized()
        if self._rect.height() < 0:  # row 0 at the larger y: mirror about the rectangle's middle
            p.save()
            p.translate(0, r.top() + r.bottom())
            p.scale(1, -1)
            p.drawImage(r, self._image)
            p.restore()
        else:
            p.drawImage(r, self._image)
