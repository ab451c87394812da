"""Counter panels under the timeline: one strip per chosen counter or derived metric, sharing
the timeline's time axis (same gutter, same ``TimeScale``), drawn as per-pixel min/max bands
so spikes narrower than a pixel survive zooming out."""

from __future__ import annotations

import numpy as np
from accelview.app.safe_paint import painting
from accelview.model.text.values import format_value
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QMouseEvent, QPainter, QPaintEvent, QWheelEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from .counter_list import CounterListModel
from .paint import GUTTER_W
from .state import ViewState
from .theme import Theme

STRIP_H = 56



class CounterPanel(QWidget):
    """Stacked counter strips drawn on the timeline's time axis."""

    def __init__(self, state: ViewState, model: CounterListModel, theme: Theme,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.model = model
        self.theme = theme
        self.cursor: float | None = None
        self.wheel_target: QWidget | None = None  # the timeline: wheel zoom over the counters too
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        for sig in (state.scale_changed, state.trace_changed, state.range_changed):
            sig.connect(self.update)
        model.dataChanged.connect(self._strips_changed)
        model.modelReset.connect(self._strips_changed)
        self._strips_changed()

    def wheelEvent(self, event: QWheelEvent) -> None:
        """Zoom and pan from the counters like on the timeline (same x axis)."""
        if self.wheel_target is not None:
            self.wheel_target.wheelEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        x = event.position().x()
        self.set_cursor(self.state.scale.t_of(x - GUTTER_W) if x >= GUTTER_W else float("nan"))

    def leaveEvent(self, event) -> None:
        self.set_cursor(float("nan"))
        super().leaveEvent(event)

    def set_theme(self, theme: Theme) -> None:
        """Repaint in another theme."""
        self.theme = theme
        self.update()

    def _strips_changed(self) -> None:
        self.setFixedHeight(max(len(self.model.checked), 1) * STRIP_H + 2)
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        with painting(self, "counters") as p:
            self.paint(p, self.width(), self.height())

    def paint(self, p: QPainter, w: int, h: int) -> None:
        """Draw all strips into a w×h area."""
        th, st = self.theme, self.state
        p.fillRect(QRectF(0, 0, w, h), th.c("bg"))
        p.fillRect(QRectF(0, 0, GUTTER_W, h), th.c("gutter"))
        if st.trace is None or not self.model.checked:
            p.setPen(th.c("dim"))
            p.drawText(QRectF(8, 0, w, h), Qt.AlignmentFlag.AlignVCenter, "No counters selected")
            return
        sc = st.scale
        colours = th.slice_colours
        for i, row in enumerate(self.model.checked):
            y = i * STRIP_H
            entry = self.model.entries[row]
            p.setPen(th.c("grid"))
            p.drawLine(0, y, w, y)
            lo, hi = self.model.lod(row).minmax(sc.r0, sc.ns_per_px, sc.width, st.origin)
            finite = np.isfinite(hi)
            top = float(np.nanmax(hi)) if finite.any() else 0.0
            vmax = top if top > 0 else 1.0
            col = colours[(0, 1, 4, 6, 2, 8, 5, 9)[i % 8]]
            self._strip_image(p, lo, hi, vmax, col, y + 6, STRIP_H - 10)
            unit = entry.unit
            p.setPen(th.c("text"))
            p.setFont(QFont("DejaVu Sans", 8))
            p.drawText(QRectF(10, y + 4, GUTTER_W - 14, 16), Qt.AlignmentFlag.AlignVCenter,
                       entry.label)
            p.setPen(th.c("dim"))
            p.setFont(QFont("DejaVu Sans", 7))
            p.drawText(QRectF(10, y + 20, GUTTER_W - 14, 16), Qt.AlignmentFlag.AlignVCenter,
                       f"max in view {format_value(top, unit)}")
            if st.range:
                mean = self.model.range_mean(row, st.origin + int(st.range[0]), st.origin + int(st.range[1]))
                if mean == mean:
                    p.setPen(th.c("range_fill"))
                    p.drawText(QRectF(10, y + 34, GUTTER_W - 14, 16), Qt.AlignmentFlag.AlignVCenter,
                               f"mean in range {format_value(mean, unit)}")
        if st.range:
            a, b = st.range
            x0, x1 = GUTTER_W + sc.x_of(a), GUTTER_W + sc.x_of(b)
            p.fillRect(QRectF(x0, 0, max(x1 - x0, 1), h), th.c("range_fill", 40))
        if self.cursor is not None and sc.r0 <= self.cursor <= sc.r1:
            self._paint_cursor(p, h)

    def set_cursor(self, t: float) -> None:
        """Show the time under the timeline's cursor (ns from the origin; NaN: none) and each
        counter's value there."""
        self.cursor = None if t != t else t
        self.update()

    def _paint_cursor(self, p: QPainter, h: int) -> None:
        st, th = self.state, self.theme
        x = GUTTER_W + st.scale.x_of(self.cursor)
        p.setPen(th.c("dim", 160))
        p.drawLine(QPointF(x, 0), QPointF(x, h))
        p.setFont(QFont("DejaVu Sans", 7))
        for i, row in enumerate(self.model.checked):
            ts, vals = self.model.series(row)
            j = int(np.searchsorted(ts, np.int64(st.origin + int(np.floor(self.cursor))), "right")) - 1
            if j < 0:
                continue
            unit = self.model.entries[row].unit
            text = format_value(float(vals[j]), unit)
            r = QRectF(x + 4, i * STRIP_H + 3, 110, 14)
            if r.right() > self.width():
                r.moveRight(x - 4)
            p.fillRect(r, th.c("bg", 200))
            p.setPen(th.c("text"))
            p.drawText(r, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, " " + text)

    def _strip_image(self, p: QPainter, lo: np.ndarray, hi: np.ndarray, vmax: float, col: QColor,
                     y: float, sh: int) -> None:
        """Fill each pixel column from the baseline to its max (translucent) and from min to
        max (solid), as one image."""
        n = len(hi)
        rows = np.arange(sh, dtype=np.float32)[:, None]
        ok = np.isfinite(hi)
        ytop = np.where(ok, sh - 1 - np.nan_to_num(hi) / vmax * (sh - 1), sh)
        ybot = np.where(ok, sh - 1 - np.nan_to_num(lo) / vmax * (sh - 1), sh)
        band = (rows >= np.floor(ytop)[None, :]) & (rows <= np.ceil(ybot)[None, :])
        area = rows >= ytop[None, :]
        img = np.zeros((sh, n), np.uint32)
        rgb = (col.red() << 16) | (col.green() << 8) | col.blue()
        img[area] = (0x55 << 24) | rgb
        img[band] = (0xFF << 24) | rgb
        q = QImage(img.data, n, sh, n * 4, QImage.Format.Format_ARGB32)  # translucent: not premultiplied
        p.drawImage(QRectF(GUTTER_W, y, n, sh), q)
