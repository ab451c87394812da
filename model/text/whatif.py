"""The text of a what-if replay and of the lifecycle stages' distributions
(``accelview analyze --what-if STAGE=PCT``)."""

from __future__ import annotations

import numpy as np
from accelview.model.graph.dag import NODE_KINDS, OpGraph
from accelview.model.graph.lifecycle import StageStats
from accelview.model.graph.whatif import WhatIf

from .clip import distinct_cuts
from .values import format_duration


def _path_mix(g: OpGraph, path: np.ndarray, start: np.ndarray, end: np.ndarray) -> str:
    """Time on a path per node kind, largest first."""
    took = np.bincount(g.kind[path], weights=(end[path] - start[path]).astype(np.float64), minlength=len(NODE_KINDS))
    parts = [(took[k], NODE_KINDS[k]) for k in range(len(NODE_KINDS)) if took[k] > 0]
    return ", ".join(f"{name} {format_duration(t)}" for t, name in sorted(parts, reverse=True))


def format_stages(stats: list[StageStats]) -> str:
    """Each lifecycle stage's latency distribution over the run, as a table."""
    lines = [f"{'stage':<10} {'requests':>9} " + " ".join(f"{h:>10}" for h in ("total", "mean", "p50", "p95", "p99",
                                                                           "max"))]
    for s in stats:
        lines.append(f"{s.stage:<10} {s.count:>9,} " + " ".join(
            f"{format_duration(v):>10}" for v in (s.total_ns, s.mean_ns, s.p50_ns, s.p95_ns, s.p99_ns, s.max_ns)))
    return "\n".join(lines)


def format_what_if(g: OpGraph, w: WhatIf) -> str:
    """What the run (and each phase) would take with one stage faster, and the new critical path."""
    b, a = w.before, w.after
    share = w.saved_ns / b.span_ns if b.span_ns else 0.0
    lines = [f"What if {w.stage} were {w.percent:g}% faster ({len(g):,} nodes replayed):",
             f"  run {format_duration(b.span_ns)} → {format_duration(a.span_ns)}: "
             f"saves {format_duration(w.saved_ns)} ({share:.1%})",
             f"  critical path before: {len(b.path):,} nodes ({_path_mix(g, b.path, b.start_ns, b.end_ns)})",
             f"  critical path after:  {len(a.path):,} nodes ({_path_mix(g, a.path, a.start_ns, a.end_ns)})"]
    if w.phases:
        saved = np.array([before - after for _, before, after in w.phases], np.float64)
        lines.append(f"  per phase ({len(w.phases)}): median saving {format_duration(float(np.median(saved)))}, "
                     f"most {format_duration(float(saved.max()))}")
        shown = w.phases[:12]
        for (_, before, after), name in zip(shown, distinct_cuts([p[0] for p in shown], 40), strict=True):
            lines.append(f"    {name:<40} {format_duration(before):>10} → {format_duration(after):>10}")
        if len(w.phases) > 12:
            lines.append(f"    … {len(w.phases) - 12} more")
    return "\n".join(lines)
