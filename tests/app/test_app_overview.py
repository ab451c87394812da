"""The overview strip under the ruler: it shows where the whole run works and the view's
extent, and a click or drag on it moves the view there."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest
from accelview.app.overlays import GUTTER_W, OVERVIEW_H, RULER_H, TIME_H
from accelview.model import TraceBuilder, TrackKind
from PySide6.QtCore import QPoint, Qt
from timeline_widgets import pixels, shown_timeline


@pytest.fixture
def tl(qtbot):
    return shown_timeline(qtbot, 1220, 400)[1]


def half_busy():
    """A host thread busy over the first half of 1 ms only."""
    b = TraceBuilder()
    host = b.add_track("host", TrackKind.HOST, host="h")
    th = b.add_track("t", TrackKind.HOST_THREAD, parent=host, host="h")
    b.add_slice(th, 0, 500_000, "work")
    b.add_instant(th, 1_000_000, "end", "c")
    return b.build(source="half")


def test_the_strip_shows_the_busy_half_and_the_views_extent(tl):
    st = tl.state
    st.set_trace(half_busy())
    st.set_scale(st.scale.with_window(700_000, 800_000))
    img = pixels(tl.grab().toImage())
    row = img[TIME_H + OVERVIEW_H // 2 - 3, GUTTER_W + 2: tl.width() - 2]
    cw = tl.width() - GUTTER_W
    busy, idle = row[: cw // 2 - 20], row[cw // 2 + 20: int(cw * 0.65)]
    assert len(np.unique(busy)) <= 2 and len(np.unique(idle)) <= 2
    assert not np.intersect1d(busy, idle).size  # work and no work look different
    # The view's extent [0.7, 0.8) of the run is outlined: lighter edges there, not elsewhere.
    top = img[TIME_H, GUTTER_W:]
    bright = np.flatnonzero(((top >> 8) & 0xFF) > 0xC0)
    assert len(bright) and abs(bright.min() / cw - 0.7) < 0.02 and abs(bright.max() / cw - 0.8) < 0.02


def test_clicking_and_dragging_on_the_strip_moves_the_view_keeping_its_span(tl, qtbot):
    st = tl.state
    st.set_trace(half_busy())
    st.set_scale(st.scale.with_window(700_000, 800_000))
    selected = st.selected
    cw = tl.width() - GUTTER_W
    y = (TIME_H + RULER_H) // 2
    qtbot.mousePress(tl, Qt.MouseButton.LeftButton, pos=QPoint(GUTTER_W + cw // 4, y))
    lo, hi = st.scale.lo, st.scale.hi
    centre = (st.scale.r0 + st.scale.r1) / 2
    assert abs(centre - (lo + (hi - lo) / 4)) < (hi - lo) * 0.01
    assert st.scale.span == pytest.approx(100_000)
    qtbot.mouseMove(tl, QPoint(GUTTER_W + cw // 2, y))
    qtbot.mouseRelease(tl, Qt.MouseButton.LeftButton, pos=QPoint(GUTTER_W + cw // 2, y))
    centre = (st.scale.r0 + st.scale.r1) / 2
    assert abs(centre - (lo + (hi - lo) / 2)) < (hi - lo) * 0.01
    assert st.selected == selected  # a click on the strip selects nothing
