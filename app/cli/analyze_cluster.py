"""``accelview analyze DIR`` for a folder of one capture per host (``accelview profile`` of a
cluster workload): the distributed analysis of the hosts read together (stragglers, compute vs
communication per device and host, each collective's skew and transfer), on host0's clock; and
the same for a merged cluster capture (``accelview merge``)."""

from __future__ import annotations

import json
from typing import Any

from accelview.model.analysis.distributed import analyze_cluster
from accelview.model.cluster import align_cluster, cluster_inputs, split_hosts
from accelview.model.cluster.inputs import expand
from accelview.model.loader import load_trace
from accelview.model.text.values import format_duration
from accelview.model.trace import Trace


def run(paths: list[str], as_json: bool, top: int) -> int:
    """Analyse the host captures ``paths`` (files or their folder) together, each moved onto
    host0's clock, and print the report."""
    files = expand(paths)
    hosts = cluster_inputs(files, [load_trace(f) for f in files])
    aligned, _ = align_cluster([t for _, t in hosts])
    return show(analyze_cluster(aligned), as_json, top)


def run_merged(trace: Trace, as_json: bool, top: int) -> int:
    """Analyse a merged cluster capture (``accelview merge``) host by host and print the report."""
    return show(analyze_cluster(split_hosts(trace)), as_json, top)


def show(report: dict[str, Any], as_json: bool, top: int) -> int:
    """Print a cluster report as JSON or text."""
    if as_json:
        print(json.dumps(report, default=str))
        return 0
    comm = report["communication"]
    print(f"{len(report['hosts'])} host captures ({', '.join(report['hosts'])}): {comm['collectives']} collectives")
    print("\nFindings")
    for i, f in enumerate(report["findings"][:top], 1):
        print(f"  {i}. [{f['severity']}] {f['kind']}: {f['summary']}; fix: {f['suggestion']}")
    if not report["findings"]:
        print("  none")
    print("\nPer host          compute   communication        skew    transfer")
    for h in comm["hosts"]:
        print(f"  {h['host']:<12} {format_duration(h['compute_ns']):>10} {format_duration(h['communication_ns']):>15}"
              f" {format_duration(h['skew_ns']):>11} {format_duration(h['transfer_ns']):>11}")
    return 0
