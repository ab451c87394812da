"""The dependency graph's drawing surface: a custom-painted widget over a ``DisplayGraph`` and its
``Layout`` (model/graph). Node boxes and edges are cached as painter paths in world units, in
chunks of consecutive layers, so a frame draws only the chunks in view through one transform;
level of detail drops labels and edge types when zoomed out, and far out draws boxes as
short thick lines and only the edges long enough to see. Wheel zooms around the cursor,
drag pans, a click picks a node (a right-click folds the group around it), hovering names a
node or an edge (type and latency)."""

from __future__ import annotations

import math

import numpy as np
from accelview.model.graph.dag import CLASSES, EDGE_TYPES, NODE_KINDS
from accelview.model.graph.display import GROUP, DisplayGraph
from accelview.model.graph.layout import GAP_X, NODE_H, NODE_W, Layout
from accelview.model.text.values import format_duration
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPainterPath, QPen, QTransform, QWheelEvent
from PySide6.QtWidgets import QToolTip, QWidget

from .theme import Theme

CHUNK = 256  # nodes per cached chunk (nodes are in layer order)
LABEL_PX = 60  # draw labels when a node box is at least this wide on screen
EDGE_TYPE_PX = 24  # colour edges by type when a node box is at least this wide
FAR_PX = 4  # narrower boxes are drawn as short thick lines (a third of the cost of filling), without
# outlines, and only edges across LONG_LAYERS layers or more (the others are under a pixel long)
LONG_LAYERS = 8
MIN_ZOOM, MAX_ZOOM = 1e-4, 8.0
# Palette indexes of the theme's slice colours: node classes and edge types.
CLASS_PALETTE = {"compute": 2, "memory": 0, "latency": 5, "unknown": 18, "host": 19, "transfer": 3}
EDGE_PALETTE = {"launch": 15, "sync": 7, "data": 11, "dependency": 18}
CRITICAL = QColor("#ff9f1c")


class _Chunk:
    """Paths of CHUNK consecutive nodes and of the edges leaving them, in world units."""

    def __init__(self, x0: float, x1: float) -> None:
        self.x0, self.x1 = x0, x1
        self.fills: dict[int, QPainterPath] = {}
        self.marks: dict[int, QPainterPath] = {}  # each box as its middle line, for far zooms
        self.critical = QPainterPath()
        self.groups = QPainterPath()
        self.edges: dict[int, QPainterPath] = {}  # edges across fewer than LONG_LAYERS layers
        self.long_edges: dict[int, QPainterPath] = {}
        self.critical_edges = QPainterPath()


def _pen(colour: QColor, width: float) -> QPen:
    pen = QPen(colour, width)
    pen.setCosmetic(True)
    return pen


class GraphCanvas(QWidget):
    """Draws one display graph; ``node_clicked`` gives the drawn node's index."""

    node_clicked = Signal(int)
    node_right_clicked = Signal(int)

    def __init__(self, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.disp: DisplayGraph | None = None
        self.layout: Layout | None = None
        self.chunks: list[_Chunk] = []
        self.zoom, self.ox, self.oy = 1.0, 0.0, 0.0  # screen px per world unit; world point at (0, 0)
        self.selected = -1
        self._press: QPointF | None = None
        self._moved = False
        self.setMouseTracking(True)
        self.setMinimumSize(200, 120)

    # -- data ------------------------------------------------------------------------------------
    def set_graph(self, disp: DisplayGraph | None, layout: Layout | None) -> None:
        """Show a new drawn graph, or none (the view is left where it was; call ``fit`` or
        ``centre_on``)."""
        self.disp, self.layout = disp, layout
        self.selected = -1
        self._build_chunks()
        self.update()

    def _build_chunks(self) -> None:
        d, lay = self.disp, self.layout
        self.chunks = []
        if d is None or lay is None or not len(d):
            return
        x, y = lay.x.tolist(), lay.y.tolist()
        cls, kind, crit = d.cls.tolist(), d.kind.tolist(), d.critical.tolist()
        order = np.argsort(d.src, kind="stable")
        es, ed, et, ec = d.src[order], d.dst[order], d.etype[order].tolist(), d.edge_critical[order].tolist()
        bounds = np.searchsorted(es, np.arange(0, len(d) + CHUNK, CHUNK))
        es_l, ed_l = es.tolist(), ed.tolist()
        for c, lo in enumerate(range(0, len(d), CHUNK)):
            hi = min(lo + CHUNK, len(d))
            e_lo, e_hi = int(bounds[c]), int(bounds[c + 1])
            x1 = max(lay.x[lo:hi].max(), lay.x[ed[bounds[c]:bounds[c + 1]]].max() if e_hi > e_lo else 0) + NODE_W
            ch = _Chunk(float(min(lay.x[lo:hi].min(), lay.x[es[e_lo:e_hi]].min() if e_hi > e_lo else math.inf)),
                        float(x1))
            for i in range(lo, hi):
                r = QRectF(x[i], y[i], NODE_W, NODE_H)
                ch.fills.setdefault(cls[i], QPainterPath()).addRect(r)
                mark = ch.marks.setdefault(cls[i], QPainterPath())
                mark.moveTo(x[i], y[i] + NODE_H / 2)
                mark.lineTo(x[i] + NODE_W, y[i] + NODE_H / 2)
                if crit[i]:
                    ch.critical.addRect(r)
                if kind[i] == GROUP:
                    ch.groups.addRect(r.adjusted(-4, -4, 4, 4))
            for j in range(e_lo, e_hi):
                s, t = es_l[j], ed_l[j]
                paths = ch.long_edges if x[t] - x[s] > LONG_LAYERS * (NODE_W + GAP_X) else ch.edges
                path = ch.critical_edges if ec[j] else paths.setdefault(et[j], QPainterPath())
                path.moveTo(x[s] + NODE_W, y[s] + NODE_H / 2)
                path.lineTo(x[t], y[t] + NODE_H / 2)
            self.chunks.append(ch)

    # -- view ------------------------------------------------------------------------------------
    def fit(self) -> None:
        """Show the whole graph (as far as the minimum zoom allows), from its left end."""
        if self.layout is None:
            return
        w, h = self.layout.size
        self.zoom = float(np.clip(min(self.width() / max(w + 40, 1), self.height() / max(h + 40, 1)), MIN_ZOOM,
                                  MAX_ZOOM))
        self.ox, self.oy = -20 / self.zoom, -20 / self.zy
        self.update()

    def readable(self, first: int = 0) -> None:
        """Zoom so node labels can be read, with drawn node ``first`` near the left edge."""
        self.zoom = max(LABEL_PX * 1.6 / NODE_W, self.zoom)
        x = float(self.layout.x[first]) if self.layout is not None and 0 <= first < len(self.layout.x) else 0.0
        self.ox, self.oy = x - 2 * (NODE_W + GAP_X) - 20 / self.zoom, -20 / self.zy
        self.update()

    def centre_on(self, i: int) -> None:
        """Bring drawn node ``i`` to the middle of the view if it is not in view."""
        if self.layout is None or not 0 <= i < len(self.layout.x):
            return
        x, y = float(self.layout.x[i]), float(self.layout.y[i])
        zy = self.zy
        sx, sy = (x - self.ox) * self.zoom, (y - self.oy) * zy
        if not (0 <= sx <= self.width() - NODE_W * self.zoom and 0 <= sy <= self.height() - NODE_H * zy):
            self.ox = x + NODE_W / 2 - self.width() / 2 / self.zoom
            self.oy = y + NODE_H / 2 - self.height() / 2 / zy
        self.update()

    @property
    def zy(self) -> float:
        """Vertical pixels per world unit: the zoom, but never less than what fits the graph's
        height (up to 1:1), so zooming out compresses time while the rows stay apart."""
        if self.layout is None:
            return self.zoom
        fit = min(1.0, self.height() / max(self.layout.size[1] + 40, 1))
        return max(self.zoom, fit)

    def select(self, i: int) -> None:
        """Outline drawn node ``i`` (-1: none)."""
        self.selected = i
        self.update()

    def zoom_at(self, factor: float, sx: float, sy: float) -> None:
        """Zoom by ``factor`` keeping the world point under screen (sx, sy) in place."""
        wx, wy = self.ox + sx / self.zoom, self.oy + sy / self.zy
        self.zoom = float(np.clip(self.zoom * factor, MIN_ZOOM, MAX_ZOOM))
        self.ox, self.oy = wx - sx / self.zoom, wy - sy / self.zy
        self.update()

    def pan(self, dx: float, dy: float) -> None:
        """Move the view by (dx, dy) screen pixels."""
        self.ox -= dx / self.zoom
        self.oy -= dy / self.zy
        self.update()

    # -- painting --------------------------------------------------------------------------------
    def paintEvent(self, _event: object) -> None:
        p = QPainter(self)
        self.paint_to(p, self.width(), self.height())
        p.end()

    def paint_to(self, p: QPainter, w: int, h: int) -> None:
        """Draw the graph into a painter of w × h pixels."""
        th = self.theme
        p.fillRect(0, 0, w, h, th.c("bg"))
        if self.disp is None or not len(self.disp):
            p.setPen(th.c("dim"))
            p.drawText(QRectF(0, 0, w, h), Qt.AlignmentFlag.AlignCenter,
                       "No graph: open a capture, or select a range with host calls or device work")
            return
        z = self.zoom
        x0, x1 = self.ox, self.ox + w / z
        box_px = NODE_W * z
        pal = th.slice_colours
        p.save()
        zy = self.zy
        p.setTransform(QTransform(z, 0, 0, zy, -self.ox * z, -self.oy * zy))
        visible = [c for c in self.chunks if c.x1 >= x0 and c.x0 <= x1]
        detail = box_px >= EDGE_TYPE_PX
        edge_pens = {t: _pen(QColor(pal[EDGE_PALETTE[name]]) if detail else th.c("dim", 150), 1.2 if detail else 0)
                     for t, name in enumerate(EDGE_TYPES)}
        far = box_px < FAR_PX  # boxes a few pixels wide: short edges are sub-pixel, boxes drawn as lines
        for ch in visible:  # edges under nodes
            for paths in (ch.long_edges,) if far else (ch.edges, ch.long_edges):
                for t, path in paths.items():
                    p.strokePath(path, edge_pens[t])
        pen = QPen(CRITICAL, 2.5 if detail else 1.5)
        pen.setCosmetic(True)
        for ch in visible:
            p.strokePath(ch.critical_edges, pen)
        colours = [pal[CLASS_PALETTE[name]] for name in CLASSES]
        mark_pens = [_pen(c, 3) for c in colours]
        for ch in visible:
            for c, path in (ch.marks if far else ch.fills).items():
                if far:
                    p.strokePath(path, mark_pens[c])
                else:
                    p.fillPath(path, colours[c])
        if far:
            p.restore()
            self._paint_selection(p)
            return
        group_pen = QPen(th.c("text"), 1.5 if detail else 1, Qt.PenStyle.DashLine if detail else Qt.PenStyle.SolidLine)
        group_pen.setCosmetic(True)
        crit_pen = QPen(CRITICAL, 2.5 if detail else 1)
        crit_pen.setCosmetic(True)
        for ch in visible:
            p.strokePath(ch.groups, group_pen)
            p.strokePath(ch.critical, crit_pen)
        p.restore()
        self._paint_selection(p)
        if box_px >= LABEL_PX:
            self._paint_labels(p, w, h)

    def _paint_selection(self, p: QPainter) -> None:
        if 0 <= self.selected < len(self.layout.x):
            r = self._screen_rect(self.selected).adjusted(-3, -3, 3, 3)
            p.setPen(QPen(self.theme.c("select"), 2.5))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRect(r)

    def _screen_rect(self, i: int) -> QRectF:
        z, zy = self.zoom, self.zy
        return QRectF((self.layout.x[i] - self.ox) * z, (self.layout.y[i] - self.oy) * zy, NODE_W * z, NODE_H * zy)

    def _paint_labels(self, p: QPainter, w: int, h: int) -> None:
        z, zy, lay, d = self.zoom, self.zy, self.layout, self.disp
        sx = (lay.x - self.ox) * z
        sy = (lay.y - self.oy) * zy
        vis = np.flatnonzero((sx + NODE_W * z >= 0) & (sx <= w) & (sy + NODE_H * zy >= 0) & (sy <= h))[:3000]
        p.setPen(self.theme.slice_text())
        fm = p.fontMetrics()
        for i in vis.tolist():
            r = QRectF(sx[i] + 4, sy[i], NODE_W * z - 8, NODE_H * zy)
            text = fm.elidedText(d.labels[i], Qt.TextElideMode.ElideMiddle, int(r.width()))
            p.drawText(r, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)

    # -- picking ---------------------------------------------------------------------------------
    def node_at(self, pos: QPointF) -> int:
        """The drawn node under a screen point, or -1."""
        if self.layout is None or not len(self.layout.x):
            return -1
        wx, wy = self.ox + pos.x() / self.zoom, self.oy + pos.y() / self.zy
        lay = self.layout
        layer = int(wx // (NODE_W + GAP_X))
        lo, hi = np.searchsorted(lay.layer, layer, "left"), np.searchsorted(lay.layer, layer, "right")
        cand = np.arange(lo, hi)
        hit = cand[(lay.x[cand] <= wx) & (wx <= lay.x[cand] + NODE_W) & (lay.y[cand] <= wy) &
                   (wy <= lay.y[cand] + NODE_H)]
        return int(hit[0]) if len(hit) else -1

    def edge_at(self, pos: QPointF, tolerance_px: float = 4.0) -> int:
        """The drawn edge nearest a screen point within ``tolerance_px``, or -1."""
        d, lay = self.disp, self.layout
        if d is None or not len(d.src):
            return -1
        wx, wy = self.ox + pos.x() / self.zoom, self.oy + pos.y() / self.zy
        ax, ay = lay.x[d.src] + NODE_W, lay.y[d.src] + NODE_H / 2
        bx, by = lay.x[d.dst], lay.y[d.dst] + NODE_H / 2
        near = np.flatnonzero((np.minimum(ax, bx) <= wx) & (wx <= np.maximum(ax, bx)))
        if not len(near):
            return -1
        ax, ay, bx, by = ax[near], ay[near], bx[near], by[near]
        vx, vy = bx - ax, by - ay
        t = np.clip(((wx - ax) * vx + (wy - ay) * vy) / np.maximum(vx * vx + vy * vy, 1e-9), 0, 1)
        dist = np.hypot((ax + t * vx - wx) * self.zoom, (ay + t * vy - wy) * self.zy)
        k = int(np.argmin(dist))
        return int(near[k]) if dist[k] <= tolerance_px else -1

    def tooltip_at(self, pos: QPointF) -> str:
        """What the tooltip says at a screen point: a node or an edge, else ""."""
        d = self.disp
        i = self.node_at(pos)
        if i >= 0:
            dur = format_duration(float(d.end_ns[i] - d.start_ns[i]))
            what = "group" if d.kind[i] == GROUP else NODE_KINDS[d.kind[i]]
            extra = " · click to expand or fold" if d.kind[i] == GROUP else ""
            crit = " · critical path" if d.critical[i] else ""
            return f"{d.labels[i]}\n{what} · {dur} · {CLASSES[d.cls[i]]}{crit}{extra}"
        e = self.edge_at(pos)
        if e >= 0:
            crit = " · critical path" if d.edge_critical[e] else ""
            return f"{d.labels[d.src[e]]} → {d.labels[d.dst[e]]}\n{d.describe_edge(e)}{crit}"
        return ""

    # -- input -----------------------------------------------------------------------------------
    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom_at(1.25 ** steps, event.position().x(), event.position().y())
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() in (Qt.MouseButton.LeftButton, Qt.MouseButton.RightButton):
            self._press, self._moved = event.position(), False

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._press is not None and event.buttons() & Qt.MouseButton.LeftButton:
            delta = event.position() - self._press
            if self._moved or abs(delta.x()) + abs(delta.y()) > 3:
                self._moved = True
                self.pan(delta.x(), delta.y())
                self._press = event.position()
            return
        text = self.tooltip_at(event.position()) if self.disp is not None else ""
        if text:
            QToolTip.showText(event.globalPosition().toPoint(), text, self)
        else:
            QToolTip.hideText()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._press is not None and not self._moved:
            i = self.node_at(event.position())
            if i >= 0 and event.button() == Qt.MouseButton.LeftButton:
                self.node_clicked.emit(i)
            elif i >= 0 and event.button() == Qt.MouseButton.RightButton:
                self.node_right_clicked.emit(i)
        self._press = None
