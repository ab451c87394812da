"""Paint time of one 1920×1080 timeline frame, and time from a loaded trace to its first frame.

Synthetic captures of 64 lanes: 10M slices and 10k slices over the same span. For the 10M one
it paints the full view, 1% and 0.001% of the span; "cold" is the first frame at a zoom
(coverage computed), "warm" the median of the frames after it (a repaint at the same zoom,
as while hovering or panning within the cached window). Prints figures; not a timed test.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_render.py [--slices 10000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from accelview.app.paint import TimelinePainter
from accelview.app.render import ensure_gui_app
from accelview.app.state import ViewState
from accelview.app.theme import DARK
from accelview.capture.synthetic import large_trace
from PySide6.QtGui import QImage, QPainter

W, H = 1920, 1080
FRAMES = 40


def frame_times(trace, fraction: float) -> tuple[float, float, float, float, float]:
    """(first-frame ms including state set-up, cold ms at this zoom, warm median ms, warm min ms,
    warm median CPU ms of this process: what other processes on a shared machine cannot inflate)."""
    state = ViewState()
    painter = TimelinePainter(state, DARK)
    state.scale = state.scale.with_width(painter.content_width(W))
    img = QImage(W, H, QImage.Format.Format_RGB32)

    def paint() -> float:
        t = time.perf_counter()
        p = QPainter(img)
        painter.paint(p, W, H)
        p.end()
        return (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    state.set_trace(trace)
    paint()
    first = (time.perf_counter() - t) * 1000  # set_trace (layout) + first paint (indexes built)
    lo, hi = trace.time_bounds()
    span = (hi - lo) * fraction
    mid = lo + (hi - lo) * 0.37
    if fraction < 1:
        state.set_scale(state.scale.with_window(mid - span / 2, mid + span / 2))
    cold = paint()
    warm, cpu = [], []
    for _ in range(FRAMES):
        c = time.process_time()
        warm.append(paint())
        cpu.append((time.process_time() - c) * 1000)
    return first, cold, statistics.median(warm), min(warm), statistics.median(cpu)


def pan_times(trace, fraction: float, steps: int = 20) -> float:
    """Median ms of frames while panning by 2% of the view per frame."""
    state = ViewState()
    painter = TimelinePainter(state, DARK)
    state.scale = state.scale.with_width(painter.content_width(W))
    state.set_trace(trace)
    lo, hi = trace.time_bounds()
    span = (hi - lo) * fraction
    state.set_scale(state.scale.with_window(lo + (hi - lo) * 0.3, lo + (hi - lo) * 0.3 + span))
    img = QImage(W, H, QImage.Format.Format_RGB32)
    out = []
    for _ in range(steps):
        state.set_scale(state.scale.pan_fraction(0.02))
        t = time.perf_counter()
        p = QPainter(img)
        painter.paint(p, W, H)
        p.end()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def open_to_first_frame(trace) -> None:
    """Write ``trace`` as a capture, then time load_trace + view set-up + first painted frame."""
    from accelview.model.loader import load_trace
    from accelview.model.store.writer import write_capture

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "big.h5")
        t = time.perf_counter()
        write_capture(trace, path)
        print(f"    wrote {os.path.getsize(path) / 1e6:.0f} MB capture in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        loaded = load_trace(path)
        t_load = time.perf_counter() - t
        state = ViewState()
        painter = TimelinePainter(state, DARK)
        state.scale = state.scale.with_width(painter.content_width(W))
        state.set_trace(loaded)
        img = QImage(W, H, QImage.Format.Format_RGB32)
        p = QPainter(img)
        painter.paint(p, W, H)
        p.end()
        total = time.perf_counter() - t
        print(f"    open → first frame from the .h5 file: {total:.2f} s (load_trace {t_load:.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slices", type=int, default=10_000_000)
    ap.add_argument("--png", action="store_true", help="also write the 10M full-view frame to a PNG")
    ap.add_argument("--from-file", action="store_true",
                    help="also write the big capture to a temporary .h5 and time open (load_trace) to first frame")
    args = ap.parse_args()
    ensure_gui_app()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (other processes skew the figures)")

    rows = []
    for n in (10_000, args.slices):
        t = time.perf_counter()
        trace = large_trace(n, lanes=64, span_ns=1_000_000_000)
        build_s = time.perf_counter() - t
        print(f"{n:>11,} slices, 64 lanes: synthetic build {build_s:.2f} s, "
              f"span {(trace.time_bounds()[1] - trace.time_bounds()[0]) / 1e6:.1f} ms")
        for frac in (1.0, 0.01, 0.00001):
            first, cold, warm, best, cpu = frame_times(trace, frac)
            rows.append((n, frac, first, cold, warm))
            print(f"    view {frac * 100:>7.3f}%: first frame after load {first:7.1f} ms, "
                  f"cold frame {cold:6.1f} ms, warm median {warm:6.1f} ms (min {best:.1f}, CPU {cpu:.1f})")
        pan = pan_times(trace, 0.01)
        print(f"    panning at 1%: median {pan:.1f} ms per frame")
        if args.from_file and n == args.slices:
            open_to_first_frame(trace)
        if args.png and n == args.slices:
            from accelview.app.render import render_png

            out = os.path.join(tempfile.gettempdir(), "bench_render_full.png")
            render_png(trace, out)
            print(f"    wrote {out}")
        del trace
    small = {f: w for n, f, _, _, w in rows if n == 10_000}
    print("\n| zoom | 10k warm ms | 10M cold ms | 10M warm ms | 10M / 10k |")
    print("|---|---|---|---|---|")
    for n, f, _, cold, warm in rows:
        if n != 10_000:
            print(f"| {f * 100:g}% | {small[f]:.1f} | {cold:.1f} | {warm:.1f} | {warm / small[f]:.2f}× |")
    first_big = next(first for n, f, first, _, _ in rows if n != 10_000 and f == 1.0)
    print(f"\nloaded trace → first frame (10M, 1920×1080, indexes built on the way): {first_big / 1000:.2f} s")


if __name__ == "__main__":
    main()
