"""``accelview stats FILE``: the statistics of device work by op name, lane or phase, as the
app's Statistics panel shows them; text or CSV, over the run or a window."""

from __future__ import annotations

import argparse

from .arguments import absolute_window, add_window


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the stats command."""
    p.add_argument("file", help="capture (.h5) or trace (.json, .json.gz)")
    p.add_argument("--by", choices=("name", "lane", "phase"), default="name", help="group by (default: name)")
    p.add_argument("--csv", action="store_true", help="print every row as CSV, raw numbers")
    p.add_argument("--top", type=int, default=25, metavar="N", help="rows of the text table (default 25; 0: all)")
    add_window(p)


def run(args: argparse.Namespace) -> int:
    """Load the file, group its device work and print the table."""
    from accelview.model.analysis.stats_table import StatsSource
    from accelview.model.errors import AccelviewError
    from accelview.model.loader import load_trace
    from accelview.model.text.stats import format_stats, stats_csv

    if args.top < 0:
        raise AccelviewError(f"--top {args.top}: give a number of rows, 0 for all")
    trace = load_trace(args.file)
    window = absolute_window(args.window, trace.time_bounds()[0])
    table = StatsSource(trace).table(args.by, window)
    print(stats_csv(table) if args.csv else format_stats(table, args.top or None), end="" if args.csv else "\n")
    return 0
