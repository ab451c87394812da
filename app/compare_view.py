"""The comparison view: run A's timeline above run B's, aligned on a matched iteration and moving
together, the matched ops linked in a strip between them, and the diff table beside them
(sortable; a row selects its op in both timelines). ``CompareJob`` loads the second file and
computes the diff on a worker thread."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
from accelview.model import Trace
from accelview.model.compare.diff import Diff
from accelview.model.compare.links import IterationLinks, iteration_links, partner
from accelview.model.errors import AccelviewError
from accelview.model.text.values import format_duration
from PySide6.QtCore import QObject, QPointF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QHBoxLayout, QHeaderView, QLabel, QSplitter, QTableView, QVBoxLayout, QWidget

from .diff_table import DiffTableModel
from .paint import GUTTER_W
from .state import ViewState
from .theme import Theme
from .timeline import TimelineWidget

LINK_H = 56
MAX_LINKS = 1500  # links drawn at most (an even sample of the visible ones beyond)
SLOWER, FASTER, SAME, UNMATCHED = "#e5534b", "#57ab5a", "#768390", "#e0a030"


class LinkStrip(QWidget):
    """Lines from each matched op's start in A (top edge) to its start in B (bottom edge): red
    when B's op took over 5% longer, green when it took 5% less, grey otherwise; ops with no
    partner get an orange tick on their run's edge."""

    def __init__(self, view: ComparisonView) -> None:
        super().__init__()
        self.view = view
        self.setFixedHeight(LINK_H)
        view.state_a.scale_changed.connect(self.update)
        view.state_b.scale_changed.connect(self.update)

    def visible(self, links: IterationLinks) -> np.ndarray:
        """Indices of the pairs with an end inside either view (an even sample of MAX_LINKS)."""
        sa, sb = self.view.state_a, self.view.state_b
        ta = (sa.origin + sa.scale.r0, sa.origin + sa.scale.r1)
        tb = (sb.origin + sb.scale.r0, sb.origin + sb.scale.r1)
        keep = np.flatnonzero(((links.a_start >= ta[0]) & (links.a_start <= ta[1]))
                              | ((links.b_start >= tb[0]) & (links.b_start <= tb[1])))
        if len(keep) > MAX_LINKS:
            keep = keep[np.linspace(0, len(keep) - 1, MAX_LINKS).astype(np.int64)]
        return keep

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(self.view.theme.gutter))
        links = self.view.links
        if links is not None:
            sa, sb = self.view.state_a, self.view.state_b
            h = self.height()
            keep = self.visible(links)
            xa = GUTTER_W + (links.a_start[keep] - sa.origin - sa.scale.r0) / sa.scale.ns_per_px
            xb = GUTTER_W + (links.b_start[keep] - sb.origin - sb.scale.r0) / sb.scale.ns_per_px
            ratio = links.ratio[keep]
            p.setRenderHint(QPainter.RenderHint.Antialiasing)
            for colour, sel in ((SAME, (ratio >= 0.95) & (ratio <= 1.05)), (FASTER, ratio < 0.95),
                                (SLOWER, ratio > 1.05)):
                p.setPen(QPen(QColor(colour), 1.0))
                for x0, x1 in zip(xa[sel].tolist(), xb[sel].tolist(), strict=True):
                    p.drawLine(QPointF(x0, 0), QPointF(x1, h))
            p.setPen(QPen(QColor(UNMATCHED), 2.0))
            for ids, st, y0, y1 in ((links.a_only, sa, 0, 8), (links.b_only, sb, h - 8, h)):
                t = self.view.run(st).trace.slices.start_ns[ids]
                for x in (GUTTER_W + (t - st.origin - st.scale.r0) / st.scale.ns_per_px).tolist()[:MAX_LINKS]:
                    p.drawLine(QPointF(x, y0), QPointF(x, y1))
        p.setPen(QColor(self.view.theme.dim))
        p.drawText(6, 14, "A ↓ matched ops ↓ B")
        p.end()


class ComparisonView(QWidget):
    """Two runs compared: their timelines, linked, and the diff table. ``select_row`` selects an
    entry's op (or its iteration) in both timelines."""

    def __init__(self, diff: Diff, theme: Theme, lod_a: Any = None, lod_b: Any = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.diff, self.theme = diff, theme
        names = (Path(r.trace.source).name for r in (diff.a, diff.b))
        self.setWindowTitle("accelview — compare {} with {}".format(*names))
        self.state_a, self.state_b = ViewState(), ViewState()
        self.state_a.set_trace(diff.a.trace, lod_a)
        self.state_b.set_trace(diff.b.trace, lod_b)
        self.timeline_a = TimelineWidget(self.state_a, theme)
        self.timeline_b = TimelineWidget(self.state_b, theme)
        self.links = iteration_links(diff)
        self._syncing = False
        self.summary = QLabel(diff.summary)
        self.summary.setObjectName("diff-summary")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.model = DiffTableModel(diff, self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        for col, w in enumerate((18, 52, 190, 80, 62, 62, 80, 52)):
            self.table.setColumnWidth(col, w)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)  # the name
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self.select_row(cur.row()))
        self._build()
        for here, there, in_a in ((self.state_a, self.state_b, True), (self.state_b, self.state_a, False)):
            here.scale_changed.connect(lambda h=here, t=there: self._follow(h, t))
            here.selection_changed.connect(lambda h=here, t=there, a=in_a: self._select_partner(h, t, a))
        self.align()

    def _build(self) -> None:
        runs = QSplitter(Qt.Orientation.Vertical)
        for label, tl, tr in (("A", self.timeline_a, self.diff.a.trace), ("B", self.timeline_b, self.diff.b.trace)):
            box = QWidget()
            lay = QVBoxLayout(box)
            lay.setContentsMargins(0, 0, 0, 0)
            lay.setSpacing(0)
            t0, t1 = tr.time_bounds()
            head = QLabel(f"  {label}: {Path(tr.source).name or 'trace'} ({format_duration(t1 - t0)})")
            head.setObjectName("run-header")
            lay.addWidget(head)
            row = QHBoxLayout()
            row.addWidget(tl)
            row.addWidget(tl.vbar)
            lay.addLayout(row)
            runs.addWidget(box)
            if label == "A":
                self.strip = LinkStrip(self)
                runs.addWidget(self.strip)
        runs.setChildrenCollapsible(False)
        side = QSplitter(Qt.Orientation.Horizontal)
        side.addWidget(runs)
        side.addWidget(self.table)
        side.setStretchFactor(0, 3)
        side.setStretchFactor(1, 2)
        side.setSizes([900, 700])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.summary)
        lay.addWidget(side, 1)

    def run(self, state: ViewState) -> Any:
        """The diff's run data behind one of the two views."""
        return self.diff.a if state is self.state_a else self.diff.b

    # -- alignment ---------------------------------------------------------------------------------
    def _offsets(self) -> tuple[float, float]:
        """Where the aligned iteration starts in each view (ns from the view's origin)."""
        if self.links is None:
            return 0.0, 0.0
        return (float(self.links.a_window[0] - self.state_a.origin),
                float(self.links.b_window[0] - self.state_b.origin))

    def align(self, group: str | None = None) -> None:
        """Show the matched iteration (of ``group``, default the top entry's) at the same place and
        scale in both views, so the longer one runs further to the right."""
        if group is not None and (self.links is None or group != self.links.group):
            self.links = iteration_links(self.diff, group) or self.links
        if self.links is None:
            return
        span = max(self.links.a_window[1] - self.links.a_window[0], self.links.b_window[1] - self.links.b_window[0], 1)
        oa, _ = self._offsets()
        self.state_a.show_relative(oa, oa + span)
        self._follow(self.state_a, self.state_b)
        self.strip.update()

    def _follow(self, here: ViewState, there: ViewState) -> None:
        """Give ``there`` the same window as ``here``, shifted by the aligned iteration's offsets."""
        if self._syncing:
            return
        oa, ob = self._offsets()
        shift = ob - oa if here is self.state_a else oa - ob
        self._syncing = True
        try:
            there.set_scale(there.scale.with_width(here.scale.width).with_window(here.scale.r0 + shift,
                                                                                 here.scale.r1 + shift))
        finally:
            self._syncing = False

    # -- selection -----------------------------------------------------------------------------------
    def _select_partner(self, here: ViewState, there: ViewState, in_a: bool) -> None:
        if self._syncing or self.links is None or here.selected < 0:
            return
        other = partner(self.links, here.selected, in_a)
        if other >= 0 and there.selected != other:
            self._syncing = True
            try:
                there.select(other)
            finally:
                self._syncing = False

    def select_row(self, row: int) -> None:
        """Select the op of a table row in both timelines and bring it into view (a phase, lane or
        whole-run row: align on its iteration)."""
        if not 0 <= row < self.model.rowCount():
            return
        e = self.model.entry(row)
        if e.group in self.diff.matched:
            self.align(e.group)
        self._syncing = True
        try:
            for st, sid in ((self.state_a, e.a_slice), (self.state_b, e.b_slice)):
                st.select(sid)
        finally:
            self._syncing = False
        if e.a_slice >= 0:
            self.state_a.frame(e.a_slice)
        elif e.b_slice >= 0:
            self.state_b.frame(e.b_slice)
        self.strip.update()


class CompareJob(QObject):
    """Load run B and compare it with run A (already in memory) on a worker thread. Emits
    ``done(diff)`` or ``failed(message)``."""

    done = Signal(object)
    failed = Signal(str)

    def __init__(self, trace_a: Trace, path_b: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.trace_a, self.path_b = trace_a, path_b
        self.diff: Diff | None = None
        self.lods: tuple[Any, Any] = (None, None)  # the timelines' indexes, built here too
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from accelview.model.compare.diff import compare
        from accelview.model.compare.inputs import check_comparable
        from accelview.model.loader import load_trace

        try:
            trace_b = load_trace(self.path_b)
            check_comparable(self.trace_a, trace_b, path_b=self.path_b)
            self.diff = compare(self.trace_a, trace_b)
        except AccelviewError as e:
            self.failed.emit(str(e))
            return
        except Exception as e:  # a bug must not take the window down
            self.failed.emit(f"{self.path_b}: could not be compared ({type(e).__name__}: {e})")
            return
        try:  # the timelines' indexes, so that the view opens without building them
            from accelview.model.view.lod import TraceLOD

            self.lods = tuple(TraceLOD(t, origin=int(t.time_bounds()[0])).prepare()  # type: ignore[assignment]
                              for t in (self.diff.a.trace, self.diff.b.trace))
        except Exception:  # the view builds them itself then
            self.lods = (None, None)
        self.done.emit(self.diff)

    def start(self) -> None:
        """Start the work."""
        self._thread.start()

    def wait(self, timeout_s: float = 60.0) -> bool:
        """Block until the work ends (tests and shutdown)."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()
