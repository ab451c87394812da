"""The main window's status bar: the cursor's time, the selected slice, the range and view
spans, the bottleneck legend and the notice that the open file changed on disk (a mixin of
``MainWindow``, which owns the state, timeline and counters it reads)."""

from __future__ import annotations

import math

from accelview.model.text.clip import clip
from accelview.model.text.values import format_duration
from PySide6.QtWidgets import QLabel

from .file_watch import FileWatch
from .legend import BottleneckLegend


class StatusLine:
    """Builds and updates the status bar of the window it is mixed into."""

    def _build_status(self) -> None:
        sb = self.statusBar()
        self.cursor_label = QLabel("")
        self.selection_label = QLabel("")
        self.range_label = QLabel("")
        self.view_label = QLabel("")
        sb.addWidget(self.cursor_label, 1)
        sb.addWidget(self.selection_label, 2)
        self.selection_label.setMinimumWidth(1)  # a long slice name gives way to the legend
        self.legend = BottleneckLegend(self.theme)
        self.legend.setVisible(False)  # while colouring by bottleneck (B)
        sb.addPermanentWidget(self.legend)
        sb.addPermanentWidget(self.range_label)
        sb.addPermanentWidget(self.view_label)
        self.file_watch = FileWatch(sb)  # says when the open file changes on disk
        self.file_watch.reopen.connect(lambda p: self.open_paths([p]))
        self.state.trace_changed.connect(lambda: self.file_watch.watch(None))
        self.timeline.hovered.connect(self._show_cursor)
        self.timeline.hovered.connect(self.counters.set_cursor)
        self.state.selection_changed.connect(self._show_selection)
        self.state.range_changed.connect(self._show_range)
        self.state.scale_changed.connect(self._show_view)

    def _show_cursor(self, t: float) -> None:
        self.cursor_label.setText("" if math.isnan(t) else f"cursor {format_duration(t, 6)}")

    def _show_selection(self) -> None:
        st = self.state
        if st.trace is None or st.selected < 0:
            self.selection_label.setText("")
            return
        sl = st.trace.slices
        name = clip(st.trace.strings[sl.name[st.selected]])
        self.selection_label.setText(
            f"{name} · {format_duration(float(sl.dur_ns[st.selected]))} · chain of {len(st.chain)}")

    def _show_range(self) -> None:
        r = self.state.range
        self.range_label.setText("" if r is None else f"range Δ {format_duration(r[1] - r[0])}")

    def _show_view(self) -> None:
        self.view_label.setText(f"view {format_duration(self.state.scale.span)}")
