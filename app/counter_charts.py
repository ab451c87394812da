"""Counter strips under the timeline on pyqtgraph: one plot per chosen counter or derived metric,
on the timeline's time window and pixel-aligned with it (same gutter), drawn as per-pixel min/max
bands (``CounterLOD``) so spikes narrower than a pixel survive zooming out, with value axes in
the counter's unit (GB/s, %), the maximum in view, the mean over the range selection, and the
value under the cursor."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from accelview.model.text.values import format_value
from accelview.model.view.counter_lod import band_pixels
from PySide6.QtCore import QEvent, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QMouseEvent, QPainter, QWheelEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from .chart_image import PixelImage
from .counter_list import CounterListModel
from .paint import GUTTER_W
from .state import ViewState
from .theme import Theme

STRIP_H = 56
AXIS_W = 58  # the value axis, at the right of the gutter; the name and figures fill the rest
STRIP_COLOURS = (0, 1, 4, 6, 2, 8, 5, 9)  # palette indexes, one per strip in turn
HEADROOM = 1.18  # the value axis reaches this far above the maximum in view, which it labels


class ValueAxis(pg.AxisItem):
    """Tick labels in the counter's unit, as every panel prints values (``4.63 TB/s``, ``57.5%``)."""

    def __init__(self, unit: str) -> None:
        super().__init__("left")
        self.unit = unit
        self.setStyle(tickFont=QFont("DejaVu Sans", 7), tickTextOffset=2, maxTickLevel=0)

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        return [format_value(v, self.unit) for v in values]


class CounterCharts(pg.GraphicsLayoutWidget):
    """Stacked counter strips on the timeline's time axis."""

    # Class defaults: pyqtgraph's __init__ resizes (and so draws) before ours sets them.
    cursor: float | None = None
    wheel_target: QWidget | None = None  # the timeline: wheel zoom over the counters too
    _strips: list[dict[str, Any]] = []  # noqa: RUF012 - replaced, never mutated

    def __init__(self, state: ViewState, model: CounterListModel, theme: Theme,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.model = model
        self.theme = theme
        self.right_margin = 0
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.ci.setSpacing(0)
        for sig in (state.scale_changed, state.trace_changed, state.range_changed):
            sig.connect(self.redraw)
        model.dataChanged.connect(self._strips_changed)
        model.modelReset.connect(self._strips_changed)
        self.setBackground(theme.c("gutter"))
        self._strips_changed()

    # -- input ------------------------------------------------------------------------------------
    def event(self, event: QEvent) -> bool:
        """Wheel and hover reach the strips whether they arrive at the viewport or at the view
        itself (a scroll area ignores both there)."""
        if event.type() == QEvent.Type.Wheel:
            self.wheelEvent(event)
            return True
        if event.type() == QEvent.Type.MouseMove:
            self.mouseMoveEvent(event)
            return True
        return super().event(event)

    def wheelEvent(self, event: QWheelEvent) -> None:
        """Zoom and pan from the counters like on the timeline (same x axis)."""
        if self.wheel_target is not None:
            self.wheel_target.wheelEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        x = event.position().x()
        self.set_cursor(self.state.scale.t_of(x - GUTTER_W) if x >= GUTTER_W else float("nan"))
        super().mouseMoveEvent(event)

    def leaveEvent(self, event: Any) -> None:
        self.set_cursor(float("nan"))
        super().leaveEvent(event)

    def set_cursor(self, t: float) -> None:
        """Show the time under the timeline's cursor (ns from the origin; NaN: none) and each
        counter's value there."""
        self.cursor = None if t != t else t
        self._draw_cursor()

    def set_theme(self, theme: Theme) -> None:
        """Redraw in another theme."""
        self.theme = theme
        self.setBackground(theme.c("gutter"))
        self._strips_changed()

    # -- layout -----------------------------------------------------------------------------------
    def _strips_changed(self, *_: Any) -> None:
        self.clear()
        self._strips = []
        checked = list(self.model.checked) if self.state.trace is not None else []
        self.setFixedHeight(max(len(checked), 1) * STRIP_H + 2)
        th = self.theme
        if not checked:
            self.addLabel("No counters selected", row=0, col=0, color=th.c("dim"), size="9pt")
            return
        colours = th.slice_colours
        for i, row in enumerate(checked):
            entry = self.model.entries[row]
            label = pg.LabelItem(justify="left")
            self.addItem(label, row=i, col=0)
            plot = self.addPlot(row=i, col=1, axisItems={"left": ValueAxis(entry.unit)})
            plot.hideAxis("bottom")
            plot.setMouseEnabled(False, False)
            plot.hideButtons()
            plot.setMenuEnabled(False)
            plot.layout.setContentsMargins(0, 0, 0, 0)
            axis = plot.getAxis("left")
            axis.setWidth(AXIS_W)
            axis.setPen(th.c("grid"))
            axis.setTextPen(th.c("dim"))
            plot.getViewBox().setBackgroundColor(th.c("bg"))
            plot.getViewBox().setBorder(pg.mkPen(th.c("grid")))
            image = PixelImage()
            plot.addItem(image)
            region = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(th.c("range_fill", 40)),
                                         pen=pg.mkPen(None))
            region.setZValue(10)
            plot.addItem(region)
            line = pg.InfiniteLine(angle=90, pen=pg.mkPen(th.c("dim", 160)))
            text = pg.TextItem(color=th.c("text"), fill=pg.mkBrush(th.c("bg", 200)), anchor=(0, 0))
            for item in (line, text):
                item.setZValue(20)
                plot.addItem(item, ignoreBounds=True)
            self.ci.layout.setColumnFixedWidth(0, GUTTER_W - AXIS_W)  # the plots start where the timeline's axis does
            self._strips.append({"row": row, "label": label, "plot": plot, "image": image, "region": region,
                                 "line": line, "text": text, "colour": QColor(colours[STRIP_COLOURS[i % 8]])})
        self.redraw()

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self.redraw()

    # -- drawing ----------------------------------------------------------------------------------
    def width_px(self) -> int:
        """Pixels across the strips' plotting area: the timeline's content width."""
        return max(self.width() - GUTTER_W - self.right_margin, 1)

    def redraw(self, *_: Any) -> None:
        """Recompute every strip's per-pixel band for the timeline's window."""
        if not self._strips:  # also while pyqtgraph's __init__ resizes, before ours ran
            return
        st = self.state
        if st.trace is None:
            return
        self.ci.setContentsMargins(0, 1, self.right_margin, 1)
        sc = st.scale
        width = self.width_px()
        ns_per_px = sc.span / width
        for s in self._strips:
            row, entry = s["row"], self.model.entries[s["row"]]
            lo, hi = self.model.lod(row).minmax(sc.r0, ns_per_px, width, st.origin)
            finite = np.isfinite(hi)
            top = float(np.nanmax(hi)) if finite.any() else 0.0
            vmax = top if top > 0 else 1.0
            height = STRIP_H - 4
            s["image"].set_pixels(band_pixels(lo, hi, vmax, height, s["colour"].rgb()),
                                  QRectF(sc.r0, vmax, sc.span, -vmax))
            plot = s["plot"]
            plot.setXRange(sc.r0, sc.r1, padding=0)
            if s.get("vmax") != vmax:  # the value axis (and its ticks) only change with the maximum
                s["vmax"] = vmax
                plot.setYRange(0, vmax * HEADROOM, padding=0)  # the peak's label fits under the strip above
                plot.getAxis("left").setTicks([[(vmax, format_value(vmax, entry.unit))]])
            lines = [f"<b>{entry.label}</b>", f"<span style='color:{self.theme.dim}'>max in view "
                     f"{format_value(top, entry.unit)}</span>"]
            if st.range:
                a, b = st.range
                s["region"].setRegion((a, b))
                s["region"].show()
                mean = self.model.range_mean(row, st.origin + int(a), st.origin + int(b))
                if mean == mean:
                    lines.append(f"<span style='color:{self.theme.range_fill}'>mean in range "
                                 f"{format_value(mean, entry.unit)}</span>")
            else:
                s["region"].hide()
            html = "<br>".join(lines)
            if s.get("html") != html:  # laying text out costs more than the band
                s["html"] = html
                s["label"].setText(html, size="7pt", color=self.theme.text)
        self._draw_cursor()

    def _draw_cursor(self) -> None:
        st = self.state
        for s in self._strips:
            line, text = s["line"], s["text"]
            if self.cursor is None or st.trace is None or not st.scale.r0 <= self.cursor <= st.scale.r1:
                line.hide()
                text.hide()
                continue
            ts, vals = self.model.series(s["row"])
            j = int(np.searchsorted(ts, np.int64(st.origin + int(np.floor(self.cursor))), "right")) - 1
            line.setPos(self.cursor)
            line.show()
            if j < 0:
                text.hide()
                continue
            text.setText(format_value(float(vals[j]), self.model.entries[s["row"]].unit))
            vb = s["plot"].getViewBox()
            right = self.cursor > st.scale.r0 + st.scale.span * 0.85  # near the right edge: label on the left
            text.setAnchor((1, 0) if right else (0, 0))
            text.setPos(self.cursor, vb.viewRange()[1][1])
            text.show()

    def paint(self, p: QPainter, w: int, h: int) -> None:
        """Draw all strips into a w×h area of ``p`` (offscreen export and tests)."""
        self.redraw()
        self.render(p, QRectF(0, 0, w, h), QRect(0, 0, w, h))
