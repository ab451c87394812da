"""Offscreen rendering of the timeline to PNG, for reports, bug tickets and the benchmark."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import import_module

from accelview.app.safe_paint import painting
from accelview.model import Trace
from accelview.model.errors import AccelviewError
from PySide6.QtGui import QGuiApplication, QImage
from PySide6.QtWidgets import QApplication

from .paint import RULER_H, TimelinePainter
from .state import ViewState
from .theme import THEMES
from .view_table import VIEWS


def ensure_gui_app() -> QGuiApplication:
    """The running Qt application, or a new QApplication (a widgets-capable one, so widgets made
    later in the same process, as in a test run, do not abort)."""
    app = QGuiApplication.instance()
    if app is None:
        app = QApplication([])
    return app


def render_png(
    trace: Trace, out_path: str, window: tuple[float, float] | None = None, size: tuple[int, int] = (1920, 1080),
    timing: bool = False, theme: str = "dark", frames: int = 10,
) -> list[float]:
    """Draw the timeline of ``trace`` to a PNG at ``out_path``.

    ``window`` is (start_ns, end_ns) on the trace's timebase (default: the whole trace);
    ``size`` the image (width, height) in pixels. With ``timing``, paints ``frames`` frames
    and returns each frame's paint time in ms (the first includes building the indexes);
    otherwise returns []."""
    ensure_gui_app()
    w, h = int(size[0]), int(size[1])
    state = ViewState()
    painter = TimelinePainter(state, THEMES.get(theme, THEMES["dark"]))
    state.scale = state.scale.with_width(painter.content_width(w))
    state.set_trace(trace)
    if window is not None:
        state.show_window(window[0], window[1], pad=0.0)
    img = QImage(w, h, QImage.Format.Format_RGB32)
    times: list[float] = []
    for _ in range(frames if timing else 1):
        t = time.perf_counter()
        try:
            with painting(img, "timeline", reraise=True) as p:
                painter.paint(p, w, h)
        except Exception as e:  # the painter has ended: report it as one line, not a crash
            raise AccelviewError(f"render: drawing the timeline failed: {type(e).__name__}: {e}") from None
        times.append((time.perf_counter() - t) * 1000)
    if not img.save(str(out_path)):
        raise OSError(f"{out_path}: could not write the PNG")
    return times if timing else []


def view_drawer(view: str) -> Callable[..., list[float]]:
    """The function that draws one of ``VIEWS`` offscreen (imported on first use)."""
    module, function = VIEWS[view].split(":")
    return getattr(import_module(module), function)


__all__ = ["RULER_H", "ensure_gui_app", "render_png", "view_drawer"]
