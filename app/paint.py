"""Paints the timeline (ruler, lane names, slices, selection, chain flows, search hits, ranges)
onto any QPainter: the widget's and the offscreen renderer's. What to draw comes from the
model's level-of-detail index; this module only turns it into pixels.

Per lane a frame draws one 1-pixel-high image row of per-pixel coverage (every slice,
however thin, shows) and then the slices wide enough to be boxes, with their names.
"""

from __future__ import annotations

import numpy as np
from accelview.model.schema import TrackKind
from accelview.model.text.clip import clip
from accelview.model.text.values import format_percent
from accelview.model.view.lanes import HEADER, INSTANTS, ROW_H, SUMMARY, Lane
from accelview.model.view.timescale import ruler
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QImage,
    QPainter,
    QPen,
    QStaticText,
    QTransform,
)

from .overlays import GUTTER_W, RULER_H, OverlayPainter
from .overview import OverviewPainter
from .safe_paint import painting
from .state import ViewState
from .theme import Theme

MIN_BOX_PX = 3.0  # slices at least this wide are drawn as boxes
MIN_LABEL_PX = 36.0
LEVELS = 16  # shades of partial pixel coverage


class TimelinePainter(OverlayPainter, OverviewPainter):
    """Draws one frame of the timeline for a ``ViewState`` in a ``Theme``."""

    def __init__(self, state: ViewState, theme: Theme) -> None:
        self.state = state
        self.set_theme(theme)
        self.font = QFont("DejaVu Sans", 8)
        self.bold = QFont("DejaVu Sans", 8, QFont.Weight.Bold)
        self.small = QFont("DejaVu Sans", 7)
        self.fm = QFontMetricsF(self.font)
        self.fm_bold = QFontMetricsF(self.bold)  # group headers: their names elide too
        self._elide: dict[tuple[int, int], QStaticText | None] = {}
        self.hover_sid = -1  # the slice under the mouse, outlined
        self.exact = True  # False while zooming: reuse coverage of the last zoom, resampled
        self.stale = False  # the last frame drew resampled coverage
        self.notice = ""  # a short message drawn over the lanes (the widget clears it)

    def set_theme(self, theme: Theme) -> None:
        """Switch colours."""
        self.theme = theme
        self._bg_key = None
        self.colours = theme.slice_colours
        pal, bg = theme.palette_argb(), theme.bg_rgb()
        # lut[(colour + 1) * LEVELS + level]: palette colours from faint (level 1) to full.
        # Codes 0 and 1 are the empty lane: transparent, so the stripes and grid lines drawn
        # before the rows show between slices and never over them. The last entry is the
        # separator between boxes.
        k = (0.4 + 0.6 * np.arange(LEVELS) / (LEVELS - 1))[None, :, None]
        mix = (bg + (pal[:, None, :] - bg) * k).reshape(-1, 3)
        empty = np.repeat(bg[None], LEVELS, 0)
        alt = QColor(theme.lane_alt)
        empty[1] = (alt.red(), alt.green(), alt.blue())
        mix = np.concatenate([empty, mix, (bg * 0.55)[None]]).astype(np.uint32)
        self.lut = ((0xFF << 24) | (mix[:, 0] << 16) | (mix[:, 1] << 8) | mix[:, 2]).astype(np.uint32)
        self.lut[:LEVELS] = 0
        self.sep_code = len(self.lut) - 1
        # Label colour per palette entry: dark text on light slices, light text on dark ones.
        lum = (0.299 * pal[:, 0] + 0.587 * pal[:, 1] + 0.114 * pal[:, 2]) / 255
        self.light_text = (lum < 0.48).tolist()
        self._bg_key: tuple | None = None

    # -- geometry -------------------------------------------------------------------------------
    @staticmethod
    def content_width(widget_width: int) -> int:
        """Pixels of time axis for a widget of this width."""
        return max(widget_width - GUTTER_W, 1)

    def lane_y(self, lane: Lane, scroll_y: float) -> float:
        """Widget y of a lane's top."""
        return RULER_H + lane.y - scroll_y

    # -- frame ----------------------------------------------------------------------------------
    def paint(self, p: QPainter, w: int, h: int, scroll_y: float = 0.0, hover_x: float | None = None) -> None:
        """Draw a whole frame into a w×h area."""
        th = self.theme
        st = self.state
        if st.trace is None or st.layout is None or st.lod is None:
            p.fillRect(QRectF(0, 0, w, h), th.c("bg"))
            p.setPen(th.c("dim"))
            p.setFont(QFont("DejaVu Sans", 11))
            p.drawText(QRectF(0, 0, w, h), Qt.AlignmentFlag.AlignCenter,
                       "Open a capture: File → Open, or drop a .h5 / trace .json file here")
            return
        lanes = st.layout.visible(scroll_y, scroll_y + h - RULER_H)
        self._rule = ruler(st.scale, st.time_origin)
        self._ticks = self._rule.ticks
        p.fillRect(QRectF(GUTTER_W, RULER_H, w - GUTTER_W, h - RULER_H), th.c("bg"))
        p.drawImage(0, RULER_H, self._gutter_image(lanes, h, scroll_y))
        p.save()
        p.setClipRect(QRectF(GUTTER_W, RULER_H, w - GUTTER_W, h - RULER_H))
        for ln in lanes:
            if ln.depth == HEADER:
                p.fillRect(QRectF(GUTTER_W, self.lane_y(ln, scroll_y), w - GUTTER_W, ln.h), th.c("header"))
            elif ln.track % 2:
                p.fillRect(QRectF(GUTTER_W, self.lane_y(ln, scroll_y) + 1, w - GUTTER_W, ln.h - 2), th.c("lane_alt"))
        self._grid(p, h)  # behind the slices and their labels, as in Perfetto
        self._slices(p, lanes, scroll_y)
        self._instants(p, lanes, scroll_y)
        self._marks_and_range(p, h)
        self._search_hits(p, lanes, scroll_y)
        self._hover(p, scroll_y)
        self._collective(p, scroll_y, h)
        self._chain(p, scroll_y)
        if hover_x is not None and hover_x >= GUTTER_W:
            p.setPen(QPen(th.c("dim", 160), 1))
            p.drawLine(QPointF(hover_x, RULER_H), QPointF(hover_x, h))
        self._notice(p, w)
        p.restore()
        self._clock_error(p, lanes, scroll_y)
        self._ruler(p, w)
        self._overview(p, w)

    def _gutter_image(self, lanes: list[Lane], h: int, scroll_y: float) -> QImage:
        """The lane names gutter: it changes with the layout, scrolling and the range
        selection, not with zoom and pan, so it is drawn once into a cached image."""
        st = self.state
        key = (id(st.layout), id(st.trace), scroll_y, h, self.theme.name, st.range, frozenset(st.collapsed))
        if key != self._bg_key:
            img = QImage(GUTTER_W, max(h - RULER_H, 1), QImage.Format.Format_RGB32)
            img.fill(self.theme.c("bg"))
            with painting(img, "lane names", reraise=True) as p:
                p.translate(0, -RULER_H)
                th = self.theme
                for ln in lanes:
                    y = self.lane_y(ln, scroll_y)
                    if ln.depth == HEADER:
                        p.fillRect(QRectF(0, y, GUTTER_W, ln.h), th.c("header"))
                    elif ln.track % 2:
                        p.fillRect(QRectF(0, y, GUTTER_W, ln.h), th.c("lane_alt"))
                p.fillRect(QRectF(0, RULER_H, GUTTER_W, 100000), th.c("gutter", 120))
                self._gutter(p, lanes, scroll_y)
            self._bg_img, self._bg_key = img, key
        return self._bg_img

    def _slices(self, p: QPainter, lanes: list[Lane], scroll_y: float) -> None:
        """Every lane's coverage as one image row (slices as wide as boxes included, with a
        dark separator at each box's start), then the names of boxes wide enough to hold one.
        Per-slice Qt calls are made only for labels."""
        st = self.state
        sc, sl, lod = st.scale, st.trace.slices, st.lod
        rows = [ln for ln in lanes if ln.depth >= 0 or ln.depth == SUMMARY]
        if not rows:
            return
        width = sc.width + 1
        x0, frac, col = self._coverage(rows)
        self.stale = lod.stale
        sep = np.zeros((len(rows), width), bool)
        min_dur = MIN_BOX_PX * sc.ns_per_px
        real = np.array([i for i, ln in enumerate(rows) if ln.depth >= 0], np.int64)
        which, ids = lod.wide_rows([(rows[i].track, rows[i].depth) for i in real.tolist()], sc.r0, sc.r1, min_dur)
        which = real[which] if len(real) else which
        xs = ((sl.start_ns[ids] - st.origin) - sc.r0) / sc.ns_per_px  # exact int offsets, then float
        ws = sl.dur_ns[ids] / sc.ns_per_px
        edge = ws > 6
        ix = np.floor(xs[edge] - x0).astype(np.int64)
        inside = (ix >= 0) & (ix < width)
        sep[which[edge][inside], ix[inside]] = True
        big = ws >= MIN_LABEL_PX
        # One gather through a (colour, busy level) lookup table turns the lane rows into pixels.
        level = np.ceil(np.clip(frac, 0, 1) * (LEVELS - 1)).astype(np.int32)
        stripe = np.array([ln.track % 2 for ln in rows], np.int32)[:, None]
        code = np.where(level > 0, (col.astype(np.int32) + 1) * LEVELS + level, stripe)
        code[sep & (level > 0)] = self.sep_code
        img = np.ascontiguousarray(self.lut[code])
        qimg = QImage(img.data, width, len(rows), width * 4, QImage.Format.Format_ARGB32_Premultiplied)
        for i, ln in enumerate(rows):
            y = self.lane_y(ln, scroll_y)
            p.drawImage(QRectF(GUTTER_W + x0, y + 1, width, ln.h - 2), qimg, QRectF(0, i, width, 1))
        p.setFont(self.font)
        p.setPen(self.theme.slice_text())
        dark_pen, light_pen = self.theme.slice_text(), QColor("#f4f6f8")
        light_now = False
        cols = lod.colours(sl.name[ids[big]]).tolist()
        for i, sid, x, w, c in zip(which[big].tolist(), ids[big].tolist(), xs[big].tolist(), ws[big].tolist(), cols,
                                   strict=True):
            a, b = max(x, 0.0), min(x + w, float(sc.width))
            if b - a < MIN_LABEL_PX:
                continue
            text = self._elided(int(sl.name[sid]), b - a - 6)
            if text is not None:
                if self.light_text[c] != light_now:
                    light_now = self.light_text[c]
                    p.setPen(light_pen if light_now else dark_pen)
                y = self.lane_y(rows[i], scroll_y) + (rows[i].h - self.fm.height()) / 2
                p.drawStaticText(QPointF(GUTTER_W + a + 4, y), text)

    def _coverage(self, rows: list[Lane]) -> tuple[int, np.ndarray, np.ndarray]:
        """(x0, busy fraction, colour) per row; a collapsed group's summary row is the busiest of
        its descendants' top rows at each pixel, so a folded process still shows when it works."""
        st = self.state
        sc, lod, summary = st.scale, st.lod, st.layout.summary
        keys: list[tuple[int, int]] = []
        spans = []
        for ln in rows:
            ks = [(t, 0) for t in summary.get(ln.track, [])] if ln.depth == SUMMARY else [(ln.track, ln.depth)]
            spans.append((len(keys), len(keys) + len(ks)))
            keys += ks
        x0, frac, _, col, _ = lod.coverage_rows(keys, sc.r0, sc.ns_per_px, sc.width, exact=self.exact)
        if len(keys) == len(rows):
            return x0, frac, col
        out_f = np.zeros((len(rows), frac.shape[1]), frac.dtype)
        out_c = np.zeros((len(rows), col.shape[1]), col.dtype)
        full = np.array([i for i, (a, b) in enumerate(spans) if b > a], np.int64)
        if len(full):  # per row, at each pixel: the busiest of its keys (the first on a tie), its colour
            starts = np.array([spans[i][0] for i in full.tolist()], np.int64)
            lens = np.array([spans[i][1] - spans[i][0] for i in full.tolist()], np.int64)
            best_f, best_c = frac[starts], col[starts]
            for j in range(1, int(lens.max())):  # rows have few keys: one pass per key position
                sel = np.flatnonzero(lens > j)
                cand_f, cand_c = frac[starts[sel] + j], col[starts[sel] + j]
                every = len(sel) == len(starts)  # every row has a j-th key (a folded device's two): in place
                f, c = (best_f, best_c) if every else (best_f[sel], best_c[sel])
                better = cand_f > f
                np.copyto(f, cand_f, where=better)
                np.copyto(c, cand_c, where=better)
                if not every:
                    best_f[sel], best_c[sel] = f, c
            out_f[full], out_c[full] = best_f, best_c
        return x0, out_f, out_c

    def _instants(self, p: QPainter, lanes: list[Lane], scroll_y: float) -> None:
        """Instant events as small markers in their track's own marker row (above its slices, so
        they hide no label), or at the top of a track that has no slices."""
        st = self.state
        if not len(st.trace.instants):
            return
        sc = st.scale
        pen = QPen(self.theme.c("accent"), 1.5)
        p.setPen(pen)
        for ln in lanes:
            if ln.depth != INSTANTS and (ln.depth != 0 or st.layout.lane_of(ln.track, INSTANTS)):
                continue
            ts = st.lod.instant_times(ln.track, sc.r0, sc.r1, sc.ns_per_px)
            if not len(ts):
                continue
            y = self.lane_y(ln, scroll_y)
            xs = (((ts - st.origin) - sc.r0) / sc.ns_per_px + GUTTER_W).tolist()
            p.drawLines([QLineF(x - 3, y + 1, x, y + 6) for x in xs] + [QLineF(x + 3, y + 1, x, y + 6) for x in xs])

    def _elided(self, name_id: int, width: float) -> QStaticText | None:
        """A slice name elided to ``width`` (in 6 px steps) as laid-out static text, cached;
        None when not even one letter fits."""
        key = (name_id, min(int(width) // 6, 80))
        if key in self._elide:
            return self._elide[key]
        name = clip(self.state.trace.strings[name_id])
        text = self.fm.elidedText(name, Qt.TextElideMode.ElideRight, key[1] * 6)
        out = None
        if text and text != "…":
            out = QStaticText(text)
            out.setTextFormat(Qt.TextFormat.PlainText)
            out.prepare(QTransform(), self.font)
        if len(self._elide) > 20000:
            self._elide.clear()
        self._elide[key] = out
        return out

    def slice_rect(self, sid: int, scroll_y: float) -> QRectF | None:
        """The widget rect of a slice, None when its lane is not shown."""
        st = self.state
        sl = st.trace.slices
        ln = st.layout.lane_for(int(sl.track[sid]), int(sl.depth[sid]))
        if ln is None:
            return None
        x = st.scale.x_of(float(int(sl.start_ns[sid]) - st.origin))
        w = max(float(sl.dur_ns[sid]) / st.scale.ns_per_px, 1.0)
        return QRectF(GUTTER_W + x, self.lane_y(ln, scroll_y) + 1, w, ln.h - 2)

    def _gutter(self, p: QPainter, lanes: list[Lane], scroll_y: float) -> None:
        st, th = self.state, self.theme
        tr = st.trace.tracks
        rng = st.range
        for ln in lanes:
            y = self.lane_y(ln, scroll_y)
            indent = 8 + 12 * ln.level
            if ln.depth == SUMMARY and ln.track in st.layout.compact_names:
                every = -(-12 // ln.h)  # rows too thin for a name: every few rows is named
                if every > 1 and st.layout.compact.index(ln.track) % every:
                    continue
                p.setFont(self.small if ln.h < ROW_H else self.font)
                p.setPen(th.c("text"))
                p.drawText(QRectF(indent, y + ln.h / 2 - 7, GUTTER_W - indent - 4, 14), Qt.AlignmentFlag.AlignVCenter,
                           self.fm.elidedText(clip(st.layout.compact_names[ln.track]), Qt.TextElideMode.ElideRight,
                                              GUTTER_W - indent - 6))
            elif ln.depth == SUMMARY:
                p.setFont(self.font)
                p.setPen(th.c("dim"))
                p.drawText(QRectF(indent + 12, y, GUTTER_W - indent - 16, ln.h), Qt.AlignmentFlag.AlignVCenter,
                           f"busy · {len(st.layout.summary.get(ln.track, []))} lanes")
            elif ln.depth == HEADER:
                p.setFont(self.bold)
                p.setPen(th.c("text"))
                mark = "▸ " if ln.track in st.collapsed else "▾ "
                p.drawText(QRectF(indent, y, GUTTER_W - indent - 4, ln.h), Qt.AlignmentFlag.AlignVCenter,
                           self.fm_bold.elidedText(mark + clip(st.trace.track_name(ln.track)),
                                                   Qt.TextElideMode.ElideRight, GUTTER_W - indent - 6))
            elif ln.depth == 0:
                p.setFont(self.font)
                p.setPen(th.c("text"))
                name = clip(st.trace.track_name(ln.track))
                right = 48 if rng else 4
                p.drawText(QRectF(indent + 12, y, GUTTER_W - indent - 12 - right, ln.h), Qt.AlignmentFlag.AlignVCenter,
                           self.fm.elidedText(name, Qt.TextElideMode.ElideRight, GUTTER_W - indent - 14 - right))
                kind = TrackKind(int(tr.kind[ln.track]))
                swatch = self.colours[(int(kind) * 5) % len(self.colours)]
                p.fillRect(QRectF(indent + 2, y + ln.h / 2 - 3, 6, 6), swatch)
                if rng:
                    frac = st.lod.busy_fraction(ln.track, *rng)
                    p.setPen(th.c("accent") if frac > 0 else th.c("dim"))
                    p.drawText(QRectF(GUTTER_W - 48, y, 44, ln.h),
                               Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, format_percent(frac, 0))
        p.setPen(QPen(th.c("grid"), 1))
        p.drawLine(QPointF(GUTTER_W - 0.5, RULER_H), QPointF(GUTTER_W - 0.5, RULER_H + 100000))
