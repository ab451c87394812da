"""The analysis report as ``accelview analyze`` prints it: findings, where device time went,
phases, top ops, lanes, the critical path and, for GPU traces, the HTA section."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from accelview.model.analysis.op_classes import EVIDENCE

from .clip import distinct_cuts
from .lanes import lane_labels
from .ranks import format_ranks
from .values import MISSING, format_count, format_duration, format_percent

if TYPE_CHECKING:
    from accelview.model.analysis.report import Phase, Report


# What each kind of class evidence means (op_classes.EVIDENCE), for Details and the CLI.
EVIDENCE_TEXT = {"counters": "hardware counters", "roofline": "roofline: FLOPs and shape bytes against the peaks",
                 "kind": "its kind: copy, memset, collective or wait",
                 "launch": "launch parameters: too few blocks for the device", "name": "its name's op family",
                 "duration": "too short to reach a roof", "none": "nothing in the trace allows a guess"}


NAME_WIDTH = 40  # the phase and op name column: long enough for most names, cut apart where not


def _share(part: float, whole: float) -> str:
    """``part`` as a percentage of ``whole`` (``MISSING`` when there is no whole)."""
    return format_percent(part / whole) if whole else MISSING


def format_report(r: Report, top: int = 10) -> str:
    """The report as text for a terminal; ``top`` bounds the findings, phases and ops listed."""
    t0, t1 = r.trace.time_bounds()
    span = max(t1 - t0, 1)
    lines = [f"{r.trace.source}: {format_duration(span)}, {format_count(len(r.ops.slice))} device ops, "
             f"{format_count(len(r.gaps))} idle gaps"]
    lines += _findings(r, top, t0)
    lines += _breakdown(r.phases[0])
    if len(r.ops.slice) and not (r.ops.evidence_code == EVIDENCE.index("counters")).all():
        unknown = int(r.ops.is_class("unknown").sum())
        lines.append(f"  op classes: {class_evidence(r)}; {format_count(unknown)} ops unclassed "
                     f"({format_percent(r.ops.unknown_share(r.trace.slices.dur_ns))} of op time)")
    if len(r.phases) > 1:
        lines += _phases(r.phases, top)
    if r.stats:
        lines.append("\nTop ops by total time")
        lines.append(f"  {'op':<{NAME_WIDTH + 1}}{'count':>9}{'total':>12}{'mean':>11}{'p50':>11}{'p95':>11}"
                     f"{'p99':>11}{'share':>8}")
        shown = r.stats[:top]
        for s, name in zip(shown, distinct_cuts([s.name for s in shown], NAME_WIDTH), strict=True):
            lines.append(f"  {name:<{NAME_WIDTH + 1}}{format_count(s.count):>9}{format_duration(s.total_ns):>12}"
                         + "".join(f"{format_duration(v):>11}" for v in (s.mean_ns, s.p50_ns, s.p95_ns, s.p99_ns))
                         + f"{format_percent(s.share):>8}")
    if r.lane_busy:
        busiest = sorted(r.lane_busy.items(), key=lambda kv: -kv[1])[:top]
        label = lane_labels(r.trace, [t for t, _ in busiest])
        lines.append("\nDevice lanes busy: " + ", ".join(f"{label[t]} {format_percent(b, 0)}" for t, b in busiest))
    o = r.transfer_overlap
    if o.get("transfer_ns"):
        lines.append(f"Transfers overlapping device work: {format_percent(o['overlap'], 0)} "
                     f"of {format_duration(o['transfer_ns'])}")
    if r.gpu is not None:
        lines += _gpu(r.gpu, top)
    if r.communication is not None and "alignment" in r.communication:
        lines += format_ranks(r.communication, t0, top)
    if r.critical_path_by_resource:
        cp_total = sum(r.critical_path_by_resource.values())
        parts = ", ".join(f"{k} {_share(v, cp_total)}" for k, v in
                          sorted(r.critical_path_by_resource.items(), key=lambda kv: -kv[1]))
        lines.append(f"\nCritical path ({format_duration(cp_total)}): {parts}")
    return "\n".join(lines)


def device_time_headline(r: Report) -> str:
    """What device time mostly went to, said honestly: a trace with no device work says so; one
    without hardware counters says its ops were classed from the trace alone, by what evidence,
    and how much is left unclassed and why."""
    whole = r.phases[0] if r.phases else None
    if whole is None or not whole.breakdown_ns:
        return "no device work in this trace" if not len(r.ops.slice) else "device time not broken down"
    unknown = _share(whole.breakdown_ns.get("unknown", 0), sum(whole.breakdown_ns.values()))
    why = "no hardware counters, and names, shapes and launch parameters that allow no guess"
    if whole.verdict == "unknown":
        return f"{unknown} of device time unclassed: the trace has {why}"
    if (r.ops.evidence_code == EVIDENCE.index("counters")).all():
        return f"device time mostly {whole.verdict}"
    text = f"device time mostly {whole.verdict} ({class_evidence(r)})"
    if whole.breakdown_ns.get("unknown", 0):
        text += f"; {unknown} unclassed"
    return text


def class_evidence(r: Report) -> str:
    """What the op classes rest on, by share of op time: ``from hardware counters``, or
    ``no hardware counters: classed by name 60%, kind 30% ...`` (EVIDENCE of op_classes)."""
    ev = r.ops.evidence_code
    counted = ev == EVIDENCE.index("counters")
    if counted.all():
        return "from hardware counters"
    dur = r.trace.slices.dur_ns[r.ops.slice].astype(float)
    per = np.bincount(ev, weights=dur, minlength=len(EVIDENCE))
    present = np.bincount(ev, minlength=len(EVIDENCE)) > 0
    by = {e: per[i] for i, e in enumerate(EVIDENCE) if present[i] and e != "none"}
    how = ", ".join(f"{e} {_share(v, dur.sum())}" for e, v in sorted(by.items(), key=lambda kv: -kv[1]) if v > 0)
    if not how:
        return "no hardware counters, nothing to class ops by"
    return f"classed by {how}" if counted.any() else f"no hardware counters: classed by {how}"


def _findings(r: Report, top: int, t0: int) -> list[str]:
    """The findings ranked by time lost, each with where it is (from the trace start) and its fix."""
    lines = ["\nFindings (by time lost)"]
    if not r.findings:
        lines.append("  none")
    for i, f in enumerate(r.findings[:top], 1):
        lines.append(f"  {i}. [{f.severity}] {f.kind}: {f.summary}")
        lines.append(f"     at {format_duration(f.start_ns - t0)} – {format_duration(f.end_ns - t0)}; "
                     f"fix: {f.suggestion}")
    return lines


def _breakdown(whole: Phase) -> list[str]:
    """The whole run's device time per class, largest first."""
    total = sum(whole.breakdown_ns.values())
    lines = [f"\nWhere device time went (verdict: {whole.verdict})"]
    for k, v in sorted(whole.breakdown_ns.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {k:<14} {format_duration(v):>12}  {_share(v, total):>5}")
    return lines


def _phases(phases: list[Phase], top: int) -> list[str]:
    """One row per phase: its duration, its share per class, HBM utilisation and verdict."""
    classes = sorted({k for p in phases for k in p.breakdown_ns})
    width = {c: max(10, len(c) + 2) for c in classes}  # a class name never runs into the next
    hbm = any("hbm_utilization" in p.metrics for p in phases)
    lines = ["\nPhases", "  " + f"{'phase':<{NAME_WIDTH + 1}}{'duration':>12}  "
             + "".join(f"{c:>{width[c]}}" for c in classes) + ("  HBM util" if hbm else "") + "  verdict"]
    shown = phases[1:top + 1]
    for p, name in zip(shown, distinct_cuts([p.name for p in shown], NAME_WIDTH), strict=True):
        tot = sum(p.breakdown_ns.values())
        row = "".join(f"{_share(p.breakdown_ns.get(c, 0), tot):>{width[c]}}" for c in classes)
        util = p.metrics.get("hbm_utilization")  # in percent
        cell = f"{format_percent(util / 100, 0):>10}" if util is not None else " " * 10
        lines.append(f"  {name:<{NAME_WIDTH + 1}}{format_duration(p.end_ns - p.start_ns):>12}  {row}"
                     + (cell if hbm else "") + f"  {p.verdict}")
    return lines


def _gpu(g: dict[str, Any], top: int) -> list[str]:
    """The GPU-trace section: per-rank time breakdown, idle causes per stream, overlap."""
    lines = ["\nGPU time per rank (Holistic Trace Analysis definitions)"]
    lines.append(f"  {'rank':>4} {'span':>12} {'compute':>9} {'comm':>9} {'memory':>9} {'other':>9} {'idle':>9}")
    for b in g["temporal_breakdown"]:
        span = max(b["span"], 1)
        lines.append(f"  {b['rank']:>4} {format_duration(b['span']):>12}" + "".join(
            f" {format_percent(b[k] / span):>9}" for k in ("compute", "communication", "memory", "other", "idle")))
    lines.append("\nGPU idle time per stream")
    lines.append(f"  {'rank':>4} {'stream':<24}{'idle':>12}{'host wait':>11}{'kernel wait':>13}{'other':>9}")
    for s in sorted(g["idle_by_stream"], key=lambda s: -s["total"])[:top]:
        tot = max(s["total"], 1)
        lines.append(f"  {s['rank']:>4} {s['stream_name'][:23]:<24}{format_duration(s['total']):>12}"
                     f"{format_percent(s['host_wait'] / tot):>11}{format_percent(s['kernel_wait'] / tot):>13}"
                     f"{format_percent(s['other'] / tot):>9}")
    for o in g["comm_compute_overlap"]:
        if o["ratio"] is not None:
            lines.append(f"  rank {o['rank']}: {format_percent(o['ratio'])} of communication overlapped compute")
    return lines
