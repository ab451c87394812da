"""The timeline widget: paints through ``TimelinePainter`` and turns keys, wheel and mouse into
changes of the shared ``ViewState`` (zoom, pan, select, range select, marks)."""

from __future__ import annotations

from accelview.app.safe_paint import painting
from accelview.model.text.clip import clip
from accelview.model.text.values import format_duration
from accelview.model.view.lanes import HEADER, SUMMARY
from accelview.model.view.navigate import chain_step
from accelview.model.view.timescale import held_zoom_factor
from PySide6.QtCore import QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent, QPaintEvent, QResizeEvent, QWheelEvent
from PySide6.QtWidgets import QScrollBar, QSizePolicy, QToolTip, QWidget

from .overlays import TIME_H
from .paint import GUTTER_W, RULER_H, TimelinePainter
from .state import ViewState
from .theme import Theme

ZOOM_STEP = 1.3
PAN_STEP = 0.15
DRAG_SLOP = 4


class TimelineWidget(QWidget):
    """The lanes of slices under a time ruler. ``hovered`` carries the time under the cursor
    (NaN when it leaves)."""

    hovered = Signal(float)
    notice = Signal(str)  # a short message for the status bar (a chain step, the chain's end)

    def __init__(self, state: ViewState, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.painter = TimelinePainter(state, theme)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(400, 200)
        self.vbar = QScrollBar(Qt.Orientation.Vertical)
        self.vbar.valueChanged.connect(self.update)
        self._press: QPointF | None = None
        self._press_scale = None
        self._mode = ""  # "", "pan", "range"
        self._hover_x: float | None = None
        # While zooming, frames resample the last zoom's coverage; this repaints exactly after.
        self._refine = QTimer(self)
        self._refine.setSingleShot(True)
        self._refine.setInterval(60)
        self._refine.timeout.connect(self._paint_exact)
        self._notice_timer = QTimer(self)
        self._notice_timer.setSingleShot(True)
        self._notice_timer.timeout.connect(self._clear_notice)
        self._repeats, self._held = 0, 0  # auto-repeats of the held zoom key
        for sig in (state.scale_changed, state.selection_changed, state.range_changed, state.search_changed,
                    state.trace_changed):
            sig.connect(self.update)
        state.layout_changed.connect(self._layout_changed)
        state.trace_changed.connect(self._layout_changed)

    # -- geometry ---------------------------------------------------------------------------------
    def set_theme(self, theme: Theme) -> None:
        """Repaint in another theme."""
        self.painter.set_theme(theme)
        self.update()

    def _layout_changed(self) -> None:
        h = self.state.layout.height if self.state.layout else 0
        self.vbar.setRange(0, max(h - (self.height() - RULER_H) + 20, 0))
        self.vbar.setPageStep(max(self.height() - RULER_H, 1))
        self.update()

    def resizeEvent(self, event: QResizeEvent) -> None:
        self.state.set_width(self.painter.content_width(self.width()))
        self.state.set_fit_height(max(self.height() - RULER_H, 0))
        self._layout_changed()
        super().resizeEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:
        with painting(self, "timeline") as p:
            self.painter.paint(p, self.width(), self.height(), self.vbar.value(), self._hover_x)
        self.painter.exact = True
        if self.painter.stale:
            self._refine.start()

    def _paint_exact(self) -> None:
        self.painter.exact = True
        self.update()

    def _zoom(self, factor: float, at_x: float | None) -> None:
        """Zoom; the frames drawn while zooming go on resampling until it pauses."""
        self.painter.exact = False
        self.state.set_scale(self.state.scale.zoom(factor, at_x))

    def _x(self, pos: QPointF) -> float:
        return pos.x() - GUTTER_W

    def slice_at(self, pos: QPointF) -> int:
        """The slice under a widget position, or -1."""
        st = self.state
        if st.layout is None or st.lod is None or pos.x() < GUTTER_W or pos.y() < RULER_H:
            return -1
        ln = st.layout.lane_at(pos.y() - RULER_H + self.vbar.value())
        if ln is None or (ln.depth < 0 and ln.track not in st.layout.compact_names):
            return -1
        t = st.scale.t_of(self._x(pos))
        if ln.depth < 0:  # a device's compact row: the slice of its units there
            for unit in st.layout.summary.get(ln.track, []):
                sid = st.lod.slice_at(unit, 0, t, tol_ns=2 * st.scale.ns_per_px)
                if sid >= 0:
                    return sid
            return -1
        return st.lod.slice_at(ln.track, ln.depth, t, tol_ns=2 * st.scale.ns_per_px)

    # -- keys -------------------------------------------------------------------------------------
    def keyPressEvent(self, event: QKeyEvent) -> None:
        st = self.state
        k = event.key()
        at = self._hover_x - GUTTER_W if self._hover_x is not None else None
        if k in (Qt.Key.Key_W, Qt.Key.Key_S):
            # Held keys auto-repeat: each repeat zooms further than the last (Perfetto's feel).
            self._repeats = self._repeats + 1 if event.isAutoRepeat() and k == self._held else 0
            self._held = k
            f = held_zoom_factor(ZOOM_STEP, self._repeats)
            self._zoom(f if k == Qt.Key.Key_W else 1 / f, at)
        elif k == Qt.Key.Key_A:
            st.set_scale(st.scale.pan_fraction(-PAN_STEP))
        elif k == Qt.Key.Key_D:
            st.set_scale(st.scale.pan_fraction(PAN_STEP))
        elif k == Qt.Key.Key_F:
            st.fit_selection()
        elif k == Qt.Key.Key_O and not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            shift = event.modifiers() & Qt.KeyboardModifier.ShiftModifier
            st.set_time_origin(0.0 if shift else None)  # Shift+O: back to the trace start
            self.show_notice("ruler counts from the trace start" if shift
                             else "ruler counts from here (Shift+O resets)")
        elif k == Qt.Key.Key_M and event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            st.clear_marks()
        elif k == Qt.Key.Key_M:
            st.add_mark()
        elif k in (Qt.Key.Key_BracketRight, Qt.Key.Key_BracketLeft) and st.selected >= 0:
            sid, text = chain_step(st.chain, st.selected, 1 if k == Qt.Key.Key_BracketRight else -1)
            if sid != st.selected:
                st.select(sid)  # a chain member's chain is the same chain
            self._reveal(sid)
            self.show_notice(text)
        elif k == Qt.Key.Key_Escape:
            st.set_range(None)
            st.select(-1)
        else:
            super().keyPressEvent(event)

    def _reveal(self, sid: int) -> None:
        """Scroll (and zoom when it would be unreadable) so the slice is in view, its lane too."""
        st = self.state
        st.frame(sid)
        sl = st.trace.slices
        ln = st.layout.lane_of(int(sl.track[sid]), int(sl.depth[sid])) if st.layout else None
        top, page = self.vbar.value(), self.height() - RULER_H
        if ln is not None and not (top <= ln.y and ln.y + ln.h <= top + page):
            self.vbar.setValue(int(ln.y + ln.h / 2 - page / 2))

    def show_notice(self, text: str, ms: int = 2500) -> None:
        """Show a short message over the lanes for a moment, and send it to the status bar."""
        self.painter.notice = text
        self.notice.emit(text)
        self._notice_timer.start(ms)
        self.update()

    def _clear_notice(self) -> None:
        self.painter.notice = ""
        self.update()

    # -- wheel and mouse --------------------------------------------------------------------------
    def wheelEvent(self, event: QWheelEvent) -> None:
        st = self.state
        d = event.angleDelta()
        mods = event.modifiers()
        if mods & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.AltModifier):
            self.vbar.setValue(self.vbar.value() - (d.y() or d.x()) // 2)
        elif abs(d.x()) > abs(d.y()):
            st.set_scale(st.scale.pan_px(-d.x() / 2))
        elif d.y():
            self._zoom(ZOOM_STEP ** (d.y() / 120), self._x(event.position()))
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._press = event.position()
            self._press_scale = self.state.scale
            self._mode = ""
            if event.position().x() < GUTTER_W:
                self._toggle_group(event.position())
                self._press = None
            elif TIME_H <= event.position().y() < RULER_H:
                self._mode = "overview"  # click or drag on the minimap moves the view there
                self._centre_on(event.position().x())

    def _centre_on(self, x: float) -> None:
        """Centre the view, keeping its span, on the time an overview-strip x stands for."""
        st = self.state
        t = self.painter.overview_time(x, self.width())
        half = st.scale.span / 2
        st.set_scale(st.scale.with_window(t - half, t + half))

    def _toggle_group(self, pos: QPointF) -> None:
        st = self.state
        if st.layout is None:
            return
        ln = st.layout.lane_at(pos.y() - RULER_H + self.vbar.value())
        if ln is not None and ln.depth in (HEADER, SUMMARY) and ln.track not in st.layout.compact_names:
            st.set_collapsed(ln.track, ln.track not in st.collapsed)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        self._hover_x = pos.x()
        st = self.state
        if self._press is not None and self._mode == "overview":
            self._centre_on(pos.x())
        elif self._press is not None and self._press_scale is not None:
            dx = pos.x() - self._press.x()
            if not self._mode and (abs(dx) > DRAG_SLOP or abs(pos.y() - self._press.y()) > DRAG_SLOP):
                self._mode = "range" if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else "pan"
            if self._mode == "pan":
                st.set_scale(self._press_scale.pan_px(-dx))
                self.vbar.setValue(self.vbar.value() - int(pos.y() - self._press.y()))
                self._press = QPointF(self._press.x(), pos.y())
            elif self._mode == "range":
                sc = self._press_scale
                st.set_range((sc.t_of(self._x(self._press)), st.scale.t_of(self._x(pos))))
        elif st.trace is not None:
            sid = self.slice_at(pos)
            self.painter.hover_sid = sid
            tip = self.painter.badge_at(pos) or self._lane_name_at(pos)
            if tip:
                QToolTip.showText(event.globalPosition().toPoint(), tip, self)
            elif sid >= 0:
                QToolTip.showText(event.globalPosition().toPoint(), self._tooltip(sid), self)
            else:
                QToolTip.hideText()
        self.hovered.emit(st.scale.t_of(self._x(pos)) if pos.x() >= GUTTER_W else float("nan"))
        self.update()

    def _lane_name_at(self, pos: QPointF) -> str:
        """The full name of the lane under ``pos`` in the name gutter (names there are elided)."""
        st = self.state
        if pos.x() >= GUTTER_W or pos.y() < RULER_H:
            return ""
        ln = st.layout.lane_at(pos.y() - RULER_H + self.vbar.value())
        if ln is None:
            return ""
        for r, _, tip in self.painter.clock_marks([ln], self.vbar.value()):
            if r.contains(pos):
                return tip
        return clip(st.layout.compact_names.get(ln.track) or st.trace.track_name(ln.track))

    def _tooltip(self, sid: int) -> str:
        st = self.state
        sl = st.trace.slices
        name = clip(st.trace.strings[sl.name[sid]])
        start = format_duration(float(int(sl.start_ns[sid]) - st.origin))
        return f"<b>{name}</b><br>{format_duration(float(sl.dur_ns[sid]))} · at {start}"

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton and self._press is not None:
            if not self._mode and event.position().y() >= RULER_H:
                self.state.select(self.slice_at(event.position()))
            self._press = None
            self._mode = ""

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        sid = self.slice_at(event.position())
        if sid >= 0:
            self.state.select(sid)
            self.state.fit_selection()

    def leaveEvent(self, event) -> None:
        self.painter.hover_sid = -1
        self._hover_x = None
        self.hovered.emit(float("nan"))
        self.update()
        super().leaveEvent(event)
