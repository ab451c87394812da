"""Paints a few thousand frames: PySide6 6.12.0 on Python 3.11 drops a reference to None on
every void Qt call and aborts after a few thousand (shared/MEASURED.md). A bad wheel fails here,
not in a user's session."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from accelview.app.paint import TimelinePainter
from accelview.app.state import ViewState
from accelview.app.theme import DARK, LIGHT
from accelview.capture.synthetic import demo_trace
from PySide6.QtGui import QImage, QPainter


def test_thousands_of_frames(qapp):
    st = ViewState()
    painter = TimelinePainter(st, DARK)
    w, h = 480, 260
    st.scale = st.scale.with_width(painter.content_width(w))
    st.set_trace(demo_trace(steps=2, layers=1))
    st.select(40)
    st.set_range((st.scale.r0 + st.scale.span * 0.2, st.scale.r0 + st.scale.span * 0.4))
    st.search("matmul")
    img = QImage(w, h, QImage.Format.Format_RGB32)
    for i in range(2000):
        if i % 50 == 0:
            st.set_scale(st.scale.zoom(1.15 if (i // 300) % 2 == 0 else 1 / 1.15))
            painter.set_theme(LIGHT if i % 100 else DARK)
        else:
            st.set_scale(st.scale.pan_px(3 if (i // 150) % 2 else -3))
        p = QPainter(img)
        painter.paint(p, w, h, 0.0, 100.0 + i % 300)
        p.end()
    assert not img.isNull()


def test_empty_and_counter_only_traces_paint(qapp):
    from accelview.model import TraceBuilder, TrackKind

    empty = TraceBuilder().build()
    b = TraceBuilder()
    dev = b.add_track("dev", TrackKind.DEVICE)
    c = b.add_counter_track("power", "W", parent=dev)
    b.add_counter(c, 0, 1.0)
    b.add_counter(c, 1000, 3.0)
    counters_only = b.build()
    for trace in (empty, counters_only):
        st = ViewState()
        painter = TimelinePainter(st, DARK)
        st.scale = st.scale.with_width(painter.content_width(300))
        st.set_trace(trace)
        st.set_scale(st.scale.zoom(3.0))
        img = QImage(300, 200, QImage.Format.Format_RGB32)
        p = QPainter(img)
        painter.paint(p, 300, 200)
        p.end()


def test_many_search_hits_paint_as_pixel_strips(qapp):
    from accelview.capture.synthetic import large_trace

    st = ViewState()
    painter = TimelinePainter(st, DARK)
    st.scale = st.scale.with_width(painter.content_width(800))
    st.set_trace(large_trace(200_000, lanes=8))
    assert st.search("matmul") > 2000  # far more hits than outlines are drawn for
    img = QImage(800, 300, QImage.Format.Format_RGB32)
    p = QPainter(img)
    painter.paint(p, 800, 300)
    p.end()
    st.hits = st.hits[::-1].copy()  # set from elsewhere (the findings panel), not by start
    ids, starts = st.hits_by_start()
    assert len(ids) == len(st.hits) and (starts[1:] >= starts[:-1]).all()
