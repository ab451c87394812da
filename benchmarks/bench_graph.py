"""The dependency graph view: layout time at 1k and 10k nodes, and the frame time of the graph
view at 10k nodes / 20k edges while panning and zooming. Prints figures; not a timed test.

Graphs come from ``capture.synthetic_graph`` (about 3 nodes and 6 edges per op), every group
unfolded. "layout" is the whole way from a selection to boxes: the DAG (dag.build_graph),
folding (groups), the drawn graph and the layered layout; each stage is printed too. Frames are
1920×1080 paints of the Graph dock's canvas, median of 30 after a warm-up, at three zooms: the
whole graph (fit: no labels, edges one colour), mid (edge types, no labels) and readable
(labels), each panned across the graph.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_graph.py
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
from accelview.app.graph_canvas import GraphCanvas
from accelview.app.render import ensure_gui_app
from accelview.app.theme import DARK
from accelview.capture.synthetic_graph import graph_trace
from accelview.model.graph.dag import GraphContext, build_graph
from accelview.model.graph.display import display_graph
from accelview.model.graph.groups import find_groups
from accelview.model.graph.layout import layered_layout
from PySide6.QtGui import QImage, QPainter

W, H, FRAMES = 1920, 1080, 30


def laid_out(ops: int) -> tuple:
    """Build, fold, display and lay out one graph; print each stage's time."""
    trace = graph_trace(ops)
    t0 = time.perf_counter()
    ctx = GraphContext(trace)
    t1 = time.perf_counter()
    g = build_graph(ctx, np.flatnonzero(ctx.kind >= 0))
    t2 = time.perf_counter()
    groups = find_groups(g)
    t3 = time.perf_counter()
    d = display_graph(g, groups, set(range(len(groups.groups))))
    t4 = time.perf_counter()
    lay = layered_layout(d.src, d.dst, d.band, np.zeros(len(d)))
    t5 = time.perf_counter()
    print(f"{len(d):>7,} nodes {len(d.src):>7,} edges: layout {(t5 - t1) * 1e3:7.1f} ms "
          f"(DAG {(t2 - t1) * 1e3:.1f}, groups {(t3 - t2) * 1e3:.1f}, drawn graph {(t4 - t3) * 1e3:.1f}, "
          f"layers and sweeps {(t5 - t4) * 1e3:.1f}; trace context {(t1 - t0) * 1e3:.1f} ms once per trace)")
    return d, lay


def frames(canvas: GraphCanvas, zoom: float, steps: int) -> list[float]:
    img = QImage(W, H, QImage.Format.Format_RGB32)
    canvas.zoom = zoom
    width = canvas.layout.size[0]
    out = []
    for k in range(steps):
        canvas.ox = (width - W / zoom) * k / max(steps - 1, 1) if width * zoom > W else -20 / zoom
        canvas.oy = -20 / zoom
        t = time.perf_counter()
        p = QPainter(img)
        canvas.paint_to(p, W, H)
        p.end()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def main() -> None:
    ensure_gui_app()
    laid_out(330)
    d, lay = laid_out(3400)
    canvas = GraphCanvas(DARK)
    canvas.resize(W, H)
    t = time.perf_counter()
    canvas.set_graph(d, lay)
    print(f"graph view: caching paths {(time.perf_counter() - t) * 1e3:.0f} ms once per layout")
    canvas.fit()
    fit = canvas.zoom
    for name, zoom in (("whole graph", fit), ("mid zoom", 24 / 170 * 1.2), ("readable", 1.0)):
        frames(canvas, zoom, 3)  # warm-up
        times = frames(canvas, zoom, FRAMES)
        print(f"frame {name:<11} (zoom {zoom:.4f}): median {statistics.median(times):5.1f} ms, "
              f"max {max(times):5.1f} ms over {FRAMES} panned frames")


if __name__ == "__main__":
    main()
