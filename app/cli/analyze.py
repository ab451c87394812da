"""``accelview analyze FILE``: findings, the bottleneck breakdown and a per-phase table."""

from __future__ import annotations

import argparse
import json

from accelview.app.cli import analyze_cluster
from accelview.app.cli.cluster_input import is_cluster, load_input
from accelview.model.analysis.report import Report, analyze
from accelview.model.graph.dag import GraphContext, build_graph
from accelview.model.graph.lifecycle import stage_distributions
from accelview.model.graph.whatif import parse_what_if, what_if
from accelview.model.text.report import format_report
from accelview.model.text.whatif import format_stages, format_what_if


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the analyze command."""
    p.add_argument("file", nargs="+", help="capture (.h5), trace (.json, .json.gz), a run's per-rank traces "
                                           "(several, or their folder), or a cluster's host captures (several, or "
                                           "their folder)")
    p.add_argument("--json", action="store_true", help="print the documented JSON object instead of text")
    p.add_argument("--top", type=int, default=10, metavar="N", help="findings and ops to list (default 10)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a cluster's host captures: analyse them on the Dask scheduler at ADDRESS "
                        "(tcp://HOST:8786; its workers must see the same paths)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="a cluster's host captures: analyse them on a local Dask cluster of N worker processes "
                        "(default: in this process, one capture after another)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="a cluster's host captures on Dask: give up on a capture whose task still runs after "
                        "S seconds (default 600); the rest is reported, marked partial")
    p.add_argument("--what-if", metavar="STAGE=PCT", type=parse_what_if,
                   help="print each request lifecycle stage's latency distribution, then replay the run with one "
                        "stage (api, driver, doorbell, dma, execution, wake) PCT%% faster and print the time "
                        "saved, per phase too")


def run(args: argparse.Namespace) -> int:
    """Analyse one file and print the report."""
    if args.top < 1:
        raise SystemExit("accelview analyze: --top must be at least 1")
    if is_cluster(args.file):  # one capture per host of a cluster: read together, on host0's clock
        return analyze_cluster.run(args.file, args.json, args.top, scheduler=args.scheduler, workers=args.workers,
                                   timeout_s=args.timeout)
    trace = load_input(args.file)  # one file or trace folder, or several ranks' traces
    if "merged" in trace.metadata and args.what_if is None:  # a merged cluster: the hosts read together
        return analyze_cluster.run_merged(trace, args.json, args.top)
    report = analyze(trace)
    if args.what_if is not None:
        print(_what_if(report, *args.what_if))
        return 0
    if args.json:
        print(json.dumps(report.to_json(), default=str))
    else:
        print(format_report(report, args.top))
    return 0


def _what_if(report: Report, stage: str, percent: float) -> str:
    """The what-if replay of the whole run, with its phases."""
    ctx = GraphContext(report.trace)
    g = build_graph(ctx, (ctx.kind >= 0).nonzero()[0])
    phases = [(p.name, p.start_ns, p.end_ns) for p in report.phases if p.name != "whole run"]
    stages = format_stages(stage_distributions(ctx))
    replayed = format_what_if(g, what_if(g, stage, percent, phases))
    return f"Request lifecycle stages over the run:\n{stages}\n\n{replayed}"
