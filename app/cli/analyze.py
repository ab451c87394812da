"""``accelview analyze FILE``: findings, the bottleneck breakdown and a per-phase table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from accelview.app.cli import analyze_cluster
from accelview.model.analysis.report import analyze
from accelview.model.loader import load_trace
from accelview.model.text.report import format_report


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the analyze command."""
    p.add_argument("file", help="capture (.h5), trace (.json, .json.gz), or a folder of one capture per host")
    p.add_argument("--json", action="store_true", help="print the documented JSON object instead of text")
    p.add_argument("--top", type=int, default=10, metavar="N", help="findings and ops to list (default 10)")


def run(args: argparse.Namespace) -> int:
    """Analyse one file and print the report."""
    if args.top < 1:
        raise SystemExit("accelview analyze: --top must be at least 1")
    hosts = analyze_cluster.host_captures(Path(args.file))
    if hosts:  # one capture per host of a cluster: read together
        return analyze_cluster.run(hosts, args.json, args.top)
    report = analyze(load_trace(args.file))
    if args.json:
        print(json.dumps(report.to_json(), default=str))
    else:
        print(format_report(report, args.top))
    return 0
