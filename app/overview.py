"""The overview strip (minimap) under the ruler: how busy the whole run is at each pixel, with
the current view's extent drawn on it, as in Perfetto. The busy profile comes from the model
(``TraceLOD.overview``); this module draws it and maps strip pixels back to times."""

from __future__ import annotations

import numpy as np
from accelview.model.schema import TrackKind
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPen

from .overlays import GUTTER_W, OVERVIEW_H, TIME_H
from .state import ViewState
from .theme import Theme

# The track kind whose gutter swatch colours each overview row.
ROW_KIND = {"host": TrackKind.HOST_THREAD, "transfers": TrackKind.PCIE, "device": TrackKind.EXEC_UNIT}


class OverviewPainter:
    """Mixed into the timeline painter: ``_overview`` draws the strip between the ruler and
    the lanes; ``overview_time`` says which time a strip x stands for."""

    state: ViewState
    theme: Theme
    _ov_key: tuple | None = None
    _ov_img: QImage | None = None
    colours: list[QColor]

    def overview_time(self, x: float, w: int) -> float:
        """The time (ns from ``origin``) a widget x on the strip of a ``w``-wide widget stands for."""
        sc = self.state.scale
        cw = max(w - GUTTER_W, 1)
        return sc.lo + (min(max(x - GUTTER_W, 0.0), cw) / cw) * (sc.hi - sc.lo)

    def _overview_image(self, cw: int) -> QImage:
        """The busy profile as a heat strip, one row per side of the run (host, transfers,
        device) in its lanes' swatch colour, faint to full with the busy fraction; cached per
        strip size and theme, so a frame only blits it."""
        st, sc, th = self.state, self.state.scale, self.theme
        key = (id(st.lod), sc.lo, sc.hi, cw, th.name)
        if key != self._ov_key or self._ov_img is None:
            names, busy = st.lod.overview(sc.lo, sc.hi, cw)
            h = OVERVIEW_H - 4
            bg = np.array(QColor(th.ruler).getRgb()[:3], np.float64)
            px = np.repeat(np.repeat(bg[None, None], h, 0), cw, 1)
            rows = max(len(names), 1)
            for r, name in enumerate(names):
                kind = ROW_KIND[name]
                swatch = self.colours[(int(kind) * 5) % len(self.colours)]
                col = np.array(swatch.getRgb()[:3], np.float64)
                f = busy[r]
                k = np.where(f > 0, 0.3 + 0.7 * f, 0.0)[:, None]  # any work shows, however little
                a, b = r * h // rows, (r + 1) * h // rows
                px[a:b] = (bg + (col - bg) * k)[None]
            px = px.astype(np.uint32)
            argb = np.ascontiguousarray((0xFF << 24) | (px[..., 0] << 16) | (px[..., 1] << 8) | px[..., 2])
            img = QImage(argb.data, cw, h, cw * 4, QImage.Format.Format_RGB32).copy()
            self._ov_key, self._ov_img = key, img
        return self._ov_img

    def _overview(self, p: QPainter, w: int) -> None:
        """The strip: the whole run's busy profile, the view's extent outlined, the rest dimmed."""
        sc, th = self.state.scale, self.theme
        cw = max(w - GUTTER_W, 1)
        p.fillRect(QRectF(0, TIME_H, w, OVERVIEW_H), th.c("ruler"))
        p.drawImage(GUTTER_W, TIME_H + 2, self._overview_image(cw))
        span = max(sc.hi - sc.lo, 1e-9)
        a = GUTTER_W + (sc.r0 - sc.lo) / span * cw
        b = GUTTER_W + (sc.r1 - sc.lo) / span * cw
        a, b = max(a, GUTTER_W), min(b, w)
        b = max(b, a + 2)  # a deep zoom still shows where it is
        dim = th.c("bg", 150)
        p.fillRect(QRectF(GUTTER_W, TIME_H, a - GUTTER_W, OVERVIEW_H), dim)
        p.fillRect(QRectF(b, TIME_H, w - b, OVERVIEW_H), dim)
        p.setPen(QPen(th.c("text"), 1))
        p.drawRect(QRectF(a, TIME_H + 0.5, b - a, OVERVIEW_H - 1.5))
        p.setPen(QPen(th.c("grid"), 1))
        p.drawLine(0, TIME_H + OVERVIEW_H - 1, w, TIME_H + OVERVIEW_H - 1)
        p.setFont(self.small)  # type: ignore[attr-defined]
        p.setPen(th.c("dim"))
        p.drawText(QRectF(8, TIME_H, GUTTER_W - 12, OVERVIEW_H), Qt.AlignmentFlag.AlignVCenter,
                   "overview · drag to move")
