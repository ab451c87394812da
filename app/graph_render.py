"""Offscreen rendering of the Graph dock to PNG (``accelview render FILE --view graph``). Same
signature as ``render.render_png``, so a table of views can name it."""

from __future__ import annotations

import time

from accelview.model import Trace
from accelview.model.graph.dag import GraphContext
from PySide6.QtGui import QImage, QPainter

from .graph_panel import GraphPanel
from .render import ensure_gui_app
from .state import ViewState
from .theme import THEMES, stylesheet


def render_graph_png(trace: Trace, out_path: str, window: tuple[float, float] | None = None,
                     size: tuple[int, int] = (1920, 1080), timing: bool = False, theme: str = "dark",
                     frames: int = 10, expanded: bool = False) -> list[float]:
    """Draw the graph panel of ``trace`` (of ``window``, absolute ns, when given) to a PNG;
    ``expanded``: with every repeated group unfolded. With ``timing``, also paints the graph
    canvas ``frames`` times and returns each frame's time in ms; otherwise returns []."""
    ensure_gui_app()
    state = ViewState()
    panel = GraphPanel(state, THEMES.get(theme, THEMES["dark"]))
    panel.setStyleSheet(stylesheet(panel.canvas.theme.name))
    panel.resize(int(size[0]), int(size[1]))
    state.set_trace(trace)  # hidden: the panel waits for its context, made here without a thread
    panel.set_context(GraphContext(trace))
    panel.show()
    if window is not None:
        state.set_range((window[0] - state.origin, window[1] - state.origin))
    if expanded:
        panel.expand_all()
    panel.canvas.readable(panel.first_work())
    if not panel.grab().save(str(out_path)):
        raise OSError(f"{out_path}: could not write the PNG")
    if not timing:
        return []
    c = panel.canvas
    img = QImage(c.width(), c.height(), QImage.Format.Format_RGB32)
    times = []
    for _ in range(frames):
        t = time.perf_counter()
        p = QPainter(img)
        c.paint_to(p, c.width(), c.height())
        p.end()
        times.append((time.perf_counter() - t) * 1000)
    return times
