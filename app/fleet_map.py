"""The whole fleet at a glance beside the hosts' table when they do not all fit in it (a few
hundred hosts): every host's heat strip one pixel row or more each, in the table's order, the
rows the table shows framed and the current host marked; a click or drag picks a host."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QImage, QMouseEvent, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from .fleet_model import FleetModel
from .fleet_strip import LUT
from .theme import Theme


def fleet_image(rows: list[list[float]], missing: int) -> QImage:
    """One pixel row per host (``rows`` of busy fractions, padded with no-data to the longest)."""
    n, bins = len(rows), max((len(r) for r in rows), default=1) or 1
    v = np.full((max(n, 1), bins), np.nan)
    for i, r in enumerate(rows):
        v[i, :len(r)] = np.asarray(r, np.float64)
    bad = ~np.isfinite(v)
    px = LUT[(np.clip(np.where(bad, 0.0, v), 0.0, 1.0) * 255).round().astype(np.int64)]
    px[bad] = np.uint32(missing)
    px = np.ascontiguousarray(px)
    return QImage(px.data, bins, px.shape[0], bins * 4, QImage.Format.Format_ARGB32).copy()


class FleetMap(QWidget):
    """Draws ``model``'s hosts stacked; ``picked(row)`` when one is clicked. ``shown`` is the
    (first, last) row the table shows, ``current`` its current row."""

    picked = Signal(int)

    def __init__(self, model: FleetModel, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model, self.theme = model, theme
        self.shown, self.current = (0, -1), -1
        self._image: QImage | None = None
        for sig in (model.modelReset, model.layoutChanged):
            sig.connect(self.refresh)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        self.setToolTip("Every host's utilisation in the table's order: click to go to a host")

    def sizeHint(self) -> QSize:
        return QSize(240, 260)

    def refresh(self) -> None:
        """Redraw from the model (its hosts or their order changed)."""
        m = self.model
        rows = [m.host_at(r).get("utilisation") or [] for r in range(m.rowCount())]
        self._image = fleet_image(rows, self.theme.c("gutter").rgba()) if rows else None
        self.update()

    def set_view(self, first: int, last: int, current: int) -> None:
        """The rows the table shows and its current row."""
        self.shown, self.current = (first, last), current
        self.update()

    def set_theme(self, theme: Theme) -> None:
        """Draw with ``theme``'s colours."""
        self.theme = theme
        self.refresh()

    def _row_y(self, row: float) -> float:
        return self.height() * row / max(self.model.rowCount(), 1)

    def paintEvent(self, _event: object) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), self.theme.c("bg"))
        if self._image is None:
            return
        p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, True)
        p.drawImage(self.rect(), self._image)
        first, last = self.shown
        top = int(self._row_y(first))
        frame = QRect(0, top, self.width() - 1, max(int(self._row_y(last + 1)) - top - 1, 2))
        p.setPen(QPen(self.theme.c("text"), 1))
        p.drawRect(frame)
        if self.current >= 0:
            y = int(self._row_y(self.current + 0.5))
            p.setPen(QPen(self.theme.c("accent"), 2))
            p.drawLine(0, y, self.width(), y)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._pick(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._pick(event)

    def _pick(self, event: QMouseEvent) -> None:
        n = self.model.rowCount()
        if n:
            self.picked.emit(min(max(int(event.position().y() * n / max(self.height(), 1)), 0), n - 1))
