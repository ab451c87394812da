"""Offscreen rendering of the Graph dock to PNG (``accelview render FILE --view graph``)."""

from __future__ import annotations

from accelview.model import Trace
from accelview.model.graph.dag import GraphContext

from .graph_panel import GraphPanel
from .render import ensure_gui_app
from .state import ViewState
from .theme import THEMES, stylesheet


def render_graph_png(trace: Trace, out_path: str, window: tuple[float, float] | None = None,
                     size: tuple[int, int] = (1920, 1080), theme: str = "dark", expanded: bool = False) -> None:
    """Draw the graph panel of ``trace`` (of ``window``, absolute ns, when given) to a PNG;
    ``expanded``: with every repeated group unfolded."""
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


def render_graph_view(trace: Trace, out_path: str, window: tuple[float, float] | None = None,
                      size: tuple[int, int] = (1920, 1080), timing: bool = False, theme: str = "dark") -> list[float]:
    """``render --view graph``: the graph panel as a PNG, in the signature of app/view_table.py's
    views (no frame timing: bench_graph.py measures the graph's frames)."""
    render_graph_png(trace, out_path, window=window, size=size, theme=theme)
    return []
