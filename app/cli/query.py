"""``accelview query FLEET... QUERY``: op statistics of a fleet of host captures, filtered and
grouped, as CSV, JSON or an aligned table.

    accelview query traces/ "op ~ '*all_reduce*'" --by host
    accelview query traces/ "lane == 'collective' and p95_ns > 2ms" --by host,device --format json

FLEET is one or more folders of captures (their ``*.h5``) or capture files; the last argument is
the query (``""``: every row; the language is described in model/fleet/query.py). Each capture's
summary is cached beside it (``.NAME.fleet.json``), so only the first query reads the captures:
on the Dask engine with ``--workers N`` or ``--scheduler tcp://HOST:8786``, else in this process.

Captures being read show ``accelview analyze``'s progress bar on stderr. Output: a table on a
terminal, CSV when piped (``--format`` chooses). Exit status: 0 when every capture answered; 1
when some could not be read (each named on stderr, the table covers the rest); 2 for a malformed
query or argument, or when no capture answered.
"""

from __future__ import annotations

import argparse
import sys


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the query command."""
    p.add_argument("fleet", nargs="+", metavar="FLEET", help="folder(s) of host captures (*.h5) or capture files")
    p.add_argument("query", metavar="QUERY", help="which rows, e.g. \"op ~ '*all_reduce*' and host != 'host0'\" "
                                                  "(\"\": all); fields: host device lane op class count total_ns "
                                                  "mean_ns p50_ns p95_ns max_ns")
    p.add_argument("--by", default="host,op", metavar="KEYS",
                   help="group by these of host, device, lane, op, class (comma separated; default host,op); a "
                        "group whose ops are of several classes has class mixed")
    p.add_argument("--format", choices=("csv", "json", "table"), default=None,
                   help="output format (default: table on a terminal, csv otherwise)")
    p.add_argument("--sort", metavar="COLUMN", help="sort by this column (numbers largest first; default total_ns)")
    p.add_argument("--top", type=int, default=0, metavar="N", help="print the first N rows only (default: all)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="summarise uncached captures on this Dask scheduler "
                                                          "(e.g. tcp://host:8786)")
    p.add_argument("--workers", type=int, metavar="N", help="summarise uncached captures on a local Dask cluster "
                                                            "of N worker processes (default: in this process)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="give up on a capture whose summary takes longer (s; Dask only; default 600)")


def run(args: argparse.Namespace) -> int:
    """Parse the query, gather the fleet's summaries, print the table; returns the exit status."""
    from accelview.model.cluster.inputs import expand
    from accelview.model.errors import AccelviewError
    from accelview.model.fleet.opformat import to_csv, to_json, to_text
    from accelview.model.fleet.optable import check_sort, gather_ops, group, parse_by, select, sort_rows
    from accelview.model.fleet.query import compile_query

    predicate = compile_query(args.query)
    by = parse_by(args.by)
    check_sort(args.sort, by)
    if args.top < 0:
        raise AccelviewError(f"--top {args.top}: give a number of rows, 0 for all")
    if args.workers is not None and args.workers < 1:
        raise AccelviewError(f"--workers {args.workers}: need at least one worker")
    fmt = args.format or ("table" if sys.stdout.isatty() else "csv")
    bars = []

    def progress(done: int, total: int) -> None:  # the bar of `accelview analyze`, only when captures are read
        if not bars:
            from .analyze_cluster import ProgressBar

            bars.append(ProgressBar(sys.stderr))
        bars[0](done, total)

    try:
        fleet = gather_ops(expand(args.fleet), scheduler=args.scheduler, workers=args.workers, timeout_s=args.timeout,
                           progress=progress, dashboard=lambda link: print(f"Dask dashboard: {link}", file=sys.stderr))
    finally:
        if bars:
            bars[0].close()
    for path, line in fleet.failures.items():
        print(f"accelview: {line if path in line else f'{path}: {line}'}", file=sys.stderr)
    if not fleet.captures:
        raise AccelviewError(f"no capture of {len(fleet.failures)} could be read: nothing to answer")
    table = sort_rows(group(select(fleet.rows, predicate), by), args.sort, args.top or None)
    if fmt == "json":
        text = to_json(table, query=args.query, captures=len(fleet.captures), failures=fleet.failures,
                       computed=len(fleet.computed))
    else:
        text = to_csv(table) if fmt == "csv" else to_text(table)
    sys.stdout.write(text)
    return 1 if fleet.failures else 0
