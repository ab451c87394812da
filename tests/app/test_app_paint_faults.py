"""Painting under faults (issue 23): an exception while drawing never leaves a QPainter active
(``render`` died with SIGSEGV), and a name of any length is clipped before it is laid out
(a 50 MB name took 3.5 GB and a minute a frame)."""

from __future__ import annotations

import logging

import pytest
from accelview.app import safe_paint
from accelview.app.cli.main import main
from accelview.app.paint import TimelinePainter
from accelview.model import TraceBuilder, TrackKind
from accelview.model.store.writer import write_capture
from accelview.model.text.clip import MAX_SHOWN_CHARS, clip
from factories import tiny_trace
from timeline_widgets import pixels, shown_timeline


def _boom(*_args, **_kwargs) -> None:
    raise RuntimeError("a bug in the drawing code")


def test_render_reports_an_exception_while_painting_in_one_line(tmp_path, monkeypatch, capsys) -> None:
    src = tmp_path / "t.h5"
    write_capture(tiny_trace(), src)
    monkeypatch.setattr(TimelinePainter, "paint", _boom)
    assert main(["render", str(src), "--out", str(tmp_path / "t.png"), "--size", "400x200"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "accelview: render: drawing the timeline failed: RuntimeError: a bug in the drawing code"


def test_a_view_whose_drawing_raises_shows_the_error_and_goes_on(qtbot, monkeypatch, caplog) -> None:
    st, w = shown_timeline(qtbot, 500, 300)
    st.set_trace(tiny_trace())
    monkeypatch.setattr(TimelinePainter, "paint", _boom)
    monkeypatch.setattr(safe_paint, "_told", set())  # each failure is logged once per process
    with caplog.at_level(logging.ERROR, logger="accelview.paint"):
        first = pixels(w.grab().toImage())
        w.grab()  # and again: the painter of the first frame has ended
    assert "drawing the timeline failed: RuntimeError: a bug in the drawing code" in caplog.text
    red, blue = (first[:20] >> 16) & 0xFF, first[:20] & 0xFF
    assert (red > blue + 40).any()  # the red notice line where the view was
    monkeypatch.undo()
    assert w.grab().width() == 500  # drawing works again once the bug is gone


@pytest.mark.parametrize("length", [MAX_SHOWN_CHARS, 50_000_000])
def test_names_are_clipped_before_they_are_laid_out(length) -> None:
    text = clip("n" * length)
    assert len(text) == MAX_SHOWN_CHARS and (text.endswith("…") == (length > MAX_SHOWN_CHARS))


def test_a_capture_with_a_50_mb_name_renders(tmp_path) -> None:
    b = TraceBuilder()
    big = "n" * 50_000_000
    track = b.add_track(big, TrackKind.HOST_THREAD)
    for i in range(4):
        b.add_slice(track, i * 1000, 900, big if i % 2 else "small")
    src = tmp_path / "big.h5"
    write_capture(b.build(), src)
    out = tmp_path / "big.png"
    assert main(["render", str(src), "--out", str(out), "--size", "600x200"]) == 0 and out.stat().st_size > 0
