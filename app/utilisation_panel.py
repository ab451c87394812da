"""The Utilisation panel: per device, a stacked chart of the share of time its ops were compute-,
memory- or latency-bound, moved data with no op running, or idle; and HBM and PCIe bandwidth as
a share of peak, min/max per pixel so spikes survive zooming out. Both follow the timeline's x
range (the same window, recomputed per pixel by ``model.view.utilisation`` at any zoom)."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import numpy as np
import pyqtgraph as pg
from accelview.model.analysis.ops import CLASS_COLOURS
from accelview.model.analysis.report import Report
from accelview.model.view.utilisation import STACK, Frame, Utilisation, stack_pixels
from PySide6.QtCore import QRectF, Signal
from PySide6.QtGui import QColor, QWheelEvent
from PySide6.QtWidgets import QWidget

from .chart_axes import BandwidthAxis, DurationAxis
from .chart_image import PixelImage
from .state import ViewState
from .theme import Theme

BANDWIDTH_COLOURS = {"HBM": 6, "PCIe H2D": 4, "PCIe D2H": 1}  # palette indexes
TRANSFER_COLOUR = 3


class UtilisationPanel(pg.GraphicsLayoutWidget):
    """Two charts per device on the timeline's time window."""

    # Class defaults: pyqtgraph's __init__ resizes (and so draws) before ours sets them.
    util: Utilisation | None = None
    gutter: tuple[int, int] | None = None  # (left, right) px the timeline keeps beside its time axis
    _items: dict[int, dict[str, Any]] = {}  # noqa: RUF012 - replaced, never mutated
    _lut = np.zeros(len(STACK), np.uint32)  # 0xAARRGGBB of each class of the stack
    _built = Signal(object, object)  # (trace, Utilisation or an error line), from the builder thread

    def __init__(self, state: ViewState, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.theme = theme
        self._built.connect(self._on_built)  # queued: emitted by the builder thread
        self.util: Utilisation | None = None
        self._labels: Any = None
        self.wheel_target: QWidget | None = None  # the timeline: wheel zoom here zooms it
        self.frames: dict[int, Frame] = {}
        self._items: dict[int, dict[str, Any]] = {}
        self._dirty = True
        self.setMinimumHeight(160)
        state.trace_changed.connect(self._trace_changed)
        state.scale_changed.connect(self.redraw)
        self.set_theme(theme)

    def wheelEvent(self, event: QWheelEvent) -> None:
        """Zoom and pan like on the timeline (same x range)."""
        if self.wheel_target is not None:
            self.wheel_target.wheelEvent(event)

    def set_report(self, report: Report) -> None:
        """Take the analysis's op labels if the charts are not built yet (the same labels the
        model would compute: this only spares a second classification)."""
        if report.trace is self.state.trace and self.util is None:
            self._labels = report.ops

    def _trace_changed(self) -> None:
        self.util, self._labels = None, None
        self._dirty = True
        if self.isVisible():
            self.rebuild()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if self._dirty:
            self.rebuild()

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self.align()
        self.redraw()

    def align(self) -> None:
        """Put the charts' time axes under the timeline's (same left gutter and right margin),
        when the panel sits under it (``gutter`` set): one instant, one x, across the window."""
        if self.gutter is None or not self._items:
            return
        left, right = self.gutter
        self.ci.setContentsMargins(0, 4, right, 0)
        self.ci.layout.activate()  # place the charts just laid out before measuring them
        for items in self._items.values():
            for key in ("share", "bw"):
                plot = items[key]
                vb = plot.getViewBox()
                x = self.mapFromScene(vb.mapToScene(vb.boundingRect().topLeft())).x()
                axis = plot.getAxis("left")
                axis.setWidth(max(int(axis.width() + left - x), 30))
                plot.layout.activate()  # the plot's own layout places its view box at once

    # -- building ---------------------------------------------------------------------------------
    def rebuild(self, wait: bool = False) -> None:
        """Compute the coverages of the state's trace (on a worker thread unless ``wait``:
        seconds at 10M slices) and lay out one pair of charts per device."""
        self._dirty = False
        st = self.state
        if st.trace is None:
            self._lay_out(None)
            return
        if wait:
            self._lay_out(Utilisation(st.trace, self._labels, origin=st.origin))
            return
        self.clear()
        self._items = {}
        self.addLabel("Computing utilisation…", row=0, col=0, color=self.theme.c("dim"))
        trace, labels, origin = st.trace, self._labels, st.origin

        def build() -> None:
            try:
                result: object = Utilisation(trace, labels, origin=origin)
            except Exception as e:  # an analysis bug must not take the window down
                result = f"utilisation failed: {type(e).__name__}: {e}"
            with contextlib.suppress(RuntimeError):  # the panel went while this ran
                self._built.emit(trace, result)

        threading.Thread(target=build, name="utilisation", daemon=True).start()

    def _on_built(self, trace: object, result: object) -> None:
        if trace is not self.state.trace:
            return  # a newer trace was opened meanwhile
        if isinstance(result, str):
            self.clear()
            self.addLabel(result, row=0, col=0, color=self.theme.c("dim"))
            return
        self._lay_out(result)

    def _lay_out(self, util: Utilisation | None) -> None:
        self.clear()
        self._items = {}
        self.util = util
        if util is None:
            return
        pal = self.theme.slice_colours
        colours = {c: pal[CLASS_COLOURS[c]] for c in STACK[:4]}
        colours["transfer"] = pal[TRANSFER_COLOUR]
        colours["idle"] = self.theme.c("grid")
        self._lut = np.array([colours[c].rgba() for c in STACK], np.uint32)
        for row, dev in enumerate(util.devices):
            rates = self.util.devices[dev].rates
            absolute = any(not np.isfinite(r.peak) for r in rates if r.lod is None)
            share = self._plot(row * 2, 0, "share of time", "%")
            chips = " ".join(f"<span style='color:{colours[c].name()}'>■</span> {c}" for c in STACK)
            share.setTitle(f"device {dev}  {chips}", size="8pt")
            share.setYRange(0, 100, padding=0)
            items: dict[str, Any] = {"share": share}
            image = PixelImage()
            share.addItem(image)
            items["stack"] = image
            bw = self._plot(row * 2 + 1, 0, "" if absolute else "% of peak", "B/s" if absolute else "%", absolute)
            names = " ".join(f"<span style='color:{pal[BANDWIDTH_COLOURS.get(r.label, 7)].name()}'>━</span> "
                             f"{r.label}" for r in rates)
            bw.setTitle(f"{'bandwidth' if absolute else 'bandwidth, % of peak'} (min–max per pixel)  {names}",
                        size="8pt")
            lines = []
            for r in rates:
                col = QColor(pal[BANDWIDTH_COLOURS.get(r.label, 7)])
                band = QColor(col)
                band.setAlpha(130)
                # min–max per pixel as one vertical segment per pixel column, the max as a line on top
                bars = pg.PlotCurveItem([], [], pen=pg.mkPen(band, width=1), connect="pairs")
                top = pg.PlotCurveItem([], [], pen=pg.mkPen(col, width=1))
                bw.addItem(bars)
                bw.addItem(top)
                lines.append((bars, top))
            items["bw"], items["lines"] = bw, lines
            self._items[dev] = items
        if not self.util.devices:
            self.addLabel("No device ops in this trace", row=0, col=0)
        self.align()
        self.redraw()

    def _plot(self, row: int, col: int, label: str, unit: str, absolute: bool = False) -> pg.PlotItem:
        axes = {"bottom": DurationAxis("bottom")}
        if absolute:
            axes["left"] = BandwidthAxis("left")
        p = self.addPlot(row=row, col=col, axisItems=axes)
        p.setMouseEnabled(False, False)
        p.hideButtons()
        p.setMenuEnabled(False)
        p.getAxis("left").setWidth(64)
        p.setLabel("left", label, units=None if absolute or unit == "%" else unit)
        for name in ("left", "bottom"):
            ax = p.getAxis(name)
            ax.setPen(self.theme.c("dim"))
            ax.setTextPen(self.theme.c("text"))
        return p

    # -- drawing ----------------------------------------------------------------------------------
    def width_px(self) -> int:
        """Pixels across one chart's plotting area (one bucket each)."""
        for items in self._items.values():
            w = int(items["share"].getViewBox().width())
            if w > 1:
                return w
        return max(self.width() - 80, 16)

    def redraw(self) -> None:
        """Recompute the frames for the timeline's window and update every chart."""
        if self.util is None or not self._items:
            return
        sc = self.state.scale
        width = self.width_px()
        span = max(sc.r1 - sc.r0, 1e-9)
        self.frames = self.util.frames(sc.r0, span / width, width)
        for dev, items in self._items.items():
            fr = self.frames[dev]
            x = (fr.edges[:-1] + fr.edges[1:]) / 2
            vb = items["share"].getViewBox()
            height = max(int(vb.height()), 8)
            image = items["stack"]
            image.set_pixels(self._lut[stack_pixels(fr.shares, height)],
                             QRectF(fr.edges[0], 100.0, fr.edges[-1] - fr.edges[0], -100.0))
            peak = 0.0
            for (bars, top), s in zip(items["lines"], fr.bandwidth, strict=True):
                ok = np.isfinite(s.hi)
                xs = x[ok]
                bars.setData(np.repeat(xs, 2), np.column_stack((np.nan_to_num(s.lo[ok]), s.hi[ok])).ravel())
                top.setData(xs, s.hi[ok])
                if ok.any():
                    peak = max(peak, float(np.nanmax(s.hi[ok])))
            bw_unit_pct = all(s.unit == "%" for s in fr.bandwidth)
            items["bw"].setYRange(0, max(peak, 100.0) if bw_unit_pct else max(peak, 1.0), padding=0.02)
            for key in ("share", "bw"):
                items[key].setXRange(sc.r0, sc.r1, padding=0)
                items[key].getAxis("bottom").offset = self.state.time_origin

    def set_theme(self, theme: Theme) -> None:
        """Redraw in another theme."""
        self.theme = theme
        self.setBackground(theme.c("bg"))
        if self.util is not None:
            self._lay_out(self.util)
