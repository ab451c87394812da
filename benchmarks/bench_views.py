"""The views beside the timeline at 10M slices: the statistics table and the utilisation charts.
Prints figures; not a timed test. Each measurement is one function in ``BENCHES`` (name → function
taking the shared ``Context``), so a view adds its rows by adding a function.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_views.py [--slices 10000000] [--only stats]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from accelview.capture.synthetic import large_trace
from accelview.model import Trace

W, H = 1920, 1080
FRAMES = 30


@dataclass
class Context:
    """What the benchmarks share: the big synthetic trace, built once."""

    slices: int
    trace: Trace = field(init=False)
    cache: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = time.perf_counter()
        self.trace = large_trace(self.slices, lanes=64, span_ns=1_000_000_000)
        print(f"{self.slices:,} slices on 64 device lanes (synthetic), built in {time.perf_counter() - t:.1f} s")


def _best_median(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return min(out), statistics.median(out)


def bench_stats(ctx: Context) -> None:
    """Statistics by name, lane and phase over the whole capture and over a 1% range."""
    from accelview.model.analysis.stats_table import StatsSource

    t = time.perf_counter()
    src = StatsSource(ctx.trace)
    table = src.table("name")
    first = time.perf_counter() - t
    print(f"  statistics, first table by name (per-slice columns read, then grouped): {first:.2f} s, "
          f"{len(table)} rows")
    for by in ("name", "lane", "phase"):
        best, med = _best_median(lambda by=by: src.table(by), 5)
        print(f"  statistics by {by:<5}, whole capture: median {med / 1000:.2f} s (best {best / 1000:.2f})")
    lo, hi = ctx.trace.time_bounds()
    mid = lo + (hi - lo) // 2
    best, med = _best_median(lambda: src.table("name", (mid, mid + (hi - lo) // 100)), 5)
    print(f"  statistics by name, a 1% range selection: median {med:.1f} ms (best {best:.1f})")


def bench_utilisation(ctx: Context) -> None:
    """The utilisation charts: coverages built once, then frames at three zooms (per-pixel
    figures recomputed, charts updated and painted into a 1920×1080 image)."""
    from accelview.app.render import ensure_gui_app
    from accelview.app.state import ViewState
    from accelview.app.theme import DARK
    from accelview.app.utilisation_panel import UtilisationPanel
    from accelview.model.view.utilisation import Utilisation
    from PySide6.QtGui import QImage, QPainter

    ensure_gui_app()
    t = time.perf_counter()
    Utilisation(ctx.trace)
    print(f"  utilisation model, built once per trace: {time.perf_counter() - t:.2f} s")
    state = ViewState()
    state.scale = state.scale.with_width(W)
    state.set_trace(ctx.trace)
    panel = UtilisationPanel(state, DARK)
    panel.resize(W, H)
    panel.show()
    panel.rebuild()
    img = QImage(W, H, QImage.Format.Format_RGB32)
    lo, hi = ctx.trace.time_bounds()
    for frac in (1.0, 0.01, 0.00001):
        span = (hi - lo) * frac
        mid = lo + (hi - lo) * 0.37
        state.show_window(mid - span / 2, mid + span / 2, pad=0)

        def frame() -> None:
            panel.redraw()
            p = QPainter(img)
            panel.render(p)
            p.end()

        def model() -> None:
            sc = state.scale
            panel.util.frames(sc.r0, sc.span / panel.width_px(), panel.width_px())

        best, med = _best_median(frame, FRAMES)
        _, mmed = _best_median(model, FRAMES)
        print(f"  utilisation frame, view {frac * 100:>7.3f}%: median {med:.1f} ms (best {best:.1f}); "
              f"of which per-pixel figures {mmed:.2f} ms")
    panel.hide()


BENCHES: dict[str, Callable[[Context], None]] = {
    "stats": bench_stats,
    "utilisation": bench_utilisation,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", type=int, default=10_000_000)
    ap.add_argument("--only", choices=tuple(BENCHES), action="append", help="run only these (repeatable)")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (other processes skew the figures)")
    ctx = Context(args.slices)
    for name in args.only or BENCHES:
        print(f"{name}:")
        BENCHES[name](ctx)


if __name__ == "__main__":
    main()
