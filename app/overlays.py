"""Overlays of the timeline drawn over the lanes: grid lines, the time ruler, ranges and
marks, search hits, and the selected slice's dependency chain with its flow arrows. A mixin
of ``TimelinePainter`` (it uses the painter's state, theme, fonts and ``slice_rect``)."""

from __future__ import annotations

import numpy as np
from accelview.model.text.clip import clip
from accelview.model.text.values import format_duration
from accelview.model.view.lanes import HEADER, SUMMARY, Lane
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QImage, QPainter, QPainterPath, QPen, QPolygonF

from .arrow_curve import arrow_curve, visible_part

GUTTER_W = 220  # lane names, left of the time axis
TIME_H = 30  # the time ruler
OVERVIEW_H = 24  # the overview strip (minimap), under the ruler
RULER_H = TIME_H + OVERVIEW_H  # everything above the lanes
ARROW_MARGIN = 16  # px beyond the view's sides to which an arrow's curve is still stroked (pen, head)
FAN = 6  # flows from one slice to this many or more on one lane are drawn as one arrow and a bracket


class OverlayPainter:
    """Grid, ruler, ranges, marks, search hits and the chain; mixed into TimelinePainter."""

    def _grid(self, p: QPainter, h: int) -> None:
        p.setPen(QPen(self.theme.c("grid", 110), 1))
        xs = [GUTTER_W + round(t.x) + 0.5 for t in self._ticks if t.label]
        p.drawLines([QLineF(x, RULER_H, x, h) for x in xs])

    def _marks_and_range(self, p: QPainter, h: int) -> None:
        st, th = self.state, self.theme
        for (a, b), col in [*((m, "mark") for m in st.marks), *(((st.range, "range_fill"),) if st.range else ())]:
            x0 = GUTTER_W + st.scale.x_of(a)
            x1 = GUTTER_W + st.scale.x_of(b)
            p.fillRect(QRectF(x0, RULER_H, max(x1 - x0, 1), h - RULER_H), th.c(col, 40))
            p.setPen(QPen(th.c(col), 1))
            p.drawLine(QPointF(x0, RULER_H), QPointF(x0, h))
            p.drawLine(QPointF(x1, RULER_H), QPointF(x1, h))

    def _search_hits(self, p: QPainter, lanes: list[Lane], scroll_y: float) -> None:
        """Outline each search hit in view; when there are thousands, mark the pixels that
        hold one with a strip under the lane instead (bounded by pixels, not hits)."""
        st = self.state
        if not len(st.hits):
            return
        sl, sc = st.trace.slices, st.scale
        hits, starts = st.hits_by_start()
        a0, a1 = st.origin + int(sc.r0), st.origin + int(sc.r1)
        a = int(np.searchsorted(starts, np.int64(a0 - int(sc.span)), "left"))
        b = int(np.searchsorted(starts, np.int64(a1), "right"))
        ids = hits[a:b]
        ids = ids[sl.start_ns[ids] + sl.dur_ns[ids] >= a0]
        if not len(ids):
            return
        p.setBrush(Qt.BrushStyle.NoBrush)
        if len(ids) <= 2000:
            p.setPen(QPen(self.theme.c("search"), 2))
            for sid in ids.tolist():
                r = self.slice_rect(sid, scroll_y)
                if r is not None:
                    p.drawRect(r.adjusted(-1, -1, 1, 1))
            return
        rows = [ln for ln in lanes if ln.depth >= 0]
        if not rows:
            return
        keys = np.array([ln.track * 65536 + ln.depth for ln in rows], np.int64)
        order = np.argsort(keys)
        hk = sl.track[ids].astype(np.int64) * 65536 + sl.depth[ids].astype(np.int64)
        pos = np.clip(np.searchsorted(keys[order], hk), 0, len(keys) - 1)
        ok = keys[order][pos] == hk
        row = order[pos[ok]]
        xs = np.floor(((sl.start_ns[ids[ok]] - st.origin) - sc.r0) / sc.ns_per_px).astype(np.int64)
        xs = np.clip(xs, 0, sc.width - 1)
        mask = np.zeros((len(rows), sc.width), bool)
        mask[row, xs] = True
        col = self.theme.c("search")
        argb = np.uint32(0xFF000000 | (col.red() << 16) | (col.green() << 8) | col.blue())
        img = np.ascontiguousarray(np.where(mask, argb, np.uint32(0)))
        qimg = QImage(img.data, sc.width, len(rows), sc.width * 4, QImage.Format.Format_ARGB32_Premultiplied)
        for i, ln in enumerate(rows):
            if mask[i].any():
                y = self.lane_y(ln, scroll_y) + ln.h - 4
                p.drawImage(QRectF(GUTTER_W, y, sc.width, 3), qimg, QRectF(0, i, sc.width, 1))

    def _hover(self, p: QPainter, scroll_y: float) -> None:
        sid = getattr(self, "hover_sid", -1)
        if sid < 0 or self.state.trace is None or sid >= len(self.state.trace.slices):
            return
        r = self.slice_rect(sid, scroll_y)
        if r is not None:
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.setPen(QPen(self.theme.c("select", 170), 1))
            p.drawRect(r.adjusted(-0.5, -0.5, 0.5, 0.5))

    def _chain(self, p: QPainter, scroll_y: float) -> None:
        """The selected slice's chain: members outlined thinly in the accent colour, flows as
        arrows (or one arrow and a ×N bracket per fan), and the selection itself filled and
        outlined in the selection colour so it stands out from the chain around it."""
        st = self.state
        self.badges: list[tuple[QRectF, str]] = []  # ×N brackets, for their tooltips
        if st.selected < 0:
            return
        th = self.theme
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.setPen(QPen(th.c("accent", 200), 1))
        members = (self.slice_rect(sid, scroll_y) for sid in st.chain.tolist() if sid != st.selected)
        p.drawRects([r.adjusted(-1, -1, 1, 1) for r in members if r is not None])
        fl, track = st.trace.flows, st.trace.slices.track
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        # Flows from one slice to many on one lane (a graph replay's submission and its nodes)
        # are drawn as one arrow to the first and a bracket over the others, not as a fan.
        fans: dict[tuple[int, int], list[int]] = {}
        for row in st.chain_flows.tolist():
            src, dst = int(fl.src[row]), int(fl.dst[row])
            fans.setdefault((src, int(track[dst])), []).append(dst)
        for (src, _), dsts in fans.items():
            a = self.slice_rect(src, scroll_y)
            rects = [r for r in (self.slice_rect(d, scroll_y) for d in dsts) if r is not None]
            if a is None or not rects:
                continue
            if len(dsts) < FAN:
                for b in rects:
                    self._arrow(p, a, b)
                continue
            first = min(rects, key=QRectF.left)
            self._arrow(p, a, first)
            right = max(r.right() for r in rects)
            y = first.bottom() + 2
            p.setPen(QPen(th.c("accent"), 1.6))
            p.drawLine(QLineF(first.left(), y, right, y))
            p.drawLine(QLineF(right, y, right, y - 4))
            label = f"×{len(dsts)}"
            box = QRectF(first.left(), y + 1, self.fm.horizontalAdvance(label) + 6, self.fm.height() + 1)
            p.fillRect(box, th.c("bg", 220))  # legible over the lane below
            p.setFont(self.font)
            p.drawText(box, Qt.AlignmentFlag.AlignCenter, label)
            self.badges.append((box, self._badge_tip(src, dsts)))
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        r = self.slice_rect(st.selected, scroll_y)
        if r is not None:
            p.fillRect(r, th.c("select", 70))
            p.setPen(QPen(th.c("select"), 2))
            p.drawRect(r.adjusted(-3, -3, 3, 3))

    def collective_boxes(self, scroll_y: float) -> list[tuple[QRectF, QRectF]]:
        """For the selected collective, per participant in view: its slice's rect and its skew's
        rect (from its arrival to the last arrival, on its lane; empty for the last to arrive)."""
        st = self.state
        marks = st.collective
        if marks is None:
            return []
        out = []
        last = st.scale.x_of(marks.last_arrival_ns - st.origin)
        for sid, arrival in zip(marks.slices.tolist(), marks.arrivals.tolist(), strict=True):
            r = self.slice_rect(sid, scroll_y)
            if r is not None:
                x = st.scale.x_of(arrival - st.origin)
                out.append((r, QRectF(GUTTER_W + x, r.top(), max(last - x, 0.0), r.height())))
        return out

    def collective_label_box(self, label: str, boxes: list[tuple[QRectF, QRectF]], x: float,
                             scroll_y: float, view_h: float = float("inf")) -> QRectF:
        """Where the collective's label goes: right of the last-arrival line, centred on the
        selected participant's row (else the top one in view, of the ``view_h`` px tall widget)
        and kept within the participants' rows, so it covers the collective's own slices and no
        other lane's data; above them only when all of them together are shorter than the label."""
        h = self.fm.height() + 2
        rows = sorted((r for r, _ in boxes), key=lambda r: r.top())
        top, bottom = rows[0].top(), max(r.bottom() for r in rows)
        shown = [r for r in rows if r.top() >= RULER_H and r.bottom() <= view_h] or rows
        sel = self.slice_rect(self.state.selected, scroll_y) if self.state.selected >= 0 else None
        row = next((r for r in shown if sel is not None and r.contains(sel.center())), shown[0])
        y = row.center().y() - h / 2
        y = max(top, min(y, bottom - h)) if bottom - top >= h else max(top - h - 4, RULER_H)
        return QRectF(x + 4, y, self.fm.horizontalAdvance(label) + 8, h)

    def _collective(self, p: QPainter, scroll_y: float, view_h: float) -> None:
        """The selected collective on every participant: each one's slice outlined, its skew (the
        wait from its arrival for the last arrival) as a band, and the last arrival as a line
        across all of them, labelled with the largest skew."""
        boxes = self.collective_boxes(scroll_y)
        if not boxes:
            return
        th, marks = self.theme, self.state.collective
        hatch, tint = QBrush(th.c("mark", 150), Qt.BrushStyle.BDiagPattern), th.c("mark", 60)
        skews = [skew for _, skew in boxes if skew.width() > 0]
        p.setPen(Qt.PenStyle.NoPen)
        for brush in (hatch, QBrush(tint)):  # each fill over every participant in one call
            p.setBrush(brush)
            p.drawRects(skews)
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.setPen(QPen(th.c("select", 220), 1.5))
        p.drawRects([r.adjusted(-1, -1, 1, 1) for r, _ in boxes])  # one call: 128 participants cost 1 ms apart
        top = min(r.top() for r, _ in boxes)
        bottom = max(r.bottom() for r, _ in boxes)
        x = boxes[0][1].right()
        pen = QPen(th.c("mark"), 1.5)
        pen.setStyle(Qt.PenStyle.DashLine)
        p.setPen(pen)
        p.drawLine(QLineF(x, top - 4, x, bottom + 4))
        label = (f"{marks.op} × {len(marks.slices)} · max skew "
                 f"{format_duration(float(marks.skew_ns.max()))}")
        p.setFont(self.font)
        box = self.collective_label_box(label, boxes, x, scroll_y, view_h)
        p.fillRect(box, th.c("bg", 220))
        p.setPen(th.c("text"))
        p.drawText(box, Qt.AlignmentFlag.AlignCenter, label)

    def clock_marks(self, lanes: list[Lane], scroll_y: float) -> list[tuple[QRectF, str, str]]:
        """With "Show clock error" on: per host or device row in view whose clock was aligned,
        (its marker's rect at the lane's edge, its label, its tooltip)."""
        st = self.state
        if not st.show_clock_error or st.clock_errors is None:
            return []
        out = []
        for ln in lanes:
            e = st.clock_errors.get(ln.track)
            if e is None or ln.depth not in (HEADER, SUMMARY) or (ln.depth == SUMMARY and ln.track not in
                                                                   st.layout.compact_names):
                continue
            label = f"±{format_duration(e.error_ns)}"
            w = self.fm.horizontalAdvance(label) + 6
            y = self.lane_y(ln, scroll_y)
            tip = (f"{clip(st.trace.track_name(ln.track))}: clock {clip(e.clock)} aligned to the reference within "
                   f"±{format_duration(e.error_ns)} ({e.segments} piece{'s' if e.segments != 1 else ''})")
            out.append((QRectF(GUTTER_W - w - 2, y + 1, w, max(ln.h - 2, 1)), label, tip))
        return out

    def _clock_error(self, p: QPainter, lanes: list[Lane], scroll_y: float) -> None:
        """Clock-error markers: a band at the lane's edge, the bound written in it when it fits."""
        th = self.theme
        p.setFont(self.small)
        for r, label, _ in self.clock_marks(lanes, scroll_y):
            p.fillRect(r, th.c("mark", 200))
            p.fillRect(QRectF(GUTTER_W, r.top(), 3, r.height()), th.c("mark"))
            if r.height() >= self.fm.height() - 2:
                p.setPen(th.c("bg"))
                p.drawText(r, Qt.AlignmentFlag.AlignCenter, label)

    def _badge_tip(self, src: int, dsts: list[int]) -> str:
        """What a ×N bracket stands for, shown when the mouse rests on it."""
        tr = self.state.trace
        lane = clip(tr.track_name(int(tr.slices.track[dsts[0]])))
        return (f"×{len(dsts)}: {clip(tr.strings[tr.slices.name[src]])} flows to {len(dsts)} slices on {lane}"
                f" (a graph replay's nodes, say); drawn as one arrow to the first and a bracket over the rest")

    def badge_at(self, pos: QPointF) -> str:
        """The tooltip of the ×N badge under a widget position, or ''."""
        return next((tip for box, tip in getattr(self, "badges", []) if box.contains(pos)), "")

    def _notice(self, p: QPainter, w: int) -> None:
        """A short message over the lanes' top right (the chain's end, a step's place in it)."""
        text = getattr(self, "notice", "")
        if not text:
            return
        p.setFont(self.bold)
        tw = self.fm.horizontalAdvance(text) * 1.15 + 16
        box = QRectF(w - tw - 12, RULER_H + 8, tw, self.fm.height() + 8)
        p.fillRect(box, self.theme.c("header", 235))
        p.setPen(QPen(self.theme.c("accent"), 1))
        p.drawRect(box)
        p.setPen(self.theme.c("text"))
        p.drawText(box, Qt.AlignmentFlag.AlignCenter, text)

    def _arrow(self, p: QPainter, a: QRectF, b: QRectF) -> None:
        """A flow arrow from slice rectangle ``a`` to ``b``: it leaves the source where the
        destination starts when they overlap in time (a launch and the submission it makes),
        else at the source's end. Only the part of its curve near the view is stroked."""
        th = self.theme
        src = (max(a.left(), min(a.right(), b.left())), a.center().y())
        dst = QPointF(b.left(), b.center().y())
        curve = visible_part(arrow_curve(src, (dst.x(), dst.y())), GUTTER_W - ARROW_MARGIN,
                             GUTTER_W + self.state.scale.width + ARROW_MARGIN)
        if curve is None:
            return
        path = QPainterPath(QPointF(*curve[0]))
        path.cubicTo(QPointF(*curve[1]), QPointF(*curve[2]), QPointF(*curve[3]))
        p.setPen(QPen(th.c("accent"), 1.0))
        p.setBrush(Qt.BrushStyle.NoBrush)
        # A 1.6 px line as two 1 px strokes 0.6 px apart across its run (sideways for a bend
        # through the lanes): Qt strokes thin lines directly, a thicker pen as a filled outline,
        # about 7× slower per arrow on the devices-together view.
        across = (0.3, 0.0) if abs(curve[3][0] - curve[0][0]) < 24 else (0.0, 0.3)
        p.drawPath(path.translated(-across[0], -across[1]))
        p.drawPath(path.translated(*across))
        head = QPolygonF([dst, QPointF(dst.x() - 7, dst.y() - 4), QPointF(dst.x() - 7, dst.y() + 4)])
        p.setBrush(QBrush(th.c("accent")))
        p.drawPolygon(head)
        p.setBrush(Qt.BrushStyle.NoBrush)

    def _ruler(self, p: QPainter, w: int) -> None:
        st, th = self.state, self.theme
        sc = st.scale
        p.fillRect(QRectF(0, 0, w, TIME_H), th.c("ruler"))
        p.setPen(QPen(th.c("grid"), 1))
        p.drawLine(QPointF(0, TIME_H - 0.5), QPointF(w, TIME_H - 0.5))
        p.setFont(self.small)
        p.setPen(th.c("dim"))
        top = QRectF(8, 1, GUTTER_W - 12, TIME_H / 2 - 1)
        p.drawText(top, Qt.AlignmentFlag.AlignVCenter, f"view {format_duration(sc.span)}")
        if st.time_origin:
            p.drawText(top, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, "from origin (O)")
        if self._rule.base is not None:  # deep zoom: ticks count from this time
            p.setPen(th.c("text"))
            p.drawText(QRectF(8, TIME_H / 2, GUTTER_W - 12, TIME_H / 2 - 1),
                       Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, f"{self._rule.base_label} +")
        p.save()
        p.setClipRect(QRectF(GUTTER_W, 0, w - GUTTER_W, TIME_H))
        major = [(GUTTER_W + round(t.x) + 0.5, t.label) for t in self._ticks if t.label]
        minor = [GUTTER_W + round(t.x) + 0.5 for t in self._ticks if not t.label]
        p.setPen(QPen(th.c("grid"), 1))
        p.drawLines([QLineF(x, TIME_H - 5, x, TIME_H) for x in minor])
        p.setPen(QPen(th.c("dim"), 1))
        p.drawLines([QLineF(x, TIME_H - 12, x, TIME_H) for x, _ in major])
        badge = None
        if st.range:
            a, b = st.range
            x0, x1 = GUTTER_W + sc.x_of(a), GUTTER_W + sc.x_of(b)
            p.fillRect(QRectF(x0, TIME_H - 8, max(x1 - x0, 1), 8), th.c("range_fill", 160))
            label = f"Δ {format_duration(b - a)}"
            tw = self.fm.horizontalAdvance(label) + 12
            cx = min(max((x0 + x1) / 2 - tw / 2, GUTTER_W), w - tw)
            badge = (QRectF(cx, 3, tw, 16), label)
        p.setPen(th.c("text"))
        self.ruler_labels: list[tuple[float, float, str]] = []  # (left, right, text) as drawn
        for x, label in major:
            r = QRectF(x + 4, 2, self.fm.horizontalAdvance(label) + 2, TIME_H - 10)
            if r.left() < GUTTER_W or r.right() > w:
                continue  # a clipped label reads as another value ("8 ms" as "3 ms"): skip it
            if badge is None or not r.intersects(badge[0].adjusted(-4, 0, 4, 0)):
                p.drawText(r, Qt.AlignmentFlag.AlignVCenter, label)
                self.ruler_labels.append((r.left(), r.right(), label))
        ox = GUTTER_W + sc.x_of(st.time_origin)
        if st.time_origin and GUTTER_W <= ox <= w:  # the chosen origin: a flag on the ruler
            p.setPen(QPen(th.c("accent"), 2))
            p.drawLine(QPointF(ox, 0), QPointF(ox, TIME_H))
        if len(st.hits):
            _, starts = st.hits_by_start()
            a = int(np.searchsorted(starts, np.int64(st.origin + int(sc.r0)), "left"))
            b = int(np.searchsorted(starts, np.int64(st.origin + int(sc.r1)), "right"))
            xs = np.unique(((starts[a:b] - st.origin - sc.r0) / sc.ns_per_px).astype(np.int64))
            xs = xs[(xs >= 0) & (xs <= sc.width)][:3000] + GUTTER_W + 0.5
            p.setPen(QPen(th.c("search"), 1))
            p.drawLines([QLineF(x, 0, x, 5) for x in xs.tolist()])
        if badge is not None:
            p.fillRect(badge[0], th.c("range_fill"))
            p.setPen(th.c("bg"))
            p.setFont(self.bold)
            p.drawText(badge[0], Qt.AlignmentFlag.AlignCenter, badge[1])
        p.restore()
