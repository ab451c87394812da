"""The Graph dock: the dependency graph of the selected range (else of the phase the selected
slice is in, else of the whole capture; Request: of the selected slice's request alone), its
critical path highlighted, repeated work folded into groups that a click unfolds (a right-click folds back), and the
selected op's lifecycle. A click on a node selects its slice in the timeline; a slice selected
in the timeline is selected here."""

from __future__ import annotations

import numpy as np
from accelview.model.graph.dag import GraphContext, OpGraph, build_graph
from accelview.model.graph.display import GROUP, DisplayGraph, display_graph
from accelview.model.graph.groups import Groups, find_groups
from accelview.model.graph.layout import layered_layout
from accelview.model.graph.lifecycle import lifecycle
from accelview.model.graph.scope import capped, phase_of
from accelview.model.text.values import format_count, format_duration
from accelview.model.view.navigate import chain_of
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from .background import BackgroundTask
from .graph_canvas import GraphCanvas
from .state import ViewState
from .theme import Theme

LEGEND = ("compute red · memory blue · latency yellow · host grey · transfer teal · "
          "<span style='color:#ff9f1c'>critical path orange</span> · dashed box: a folded group")


class GraphPanel(QWidget):
    """The graph view over the shared view state."""

    def __init__(self, state: ViewState, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.ctx: GraphContext | None = None
        self.graph: OpGraph | None = None
        self.groups: Groups | None = None
        self.disp: DisplayGraph | None = None
        self.expanded: set[int] = set()
        self._pending = False  # a trace arrived while hidden: build it when shown
        self._task = BackgroundTask(self)
        self.canvas = GraphCanvas(theme)
        self.scope_label = QLabel("No capture open")
        self.lifecycle_label = QLabel("")
        self.lifecycle_label.setWordWrap(True)
        legend = QLabel(LEGEND)
        legend.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.scope_label, 1)
        for text, slot in (("Request", self.show_request), ("Expand all", self.expand_all), ("Fold all", self.fold_all),
                           ("Fit", self.canvas.fit)):
            b = QPushButton(text)
            b.clicked.connect(slot)
            buttons.addWidget(b)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(buttons)
        lay.addWidget(self.canvas, 1)
        lay.addWidget(self.lifecycle_label)
        lay.addWidget(legend)
        self.canvas.node_clicked.connect(self.node_clicked)
        self.canvas.node_right_clicked.connect(self.fold_around)
        state.trace_changed.connect(self.trace_changed)
        state.range_changed.connect(self._range_changed)
        state.selection_changed.connect(self._selection_changed)

    def set_theme(self, theme: Theme) -> None:
        """Redraw in another theme."""
        self.canvas.theme = theme
        self.canvas.update()

    # -- scope -----------------------------------------------------------------------------------
    def showEvent(self, event: object) -> None:
        super().showEvent(event)
        if self._pending:
            self.trace_changed()

    def trace_changed(self) -> None:
        """A new trace: its dependency model is built in a worker thread (seconds for a large
        capture) once the panel is shown; then the graph of the whole capture (its first nodes
        if it is large)."""
        self.ctx = self.graph = self.disp = None
        self.canvas.set_graph(None, None)
        trace = self.state.trace
        self._pending = trace is not None and not self.isVisible()
        if trace is None or self._pending:
            return
        self.scope_label.setText("Building the dependency graph…")
        self._task.start(lambda: GraphContext(trace), "graph", self.set_context, self.scope_label.setText)

    def shutdown(self) -> None:
        """Wait for a running build to finish (before the window goes)."""
        self._task.shutdown()

    def set_context(self, ctx: GraphContext) -> None:
        """Show the graph of the whole capture of ``ctx`` (ignored when another trace is open)."""
        if ctx.trace is not self.state.trace:
            return
        self.ctx, self._pending = ctx, False
        self.show_ids(np.flatnonzero(ctx.kind >= 0), "the whole capture")

    def _range_changed(self) -> None:
        r = self.state.range
        if self.ctx is None or r is None:
            return
        t0, t1 = self.state.origin + int(r[0]), self.state.origin + int(r[1])
        self.show_ids(self.ctx.nodes_in(t0, t1), f"range of {format_duration(float(t1 - t0))}")

    def show_ids(self, ids: np.ndarray, what: str) -> None:
        """Show the graph of these slices."""
        ids, cut = capped(self.ctx, ids)
        self.graph = build_graph(self.ctx, ids)
        self.groups = find_groups(self.graph)
        self.expanded = set()
        self._redisplay()
        more = " (the first ones: select a shorter range for the rest)" if cut else ""
        self.scope_label.setText(f"{what}: {format_count(len(self.graph))} nodes{more}, "
                                 f"{len(self.groups.groups)} repeated groups")
        self.canvas.readable(self.first_work())
        self._selection_changed()

    def _redisplay(self, keep: int = -1) -> None:
        """Fold/unfold, lay out again, and keep graph node ``keep`` in view."""
        self.disp = display_graph(self.graph, self.groups, self.expanded)
        d = self.disp
        hint = np.where(d.source >= 0, self.state.trace.slices.track[self.graph.slice_of[np.maximum(d.source, 0)]], 0)
        layout = layered_layout(d.src, d.dst, d.band, hint.astype(np.float64))
        self.canvas.set_graph(d, layout)
        if keep >= 0:
            self.canvas.centre_on(int(d.node_of[keep]))

    def show_request(self) -> None:
        """The graph of the selected slice's request alone: its chain of calls, submissions,
        transfers and device work (flows both ways)."""
        sid = self.state.selected
        if self.ctx is None or sid < 0:
            self.scope_label.setText("Select a slice first: Request shows its call, submission and work alone")
            return
        chain, _ = chain_of(self.state.trace, sid)
        self.show_ids(chain, f"request of {self.state.trace.strings[self.state.trace.slices.name[sid]]}")

    def first_work(self) -> int:
        """The first drawn node that is device work or a group (where a reader starts), else 0."""
        hit = np.flatnonzero(self.disp.band == self.disp.band.max()) if len(self.disp) else []
        return int(hit[0]) if len(hit) else 0

    def expand_all(self) -> None:
        """Unfold every group."""
        if self.groups is not None:
            self.expanded = set(range(len(self.groups.groups)))
            self._redisplay()
            self._selection_changed()

    def fold_all(self) -> None:
        """Fold every group."""
        if self.groups is not None:
            self.expanded = set()
            self._redisplay()
            self._selection_changed()

    # -- selection -------------------------------------------------------------------------------
    def node_clicked(self, i: int) -> None:
        """A group unfolds (or folds back); any other node selects its slice in the timeline."""
        d = self.disp
        src = int(d.source[i])
        if d.kind[i] == GROUP:
            gi = -src - 1
            first = int(self.groups.groups[gi].members[0])
            self.expanded ^= {gi}
            self._redisplay(keep=first)
            return
        sid = int(self.graph.slice_of[src])
        self.state.select(sid)
        self.state.frame(sid)

    def fold_around(self, i: int) -> None:
        """Fold the innermost unfolded group holding drawn node ``i`` (a right-click)."""
        src = int(self.disp.source[i])
        gi = int(self.groups.innermost[src]) if src >= 0 else self.groups.groups[-src - 1].parent
        while gi >= 0 and gi not in self.expanded:
            gi = self.groups.groups[gi].parent
        if gi >= 0:
            self.expanded.discard(gi)
            self._redisplay(keep=int(self.groups.groups[gi].members[0]))

    def _selection_changed(self) -> None:
        sid = self.state.selected
        if self.graph is None:
            return
        node = self.graph.index_of(sid) if sid >= 0 else -1
        if sid >= 0 and node < 0 and self.state.range is None and self.ctx is not None:
            span = phase_of(self.ctx, sid)  # a slice outside the graph: show its phase
            if span is not None and self.ctx.kind[sid] >= 0:
                self.show_ids(self.ctx.nodes_in(*span), "phase")
                return
        shown = int(self.disp.node_of[node]) if node >= 0 else -1
        self.canvas.select(shown)
        if shown >= 0:
            self.canvas.centre_on(shown)
        self._show_lifecycle(sid)

    def _show_lifecycle(self, sid: int) -> None:
        stages = lifecycle(self.ctx, sid) if sid >= 0 and self.ctx is not None else []
        if not stages:
            name = self.state.trace.strings[self.state.trace.slices.name[sid]] if sid >= 0 else ""
            self.lifecycle_label.setText(f"{name}: no device work to follow" if sid >= 0 else
                                         "Select an op, copy or call to see its lifecycle.")
            return
        parts = " → ".join(f"{s.name} {format_duration(float(s.latency_ns))}" for s in stages)
        total = format_duration(float(stages[-1].end_ns - stages[0].start_ns))
        self.lifecycle_label.setText(f"Lifecycle ({total}): {parts}")
