"""``accelview render FILE --out shot.png``: draw the timeline to PNG without a display."""

from __future__ import annotations

import argparse
import os
import statistics

from accelview.model.errors import AccelviewError


def _pair(text: str, sep: str, what: str) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in text.split(sep))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must look like A{sep}B, got {text!r}") from None
    return a, b


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the render command."""
    p.add_argument("file", help="capture (.h5) or trace (.json, .json.gz)")
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument("--window", type=lambda s: _pair(s, ":", "--window"), metavar="START:END",
                   help="time window in ns from the capture's start (default: all of it)")
    p.add_argument("--size", type=lambda s: _pair(s.lower(), "x", "--size"), default=(1920, 1080), metavar="WxH")
    p.add_argument("--theme", choices=("dark", "light"), default="dark")
    p.add_argument("--timing", action="store_true", help="paint 10 frames and print their paint times")
    p.add_argument("--view", choices=("timeline", "graph"), default="timeline",
                   help="what to draw: the timeline, or the dependency graph (of --window, else of the capture)")


def run(args: argparse.Namespace) -> int:
    """Load the file and paint it offscreen."""
    w, h = (int(v) for v in args.size)
    if not (16 <= w <= 16384 and 16 <= h <= 16384):
        raise AccelviewError(f"--size {w}x{h}: width and height must be between 16 and 16384")
    if args.window is not None and args.window[1] <= args.window[0]:
        raise AccelviewError(f"--window {args.window[0]:g}:{args.window[1]:g}: the end must come after the start")
    from accelview.model.loader import load_trace

    trace = load_trace(args.file)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # no display needed
    from accelview.app.render import render_png

    window = None
    if args.window is not None:
        t0 = trace.time_bounds()[0]
        window = (t0 + round(args.window[0]), t0 + round(args.window[1]))  # ints: epoch-ns traces lose nothing
    if args.view == "graph":
        from accelview.app.graph_render import render_graph_png as draw
    else:
        draw = render_png
    try:
        times = draw(trace, args.out, window=window, size=(w, h), timing=args.timing, theme=args.theme)
    except OSError as e:
        raise AccelviewError(str(e)) from None
    print(f"wrote {args.out} ({w}x{h})")
    if args.timing:
        print("paint ms per frame: " + " ".join(f"{t:.1f}" for t in times))
        median = statistics.median(times[1:] or times)
        print(f"median {median:.1f} ms (first frame {times[0]:.1f} ms, builds the index)")
    return 0
