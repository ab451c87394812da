"""Paints a few thousand frames: PySide6 6.12.0 on Python 3.11 drops a reference to None on
every void Qt call and aborts after a few thousand (shared/MEASURED.md). A bad wheel fails here,
not in a user's session."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
from accelview.app.overlays import GUTTER_W, RULER_H
from accelview.app.paint import LEVELS, TimelinePainter
from accelview.app.state import ViewState
from accelview.app.theme import DARK, LIGHT
from accelview.capture.synthetic import demo_trace
from PySide6.QtGui import QColor, QImage, QPainter

UNPAINTED = QColor("#ff00ff")  # no theme uses it: a pixel of it left is one the frame did not paint


def pixels(img: QImage) -> np.ndarray:
    """The image's ARGB pixels as a (height, width) array."""
    rows = np.frombuffer(img.constBits(), np.uint32).reshape(img.height(), img.bytesPerLine() // 4)
    return rows[:, : img.width()].copy()


def slice_pixels(painter: TimelinePainter, img: QImage) -> int:
    """How many pixels of the time area have a slice colour (any palette colour at any coverage level)."""
    content = pixels(img)[RULER_H:, GUTTER_W:]
    return int(np.isin(content, painter.lut[LEVELS:-1]).sum())


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
    assert slice_pixels(painter, img) > 1000  # the last frame still shows the trace's slices


def test_empty_and_counter_only_traces_paint(qapp):
    """A trace without slices paints a whole frame of background and grid, and no slice pixel;
    a counter-only trace also names its device's lane in the gutter."""
    from accelview.model import TraceBuilder, TrackKind

    empty = TraceBuilder().build()
    b = TraceBuilder()
    dev = b.add_track("dev", TrackKind.DEVICE)
    c = b.add_counter_track("power", "W", parent=dev)
    b.add_counter(c, 0, 1.0)
    b.add_counter(c, 1000, 3.0)
    counters_only = b.build()
    gutter_colours = {}
    for name, trace in (("empty", empty), ("counters", counters_only)):
        st = ViewState()
        painter = TimelinePainter(st, DARK)
        st.scale = st.scale.with_width(painter.content_width(300))
        st.set_trace(trace)
        st.set_scale(st.scale.zoom(3.0))
        img = QImage(300, 200, QImage.Format.Format_RGB32)
        img.fill(UNPAINTED)
        p = QPainter(img)
        painter.paint(p, 300, 200)
        p.end()
        px = pixels(img)
        assert not (px == UNPAINTED.rgba()).any(), name
        assert slice_pixels(painter, img) == 0, name
        assert (px[RULER_H:, GUTTER_W:] == QColor(DARK.bg).rgba()).mean() > 0.9, name  # background, bar grid lines
        gutter_colours[name] = len(np.unique(px[RULER_H:, : GUTTER_W - 1]))
    assert gutter_colours["empty"] == 1  # no lane, no name
    assert [ln.track for ln in st.layout.lanes] == [dev]
    assert gutter_colours["counters"] > 5  # the lane's name and swatch, anti-aliased


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
