"""``accelview render FILE --out shot.png [--view VIEW]``: draw a view to PNG without a display."""

from __future__ import annotations

import argparse
import os
import statistics

from accelview.app.view_table import VIEWS
from accelview.model.errors import AccelviewError

from .arguments import absolute_window, add_window, pair


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the render command."""
    p.add_argument("file", nargs="+", help="capture (.h5) or trace (.json, .json.gz), or a cluster's host captures "
                                           "(several, or their directory)")
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument("--view", choices=tuple(VIEWS), default="timeline", help="what to draw (default: timeline)")
    add_window(p)
    p.add_argument("--size", type=lambda s: pair(s.lower(), "x", "--size"), default=(1920, 1080), metavar="WxH")
    p.add_argument("--theme", choices=("dark", "light"), default="dark")
    p.add_argument("--timing", action="store_true", help="paint 10 frames and print their paint times")


def run(args: argparse.Namespace) -> int:
    """Load the file and paint the view offscreen."""
    w, h = (int(v) for v in args.size)
    if not (16 <= w <= 16384 and 16 <= h <= 16384):
        raise AccelviewError(f"--size {w}x{h}: width and height must be between 16 and 16384")
    absolute_window(args.window, 0)  # an empty window is a user error before the file is read
    from accelview.app.cli.cluster_input import load_input

    trace = load_input(args.file)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # no display needed
    from accelview.app.render import view_drawer

    draw = view_drawer(args.view)
    window = absolute_window(args.window, trace.time_bounds()[0])
    try:
        times = draw(trace, args.out, window=window, size=(w, h), timing=args.timing, theme=args.theme)
    except OSError as e:
        raise AccelviewError(str(e)) from None
    print(f"wrote {args.out} ({w}x{h})")
    if args.timing and times:
        print("paint ms per frame: " + " ".join(f"{t:.1f}" for t in times))
        median = statistics.median(times[1:] or times)
        print(f"median {median:.1f} ms (first frame {times[0]:.1f} ms, builds the index)")
    return 0
