"""The view state shared by the timeline, counter panels, details and status bar: the trace,
its level-of-detail index and lane layout, the visible window, the selection and its chain,
the range selection, marks and search hits. Widgets change it; its signals redraw the others.

The scale, range and marks are in ns *relative to* ``origin`` (the trace start): absolute
timestamps since the epoch (1.7e18) lose 256 ns as floats. ``show_window`` takes absolute
times, like the model's columns."""

from __future__ import annotations

import numpy as np
from accelview.model import Trace
from accelview.model.cluster import split_hosts
from accelview.model.view.clock_error import ClockError, clock_errors
from accelview.model.view.collective_marks import CollectiveIndex, CollectiveMarks
from accelview.model.view.fit import activity_window, default_collapsed
from accelview.model.view.lanes import LaneLayout, filter_lanes
from accelview.model.view.lod import TraceLOD
from accelview.model.view.navigate import chain_of, find_slices, frame_slice
from accelview.model.view.timescale import TimeScale
from PySide6.QtCore import QObject, Signal


class ViewState(QObject):
    """Everything the views of one open trace agree on."""

    trace_changed = Signal()
    scale_changed = Signal()
    layout_changed = Signal()
    selection_changed = Signal()
    range_changed = Signal()
    search_changed = Signal()

    def __init__(self, trace: Trace | None = None) -> None:
        super().__init__()
        self.trace: Trace | None = None
        self.activity = (0, 1)  # the trace's activity window (ns), set with the trace
        self.lod: TraceLOD | None = None
        self.layout: LaneLayout | None = None
        self.scale = TimeScale(0.0, 1000.0, 800, 0.0, 1000.0)
        self.origin = 0
        self.hidden: set[int] = set()
        self.collapsed: set[int] = set()
        self.order: dict[int, float] = {}
        self.show_clock_error = False  # View → Show clock error
        self.clock_errors: dict[int, ClockError] | None = None  # per host/device track, with the trace
        self.together = False  # the "devices together" arrangement (View menu, G)
        self.fit_h = 0  # the lanes' visible height, which that arrangement's device rows share
        self.lane_filter = ""  # the lane filter's text; its matches are shown, the rest hidden
        self.filtered: tuple[set[int], set[int]] = (set(), set())  # (hidden, opened) by it
        self.selected = -1
        self.collectives: CollectiveIndex | None = None  # the trace's collectives, matched on first use
        self.collective: CollectiveMarks | None = None  # the selected slice's collective, if any
        self.chain = np.empty(0, np.int64)
        self.chain_flows = np.empty(0, np.int64)
        self.range: tuple[float, float] | None = None
        self.marks: list[tuple[float, float]] = []
        self.hits = np.empty(0, np.int64)
        self._by_start: tuple[int, np.ndarray, np.ndarray] | None = None
        self.hit_index = -1
        self.search_text = ""
        self.time_origin = 0.0  # the ruler counts from here (ns from ``origin``); O sets it
        if trace is not None:
            self.set_trace(trace)

    def set_trace(self, trace: Trace, lod: TraceLOD | None = None) -> None:
        """Show a new trace, fitted to the view, with nothing selected. ``lod`` is an index
        already prepared for it (by the loading thread), else one is made."""
        self.trace = trace
        self.collectives, self.collective = CollectiveIndex(trace, split_hosts), None
        self.clock_errors = clock_errors(trace)
        lo, hi = trace.time_bounds()
        self.origin = int(lo)
        ok = lod is not None and lod.trace is trace and lod.origin == self.origin
        self.lod = lod if ok else TraceLOD(trace, origin=self.origin)
        self.hidden, self.collapsed, self.order = set(), default_collapsed(trace), {}
        self.filtered = filter_lanes(trace, self.lane_filter)  # the filter's text outlives a reload
        self.activity = a, b = activity_window(trace)  # not the profiler's window or lone outliers; F fits it too
        full = TimeScale.fit(0, hi - lo, self.scale.width, origin=self.origin)  # pan/zoom bounds
        pad = (b - a) * 0.01
        self.scale = full.with_window(a - lo - pad, b - lo + pad)
        self.selected, self.range, self.marks, self.time_origin = -1, None, [], 0.0
        self.chain = self.chain_flows = np.empty(0, np.int64)
        self.hits, self.hit_index, self.search_text = np.empty(0, np.int64), -1, ""
        self.relayout()
        self.trace_changed.emit()
        self.scale_changed.emit()
        self.selection_changed.emit()

    def relayout(self) -> None:
        """Recompute the lane layout after a show/hide or collapse."""
        if self.trace is not None and self.lod is not None:
            hide, opened = self.filtered
            self.layout = LaneLayout(self.trace, self.lod, self.hidden | hide, self.collapsed - opened, self.order,
                                     self.together, self.fit_h)
            self.layout_changed.emit()

    def set_show_clock_error(self, on: bool) -> None:
        """Mark each aligned host's and device's clock error bound at its lane's edge."""
        self.show_clock_error = on
        self.layout_changed.emit()

    def set_together(self, on: bool) -> None:
        """Arrange every device of every host together, one compact row each, under the hosts."""
        if on != self.together:
            self.together = on
            self.relayout()

    def set_fit_height(self, h: int) -> None:
        """The lanes' visible height changed; the "devices together" rows are refitted to it."""
        if h != self.fit_h:
            self.fit_h = h
            if self.together:
                self.relayout()

    def set_lane_filter(self, text: str) -> None:
        """Show only lanes whose name contains ``text``, with their parents and children."""
        self.lane_filter = text
        self.filtered = filter_lanes(self.trace, text) if self.trace is not None else (set(), set())
        self.relayout()

    def set_hidden(self, track: int, hidden: bool) -> None:
        """Show or hide one track (and its children)."""
        (self.hidden.add if hidden else self.hidden.discard)(track)
        self.relayout()

    def set_sibling_order(self, tracks: list[int]) -> None:
        """Show sibling tracks in this order (the user moved a lane)."""
        for i, t in enumerate(tracks):
            self.order[t] = float(i)
        self.relayout()

    def set_collapsed(self, track: int, collapsed: bool) -> None:
        """Collapse or expand a group track."""
        (self.collapsed.add if collapsed else self.collapsed.discard)(track)
        self.relayout()

    def set_scale(self, scale: TimeScale) -> None:
        """Change the visible window."""
        if scale != self.scale:
            self.scale = scale
            self.scale_changed.emit()

    def set_width(self, width: int) -> None:
        """The timeline's drawing width changed."""
        self.set_scale(self.scale.with_width(width))

    def show_window(self, t0: float, t1: float, pad: float = 0.05) -> None:
        """Fit absolute times [t0, t1) (the model's timebase) into the view with a margin."""
        self.show_relative(float(t0 - self.origin), float(t1 - self.origin), pad)

    def show_relative(self, a: float, b: float, pad: float = 0.05) -> None:
        """Fit [a, b) in ns from ``origin`` into the view with a margin."""
        span = max(b - a, 1.0)
        self.set_scale(self.scale.with_window(a - span * pad, b + span * pad))

    def slice_span(self, sid: int) -> tuple[float, float]:
        """A slice's [start, end) relative to ``origin``."""
        sl = self.trace.slices
        s = float(int(sl.start_ns[sid]) - self.origin)
        return s, s + float(sl.dur_ns[sid])

    def select(self, slice_id: int) -> None:
        """Select a slice (-1: none) and compute its dependency chain."""
        self.selected = int(slice_id)
        self.collective = self.collectives.of(self.selected) if self.collectives is not None else None
        if self.trace is not None and slice_id >= 0:
            self.chain, self.chain_flows = chain_of(self.trace, slice_id)
        else:
            self.chain = self.chain_flows = np.empty(0, np.int64)
        self.selection_changed.emit()

    def set_range(self, rng: tuple[float, float] | None) -> None:
        """Set (or clear) the range selection, in ns from ``origin``."""
        if rng is not None:
            a, b = sorted(rng)
            rng = (a, b)
        self.range = rng
        self.range_changed.emit()

    def add_mark(self) -> None:
        """Mark the range selection (or the selected slice's extent) for later reference."""
        if self.range is not None:
            self.marks.append(self.range)
        elif self.trace is not None and self.selected >= 0:
            self.marks.append(self.slice_span(self.selected))
        self.range_changed.emit()

    def set_time_origin(self, t: float | None = None) -> None:
        """Count the ruler from ``t`` (ns from ``origin``); None: from the range selection's
        start, else the selected slice's start, else the trace start again."""
        if t is None:
            if self.range is not None:
                t = self.range[0]
            elif self.trace is not None and self.selected >= 0:
                t = self.slice_span(self.selected)[0]
            else:
                t = 0.0
        self.time_origin = float(t)
        self.scale_changed.emit()

    def clear_marks(self) -> None:
        """Remove every mark."""
        self.set_marks([])

    def set_marks(self, marks: list[tuple[float, float]]) -> None:
        """Replace the marks (ns from ``origin``), e.g. with the bookmarks read beside the file."""
        self.marks = list(marks)
        self.range_changed.emit()

    def fit_selection(self) -> None:
        """Zoom to the range selection, else the selected slice, else the trace's activity (the
        whole trace is Ctrl+0, ``fit_all``)."""
        if self.range is not None:
            self.show_relative(*self.range, pad=0.02)
        elif self.trace is not None and self.selected >= 0:
            self.show_relative(*self.slice_span(self.selected), pad=0.25)
        elif self.trace is not None:
            a, b = self.activity
            self.show_relative(float(a - self.origin), float(b - self.origin), pad=0.01)

    def fit_all(self) -> None:
        """Show the whole trace, outliers and the profiler's window included."""
        if self.trace is not None:
            lo, hi = self.trace.time_bounds()
            self.set_scale(type(self.scale).fit(0, hi - lo, self.scale.width, origin=self.origin))

    def search(self, text: str) -> int:
        """Find slices by name; returns the number of hits."""
        self.search_text = text
        self.hits = find_slices(self.trace, text) if self.trace is not None and text.strip() else np.empty(0, np.int64)
        self.hit_index = -1
        self.search_changed.emit()
        return len(self.hits)

    def hits_by_start(self) -> tuple[np.ndarray, np.ndarray]:
        """(hit slice ids, their start_ns), ordered by start, for drawing the hits in view.
        Recomputed whenever ``hits`` is replaced (the findings panel sets it too)."""
        key = id(self.hits)
        if self._by_start is None or self._by_start[0] != key or len(self._by_start[1]) != len(self.hits):
            if self.trace is None or not len(self.hits):
                ids, starts = np.empty(0, np.int64), np.empty(0, np.int64)
            else:
                ids = np.asarray(self.hits, np.int64)
                ids = ids[(ids >= 0) & (ids < len(self.trace.slices))]
                starts = self.trace.slices.start_ns[ids]
                order = np.argsort(starts, kind="stable")
                ids, starts = ids[order], starts[order]
            self._by_start = (key, ids, starts)
        return self._by_start[1], self._by_start[2]

    def step_hit(self, step: int) -> int:
        """Select the next (+1) or previous (-1) search hit and bring it into view."""
        if not len(self.hits) or self.trace is None:
            return -1
        self.hit_index = (self.hit_index + step) % len(self.hits)
        sid = int(self.hits[self.hit_index])
        self.select(sid)
        self.frame(sid)
        self.search_changed.emit()
        return sid

    def frame(self, sid: int) -> None:
        """Bring a slice into view at a readable width (zooming in or out as needed)."""
        s, e = self.slice_span(sid)
        win = frame_slice(s, e, self.scale.r0, self.scale.r1)
        if win is not None:
            self.set_scale(self.scale.with_window(*win))
