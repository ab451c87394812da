"""The views ``accelview render --view`` draws: name → "module:function" (Qt-free, so the CLI
lists them without loading Qt). Each function has ``render_png``'s signature (trace, out_path,
window=, size=, timing=, theme=) and returns frame times in ms with timing, else []."""

from __future__ import annotations

VIEWS: dict[str, str] = {
    "timeline": "accelview.app.render:render_png",
    "stats": "accelview.app.views_render:render_stats_png",
    "utilisation": "accelview.app.views_render:render_utilisation_png",
    "graph": "accelview.app.graph_render:render_graph_png",
}
