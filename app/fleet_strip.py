"""The fleet view's heat strips: a host's utilisation bins (busy fraction 0..1 of its devices over
the fleet's span) drawn as one row of colour, idle dark and busy bright (viridis, which reads on
both themes and in grey), so 64 to 256 hosts compare at a glance."""

from __future__ import annotations

from typing import Any

import numpy as np
from accelview.model.view.timescale import TimeScale, format_time, ruler_ticks
from PySide6.QtCore import QEvent, QModelIndex, QPersistentModelIndex, QRect, Qt
from PySide6.QtGui import QColor, QHelpEvent, QImage, QPainter, QPen, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolTip,
    QWidget,
)

from .fleet_model import HOST_ROLE, STRIP, STRIP_ROLE
from .theme import Theme

_STOPS = ("#440154", "#3b528b", "#21918c", "#5ec962", "#fde725")  # viridis at 0, ¼, ½, ¾, 1


def _lut() -> np.ndarray:
    """256 ARGB32 colours from idle (0) to busy (1)."""
    rgb = np.array([[QColor(c).red(), QColor(c).green(), QColor(c).blue()] for c in _STOPS], np.float64)
    x = np.linspace(0.0, 1.0, 256)
    at = np.linspace(0.0, 1.0, len(_STOPS))
    chans = [np.interp(x, at, rgb[:, k]).round().astype(np.uint32) for k in range(3)]
    return (np.uint32(0xFF000000) | (chans[0] << 16) | (chans[1] << 8) | chans[2]).astype(np.uint32)


LUT = _lut()


def strip_image(values: list[float] | np.ndarray, missing: QColor) -> QImage:
    """One row of pixels, one per bin: the bin's busy fraction through the colour ramp; a NaN
    (no data) bin in ``missing``."""
    v = np.asarray(values, np.float64).ravel()
    if not len(v):
        v = np.full(1, np.nan)
    bad = ~np.isfinite(v)
    px = LUT[(np.clip(np.where(bad, 0.0, v), 0.0, 1.0) * 255).round().astype(np.int64)]
    px[bad] = np.uint32(missing.rgba())
    px = np.ascontiguousarray(px.reshape(1, -1))
    return QImage(px.data, px.shape[1], 1, px.shape[1] * 4, QImage.Format.Format_ARGB32).copy()


def legend_pixmap(width: int, height: int) -> QPixmap:
    """The colour ramp from idle (left) to busy (right), for the view's key."""
    img = strip_image(np.linspace(0.0, 1.0, 256), QColor(0, 0, 0))
    return QPixmap.fromImage(img.scaled(width, height))


PAD = 3  # px between a strip and its cell's sides


class StripHeader(QHeaderView):
    """The table's header, with a time ruler over the strips' column (times from the start of the
    fleet's span, ``span_ns`` long)."""

    def __init__(self, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.theme = theme
        self.span_ns = 0.0
        self.setSectionsClickable(True)
        self.setSortIndicatorShown(True)

    def paintSection(self, painter: QPainter, rect: QRect, logical: int) -> None:
        super().paintSection(painter, rect, logical)
        if logical != STRIP or self.span_ns <= 0 or rect.width() <= 2 * PAD:
            return
        width = rect.width() - 2 * PAD
        painter.save()
        painter.setPen(QPen(self.theme.c("dim"), 1))
        fm = painter.fontMetrics()
        for tick in ruler_ticks(TimeScale(0.0, self.span_ns, width), min_px=90.0):
            x = rect.left() + PAD + round(tick.x)
            painter.drawLine(x, rect.bottom() - (5 if tick.label else 2), x, rect.bottom())
            if tick.label and x + fm.horizontalAdvance(tick.label) + 2 < rect.right():
                painter.drawText(x + 2, rect.bottom() - 5, tick.label)
        painter.restore()


class StripDelegate(QStyledItemDelegate):
    """Draws the STRIP column: each row's utilisation as a heat strip, its image kept per row
    data (the report does not change under it; ``clear`` when it does)."""

    def __init__(self, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.span_ns = 0.0  # the fleet's span the strips cover
        self._images: dict[int, tuple[Any, QImage]] = {}

    def clear(self) -> None:
        """Forget the drawn strips (a new report or theme)."""
        self._images.clear()

    def set_theme(self, theme: Theme) -> None:
        """Draw with ``theme``'s colours."""
        self.theme = theme
        self.clear()

    def image(self, values: list[float]) -> QImage:
        """The strip of ``values``, made once."""
        hit = self._images.get(id(values))
        if hit is None or hit[0] is not values:
            hit = (values, strip_image(values, self.theme.c("gutter")))
            self._images[id(values)] = hit
        return hit[1]

    def bin_at(self, option: QStyleOptionViewItem, x: float, bins: int) -> int:
        """The strip's bin under x (-1: none)."""
        target = option.rect.adjusted(PAD, 0, -PAD, 0)
        if bins <= 0 or target.width() <= 0 or not target.left() <= x < target.left() + target.width():
            return -1
        return min(int((x - target.left()) * bins / target.width()), bins - 1)

    def helpEvent(self, event: QHelpEvent, view: QAbstractItemView, option: QStyleOptionViewItem,
                  index: QModelIndex | QPersistentModelIndex) -> bool:
        """The tooltip over a strip: the time under the cursor and how busy the host's devices were."""
        values = index.data(STRIP_ROLE)
        if event.type() != QEvent.Type.ToolTip or not isinstance(values, list) or self.span_ns <= 0:
            return super().helpEvent(event, view, option, index)
        b = self.bin_at(option, event.pos().x(), len(values))
        if b < 0:
            return super().helpEvent(event, view, option, index)
        v = values[b]
        busy = "no data" if v is None or v != v else f"{float(v):.0%} busy"
        step = self.span_ns / len(values)
        when = f"{format_time(b * step, step, self.span_ns)}–{format_time((b + 1) * step, step, self.span_ns)}"
        QToolTip.showText(event.globalPos(), f"{index.data(HOST_ROLE)} at {when}: {busy}", view)
        return True

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        values = index.data(STRIP_ROLE)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        rect: QRect = option.rect
        gap = 1 if rect.height() >= 6 else 0  # rows stay apart down to tiny heights
        target = rect.adjusted(PAD, gap, -PAD, -gap)
        img = self.image(values if isinstance(values, list) else [])
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, target.width() < img.width())
        painter.drawImage(target, img)
        if selected:
            painter.setPen(QPen(self.theme.c("select"), 1))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(target.adjusted(0, 0, -1, -1))
        painter.restore()
