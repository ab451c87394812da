"""``compare(a, b)``: the diff of two runs, every entry ranked, and the one line that says what
changed most and why. What ``accelview diff`` prints and the app's comparison view shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from accelview.model.analysis import forked
from accelview.model.analysis.report import LABELS, Report
from accelview.model.trace import Trace

from .entries import KINDS, MATCH_MAX, MIN_REPS, Entry, Matched, group_entries, match_iteration, one_sided
from .explain import summary_line
from .families import Vocabulary, family
from .pathshare import path_resources, per_iteration
from .ranktests import benjamini_hochberg, mann_whitney, median_ci
from .runs import OUTSIDE, RunData, prepare

ALPHA = 0.05  # false discovery rate of the rank tests
MIX_CLASSES = (*LABELS[:3], "transfer", "host", "sync", "communication", "pcie", "unknown")
CRITICAL_SHARE = 0.01  # a change of a step's critical path counts when at least this share of the step
TIER = {"phase": 0, "op": 0, "lane": 1, "critical-path": 2, "finding": 2}
NOISE_FLOOR = 0.0005  # changes under this share of their step's time count as no significant change


@dataclass
class Diff:
    """Two runs compared. ``entries`` are ranked: significant first, then by |change|."""

    a: RunData
    b: RunData
    entries: list[Entry]
    matched: dict[str, Matched]  # per group in both runs: the iteration compared op by op
    mix: dict[str, dict[str, tuple[float, float]]]  # group → class → (a_ns, b_ns) per iteration
    min_change: float  # percent
    op_names: list[str] = field(default_factory=list)  # op family names by id (RunData.op)
    lane_names: list[str] = field(default_factory=list)  # lane names by id (RunData.lane)
    summary: str = ""
    notes: list[str] = field(default_factory=list)  # what the diff could not do, in words

    @property
    def top(self) -> Entry | None:
        """The entry that changed most (significant ones first)."""
        return self.entries[0] if self.entries else None

    def to_json(self) -> dict[str, Any]:
        """The documented object of ``accelview diff --json``."""
        span = [int(np.subtract(*reversed(r.trace.time_bounds()))) for r in (self.a, self.b)]
        return {"summary": self.summary, "a": self.a.trace.source, "b": self.b.trace.source,
                "a_run_ns": span[0], "b_run_ns": span[1], "min_change_pct": self.min_change,
                "iterations": {g: [self.a.groups[g].n, self.b.groups[g].n] for g in self.matched},
                "entries": [e.to_json() for e in self.entries],
                "bottleneck_mix": {g: {c: {"a_ns": round(x, 1), "b_ns": round(y, 1)} for c, (x, y) in m.items()}
                                   for g, m in self.mix.items()},
                "notes": self.notes}


def compare(trace_a: Trace, trace_b: Trace, min_change: float = 1.0, report_a: Report | None = None,
            report_b: Report | None = None) -> Diff:
    """Compare run B with run A. ``min_change`` (percent of A): smaller changes count as no
    significant change whatever the test says."""
    ops, lanes = Vocabulary(), Vocabulary()
    # B is analysed in a forked helper on the other core while A is analysed here (when safe and worth it).
    helper = forked.start(trace_b, tables=False) if report_a is None and report_b is None else None
    try:
        a = prepare(trace_a, ops, lanes, report_a)
    except BaseException:
        if helper is not None:
            helper.cancel()
        raise
    report_b, roles_b = (helper.result() if helper is not None else None) or (report_b, None)
    b = prepare(trace_b, ops, lanes, report_b, roles_b)
    entries: list[Entry] = []
    matched: dict[str, Matched] = {}
    for name in a.groups:
        if name in b.groups:
            matched[name] = match_iteration(a, b, a.groups[name], b.groups[name])
            entries += group_entries(a, b, name, ops.names, lanes.names, matched[name])
        elif name != OUTSIDE:
            entries.append(one_sided("phase", name, a.groups[name], run_is_b=False))
    entries += [one_sided("phase", n, g, run_is_b=True) for n, g in b.groups.items()
                if n not in a.groups and n != OUTSIDE]
    entries += _critical_path(a, b, list(matched))
    steps = {n: float(np.median(g.dur_ns)) for n, g in a.groups.items()}
    steps["whole run"] = steps.get(OUTSIDE, 0.0)
    _judge(entries, steps, min_change)
    entries += _findings(a.report, b.report)
    entries.sort(key=rank_key)
    d = Diff(a, b, entries, matched, _mix(a, b), min_change, ops.names, lanes.names)
    d.notes = _notes(a, b, matched)
    d.summary = summary_line(d)
    return d


def _notes(a: RunData, b: RunData, matched: dict[str, Matched]) -> list[str]:
    out = []
    if not [g for g in matched if g != OUTSIDE] and (len(a.groups) > 1 or len(b.groups) > 1):
        out.append("the runs share no phase: compared as whole runs")
    for g, m in matched.items():
        if not len(m.pairs_a) and len(m.a_work) > MATCH_MAX:
            out.append(f"{g}: too many ops per iteration to match one by one ({len(m.a_work):,})")
    return out


def rank_key(e: Entry) -> tuple[bool, int, float, int, str]:
    """Significant entries first, then in tiers: steps (phases) and ops, then lanes (the same
    work seen per lane), then what explains them (critical path, findings); by |change| within
    a tier."""
    return (not e.significant, TIER[e.kind], -abs(e.change_ns), KINDS.index(e.kind), e.name)


def _judge(entries: list[Entry], step_ns: dict[str, float], min_change: float) -> None:
    """Adjust all p values together, then call an entry significant when its adjusted p is under
    ALPHA, its change is at least ``min_change`` percent, and at least NOISE_FLOOR of its step
    (``step_ns``: median time per iteration of each group; for new and missing things only the floor)."""
    adjusted = benjamini_hochberg(np.array([e.p for e in entries]))
    for e, q in zip(entries, adjusted.tolist(), strict=True):
        e.p_adjusted = q
        one_run = e.a_ns == 0 or e.b_ns == 0
        floor = NOISE_FLOOR * step_ns.get(e.group, 0.0)
        big = abs(e.change_ns) >= (floor if one_run else max(min_change / 100 * e.a_ns, floor))
        e.significant = bool(q < ALPHA and big and e.change_ns != 0)


def _findings(a: Report, b: Report) -> list[Entry]:
    """Time lost per finding kind in each run; one that appeared or went away is significant."""
    def per_kind(r: Report) -> dict[str, tuple[int, str]]:
        out: dict[str, tuple[int, str]] = {}
        for f in r.findings:
            t, s = out.get(f.kind, (0, f.summary))
            out[f.kind] = (t + f.time_lost_ns, s)
        return out

    fa, fb = per_kind(a), per_kind(b)
    out = []
    for kind in sorted(set(fa) | set(fb)):
        ta, sa = fa.get(kind, (0, ""))
        tb, sb = fb.get(kind, (0, ""))
        out.append(Entry("finding", kind, "whole run", float(ta), float(tb), test="present in one run only"
                         if not (ta and tb) else "", p=0.0 if not (ta and tb) else 1.0,
                         significant=not (ta and tb), detail=sb or sa))
    return out


def _critical_path(a: RunData, b: RunData, groups: list[str]) -> list[Entry]:
    """Time on the critical path per resource and iteration of each group (the whole run when the
    runs have no phases). Repeated groups are tested like ops; a path through a step that ran once
    has no test: its change counts (p = 0, then judged like the rest) when at least CRITICAL_SHARE
    of the step."""
    pa, pb = a.report.critical_path, b.report.critical_path
    if pa is None or pb is None:
        return []
    ra, rb = path_resources(a.trace, pa), path_resources(b.trace, pb)
    wanted = [g for g in groups if g != OUTSIDE] or [g for g in groups if g == OUTSIDE]
    out: list[Entry] = []
    for name in wanted:
        ga, gb = a.groups[name], b.groups[name]
        label = name if name != OUTSIDE else "whole run"
        xa, xb = per_iteration(pa, ra, ga), per_iteration(pb, rb, gb)
        repeated = ga.n >= MIN_REPS and gb.n >= MIN_REPS
        step = float(np.median(ga.dur_ns))
        for res in sorted(set(xa) | set(xb)):
            va = xa.get(res, np.zeros(ga.n))
            vb = xb.get(res, np.zeros(gb.n))
            e = Entry("critical-path", res, label, float(np.median(va)), float(np.median(vb)), a_n=ga.n, b_n=gb.n)
            if repeated:
                e.test, e.p = "mann-whitney (iterations)", mann_whitney(va, vb)
                e.a_ci, e.b_ci = median_ci(va)[1:], median_ci(vb)[1:]
            else:
                e.p = 0.0 if abs(e.change_ns) >= CRITICAL_SHARE * step else 1.0
                e.test = f"threshold: change ≥ {CRITICAL_SHARE:.0%} of the step (one path, no repetitions)"
            out.append(e)
    return out


def _mix(a: RunData, b: RunData) -> dict[str, dict[str, tuple[float, float]]]:
    """Per group in both runs (and the whole run): median time per iteration in each class."""
    def per_group(r: RunData) -> dict[str, dict[str, float]]:
        groups: dict[str, list[dict[str, int]]] = {"whole run": [r.report.phases[0].breakdown_ns]}
        for p in r.report.phases[1:]:
            groups.setdefault(family(p.name), []).append(p.breakdown_ns)
        return {g: {c: float(np.median([x.get(c, 0) for x in rows])) for c in MIX_CLASSES}
                for g, rows in groups.items()}

    ma, mb = per_group(a), per_group(b)
    return {g: {c: (ma[g][c], mb[g][c]) for c in MIX_CLASSES if ma[g][c] or mb[g][c]}
            for g in ma if g in mb}
