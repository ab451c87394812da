"""``accelview analyze DIR`` for a folder of one capture per host (``accelview profile`` of a
cluster workload): the distributed analysis of the hosts read together (stragglers, compute vs
communication per device and host, each collective's skew and transfer)."""

from __future__ import annotations

import json

from accelview.model.analysis.distributed import analyze_cluster
from accelview.model.cluster import align_cluster, cluster_inputs
from accelview.model.cluster.inputs import expand
from accelview.model.store.reader import load_capture
from accelview.model.text.values import format_duration


def run(paths: list[str], as_json: bool, top: int) -> int:
    """Analyse the host captures ``paths`` (files or their folder) together, each moved onto
    host0's clock, and print the report."""
    files = expand(paths)
    hosts = cluster_inputs(files, [load_capture(f) for f in files])
    aligned, _ = align_cluster([t for _, t in hosts])
    report = analyze_cluster(aligned)
    if as_json:
        print(json.dumps(report, default=str))
        return 0
    comm = report["communication"]
    print(f"{len(files)} host captures ({', '.join(report['hosts'])}): {comm['collectives']} collectives")
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
