"""``accelview analyze FILE``: findings, the bottleneck breakdown and a per-phase table."""

from __future__ import annotations

import argparse
import json

from accelview.model.analysis.report import Report, analyze
from accelview.model.loader import load_trace
from accelview.model.text.summary import format_duration


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the analyze command."""
    p.add_argument("file", help="capture (.h5) or trace (.json, .json.gz)")
    p.add_argument("--json", action="store_true", help="print the documented JSON object instead of text")
    p.add_argument("--top", type=int, default=10, metavar="N", help="findings and ops to list (default 10)")


def run(args: argparse.Namespace) -> int:
    """Analyse one file and print the report."""
    if args.top < 1:
        raise SystemExit("accelview analyze: --top must be at least 1")
    report = analyze(load_trace(args.file))
    if args.json:
        print(json.dumps(report.to_json(), default=str))
    else:
        print(format_report(report, args.top))
    return 0


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:5.1%}" if whole else "    -"


def format_report(r: Report, top: int = 10) -> str:
    """The report as text for a terminal."""
    t0, t1 = r.trace.time_bounds()
    span = max(t1 - t0, 1)
    lines = [f"{r.trace.source}: {format_duration(span)}, {len(r.ops.slice):,} device ops, {len(r.gaps):,} idle gaps"]
    lines.append("\nFindings (by time lost)")
    if not r.findings:
        lines.append("  none")
    for i, f in enumerate(r.findings[:top], 1):
        lines.append(f"  {i}. [{f.severity}] {f.kind}: {f.summary}")
        lines.append(f"     at {format_duration(f.start_ns - t0)} – {format_duration(f.end_ns - t0)}; "
                     f"fix: {f.suggestion}")
    whole = r.phases[0]
    total = sum(whole.breakdown_ns.values())
    lines.append(f"\nWhere device time went (verdict: {whole.verdict})")
    for k, v in sorted(whole.breakdown_ns.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {k:<14} {format_duration(v):>12}  {_pct(v, total)}")
    if len(r.phases) > 1:
        lines.append("\nPhases")
        classes = sorted({k for p in r.phases for k in p.breakdown_ns})
        hbm = any("hbm_utilization" in p.metrics for p in r.phases)
        lines.append("  " + f"{'phase':<28}{'duration':>12}  " + "".join(f"{c:>10}" for c in classes)
                     + ("  HBM util" if hbm else "") + "  verdict")
        for p in r.phases[1:top + 1]:
            tot = sum(p.breakdown_ns.values())
            row = "".join(f"{_pct(p.breakdown_ns.get(c, 0), tot):>10}" for c in classes)
            util = f"{p.metrics['hbm_utilization']:>9.0f}%" if "hbm_utilization" in p.metrics else " " * 10
            lines.append(f"  {p.name[:27]:<28}{format_duration(p.end_ns - p.start_ns):>12}  {row}"
                         + (util if hbm else "") + f"  {p.verdict}")
    if r.stats:
        lines.append("\nTop ops by total time")
        lines.append(f"  {'op':<28}{'count':>9}{'total':>12}{'mean':>11}{'p50':>11}{'p95':>11}{'p99':>11}{'share':>8}")
        for s in r.stats[:top]:
            lines.append(f"  {s.name[:27]:<28}{s.count:>9,}{format_duration(s.total_ns):>12}"
                         f"{format_duration(s.mean_ns):>11}{format_duration(s.p50_ns):>11}"
                         f"{format_duration(s.p95_ns):>11}{format_duration(s.p99_ns):>11}{s.share:>8.1%}")
    if r.lane_busy:
        busiest = sorted(r.lane_busy.items(), key=lambda kv: -kv[1])[:top]
        lines.append("\nDevice lanes busy: " + ", ".join(f"{r.trace.track_name(t)} {b:.0%}" for t, b in busiest))
    o = r.transfer_overlap
    if o.get("transfer_ns"):
        lines.append(f"Transfers overlapping device work: {o['overlap']:.0%} of {format_duration(o['transfer_ns'])}")
    if r.gpu is not None:
        lines += _format_gpu(r.gpu, top)
    if r.critical_path_by_resource:
        cp_total = sum(r.critical_path_by_resource.values())
        parts = ", ".join(f"{k} {_pct(v, cp_total).strip()}" for k, v in
                          sorted(r.critical_path_by_resource.items(), key=lambda kv: -kv[1]))
        lines.append(f"\nCritical path ({format_duration(cp_total)}): {parts}")
    return "\n".join(lines)


def _format_gpu(g: dict, top: int) -> list[str]:
    """The GPU-trace section: per-rank time breakdown, idle causes per stream, overlap."""
    lines = ["\nGPU time per rank (Holistic Trace Analysis definitions)"]
    lines.append(f"  {'rank':>4} {'span':>12} {'compute':>9} {'comm':>9} {'memory':>9} {'other':>9} {'idle':>9}")
    for b in g["temporal_breakdown"]:
        span = max(b["span"], 1)
        lines.append(f"  {b['rank']:>4} {format_duration(b['span']):>12}" + "".join(
            f" {b[k] / span:>9.1%}" for k in ("compute", "communication", "memory", "other", "idle")))
    lines.append("\nGPU idle time per stream")
    lines.append(f"  {'rank':>4} {'stream':<24}{'idle':>12}{'host wait':>11}{'kernel wait':>13}{'other':>9}")
    for s in sorted(g["idle_by_stream"], key=lambda s: -s["total"])[:top]:
        tot = max(s["total"], 1)
        lines.append(f"  {s['rank']:>4} {s['stream_name'][:23]:<24}{format_duration(s['total']):>12}"
                     f"{s['host_wait'] / tot:>11.1%}{s['kernel_wait'] / tot:>13.1%}{s['other'] / tot:>9.1%}")
    for o in g["comm_compute_overlap"]:
        if o["ratio"] is not None:
            lines.append(f"  rank {o['rank']}: {o['ratio']:.1%} of communication overlapped compute")
    return lines
