"""Offscreen drawing of the views beside the timeline (``accelview render --view``): the
Statistics panel with the histogram of its top row, and the Utilisation charts."""

from __future__ import annotations

import time

from accelview.model import Trace
from PySide6.QtWidgets import QWidget

from .render import ensure_gui_app
from .state import ViewState
from .stats_panel import StatsPanel
from .theme import THEMES, stylesheet
from .utilisation_panel import UtilisationPanel


def _draw(widget: QWidget, out_path: str, size: tuple[int, int], timing: bool, frames: int,
          redraw: object) -> list[float]:
    app = ensure_gui_app()
    widget.resize(int(size[0]), int(size[1]))
    widget.show()
    app.processEvents()
    times = []
    for _ in range(frames if timing else 1):
        t = time.perf_counter()
        redraw()
        img = widget.grab()
        times.append((time.perf_counter() - t) * 1000)
    if not img.save(str(out_path)):
        raise OSError(f"{out_path}: could not write the PNG")
    widget.hide()  # not close(): pyqtgraph's GraphicsView.close tears its scene down under live items
    return times if timing else []


def _state(trace: Trace, window: tuple[float, float] | None, width: int) -> ViewState:
    state = ViewState()
    state.scale = state.scale.with_width(width)
    state.set_trace(trace)
    if window is not None:
        state.show_window(window[0], window[1], pad=0.0)
    return state


def render_stats_png(trace: Trace, out_path: str, window: tuple[float, float] | None = None,
                     size: tuple[int, int] = (1920, 1080), timing: bool = False, theme: str = "dark",
                     frames: int = 10) -> list[float]:
    """The Statistics panel by name over ``window`` (absolute ns; None: the run), its top row's
    histogram shown; with ``timing``, each redraw's ms (table recomputed and grabbed)."""
    ensure_gui_app()
    state = _state(trace, None, int(size[0]))
    if window is not None:
        state.set_range((window[0] - state.origin, window[1] - state.origin))
    panel = StatsPanel(state, THEMES.get(theme, THEMES["dark"]))
    panel.setStyleSheet(stylesheet(panel.theme.name))  # as in the window

    def redraw() -> None:
        panel.refresh()
        panel.view.selectRow(0)

    return _draw(panel, out_path, size, timing, frames, redraw)


def render_utilisation_png(trace: Trace, out_path: str, window: tuple[float, float] | None = None,
                           size: tuple[int, int] = (1920, 1080), timing: bool = False, theme: str = "dark",
                           frames: int = 10) -> list[float]:
    """The Utilisation charts over ``window`` (absolute ns; None: the timeline's default
    view); with ``timing``, each frame's ms (per-pixel figures recomputed and drawn)."""
    ensure_gui_app()
    state = _state(trace, window, int(size[0]))
    panel = UtilisationPanel(state, THEMES.get(theme, THEMES["dark"]))
    panel.rebuild(wait=True)  # here, not on the worker thread showing it would start

    def redraw() -> None:
        panel.redraw()

    return _draw(panel, out_path, size, timing, frames, redraw)
