"""Issue 22 defect 16 in the window: a 2-rank Kineto trace opens on its 1.24 s of activity, not
the profiler's 3.37 s span, with each rank's CPU process folded to a painted busy summary row."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
from accelview.app.paint import GUTTER_W, RULER_H
from accelview.app.state import ViewState
from accelview.app.theme import DARK
from accelview.app.timeline import TimelineWidget
from accelview.model.view.lanes import SUMMARY
from kineto_traces import imported, needs_traces
from PySide6.QtGui import QImage


def rows_of(img: QImage) -> np.ndarray:
    img = img.convertToFormat(QImage.Format.Format_RGB32)
    px = np.frombuffer(img.constBits(), np.uint32).reshape(img.height(), img.bytesPerLine() // 4)
    return px[:, : img.width()].copy()


@needs_traces
def test_two_ranks_open_on_their_activity_with_processes_folded(qtbot):
    st = ViewState()
    w = TimelineWidget(st, DARK)
    qtbot.addWidget(w)
    w.resize(1400, 780)
    w.show()
    qtbot.waitExposed(w)
    st.set_trace(imported("a100_128rank_sampled"))
    assert st.scale.span < 1.3e9  # the activity (1.24 s), not the 3.37 s profiler span
    assert st.scale.with_window(-1e12, 1e12).span > 3e9  # panning and Ctrl+0 still reach it all
    summaries = [ln for ln in st.layout.lanes if ln.depth == SUMMARY]
    assert len(summaries) == 2 and st.layout.height < 780 - RULER_H  # GPU 1 is on screen
    px = rows_of(w.grab().toImage())
    bg = px[RULER_H + summaries[0].y + 9, -3]  # the last column lies past the activity's end
    row = px[RULER_H + summaries[0].y + 9, GUTTER_W + 20: -40]
    assert (row != bg).mean() > 0.5  # the folded process paints its threads' busy time
