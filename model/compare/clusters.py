"""The diff of two distributed runs, host by host or rank by rank, and across the whole run.

Members (hosts ``host0`` …, or ranks ``rank N``) are matched by name. Each matched pair is
compared as two single runs are (``compare``: its own iterations matched, its phase, op, lane,
critical-path and finding entries), each entry marked with its member. The whole run's op
entries pool every member's per-iteration times: the median per iteration across the members
(an op a member does not run counts 0 there), tested with the same rank test over the pooled
iterations. A member present in one run only is reported by its phases, new or missing.

In a job whose steps end at a collective, one slow member makes every other one wait: their
collectives grow as much as the slow one's own work did. So the entries are ranked by each
member's *own* change: for a collective, the part of its change that every member shares (the
smallest change among them; the rest is waiting for the others), and for a step, its change
less the time the member waited more at its collectives. The member that changed most is then
the one whose own work changed, and the one-line summary names it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from accelview.model.align.ranks import nccl_kind
from accelview.model.schema import TrackKind
from accelview.model.text.values import format_duration
from accelview.model.trace import Trace

from .diff import ALPHA, NOISE_FLOOR, TIER, Diff, compare
from .entries import KINDS, MIN_REPS, Entry, one_sided
from .explain import describe
from .families import Vocabulary
from .ranktests import benjamini_hochberg, mann_whitney, median_ci
from .runs import OUTSIDE, RunData, prepare

WHOLE = "whole run"


@dataclass
class MemberEntry(Entry):
    """An entry of a distributed diff: of one member (``member``: "host1", "rank 3"), or of the
    whole run across members (``member`` None). ``own_ns``: the change less the waiting for
    other members, which ranks it."""

    member: str | None = None
    member_kind: str = "host"  # the JSON field naming the member: host or rank
    own_ns: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The documented entry, with its ``host`` or ``rank`` (null for the whole run)."""
        out = super().to_json()
        value: Any = self.member
        if self.member is not None and self.member_kind == "rank":
            value = int(self.member.split()[-1])
        out[self.member_kind] = value
        if self.own_ns != self.change_ns:
            out["own_change_ns"] = round(self.own_ns, 1)
        return out


def _marked(e: Entry, member: str | None, member_kind: str) -> MemberEntry:
    m = MemberEntry(**{f.name: getattr(e, f.name) for f in fields(Entry)}, member=member, member_kind=member_kind)
    m.own_ns = m.change_ns
    return m


@dataclass
class ClusterDiff:
    """Two distributed runs compared. ``entries`` ranked: significant first, then by |own change|."""

    kind: str  # "hosts" or "ranks"
    a_label: str
    b_label: str
    pairs: dict[str, Diff]  # per member in both runs
    only_a: list[str]
    only_b: list[str]
    entries: list[MemberEntry]
    min_change: float
    summary: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def member_kind(self) -> str:
        """"host" or "rank"."""
        return "host" if self.kind == "hosts" else "rank"

    def to_json(self, entries: list[MemberEntry] | None = None) -> dict[str, Any]:
        """The documented object of ``accelview diff --json`` (``entries``: those to list, all by default)."""
        return {"summary": self.summary, "a": self.a_label, "b": self.b_label, "members": self.kind,
                "min_change_pct": self.min_change,
                self.kind: {m: {"a": d.a.trace.source, "b": d.b.trace.source,
                                "iterations": {g: [d.a.groups[g].n, d.b.groups[g].n] for g in d.matched}}
                            for m, d in self.pairs.items()},
                "new": self.only_b, "missing": self.only_a,
                "entries": [e.to_json() for e in (self.entries if entries is None else entries)],
                "notes": self.notes}


def compare_members(kind: str, a: dict[str, Trace], b: dict[str, Trace], min_change: float = 1.0,
                    labels: tuple[str, str] = ("A", "B")) -> ClusterDiff:
    """Compare run B's members with run A's (``kind``: "hosts" or "ranks"; member name → trace).
    Raises ``ValueError`` when the runs share no member."""
    member_kind = "host" if kind == "hosts" else "rank"
    both = [m for m in a if m in b]
    if not both:
        raise ValueError(f"the runs share no {member_kind}: A has {', '.join(a)}, B has {', '.join(b)}")
    pairs = {m: compare(a[m], b[m], min_change) for m in both}
    entries: list[MemberEntry] = []
    for m, d in pairs.items():
        entries += [_marked(e, m, member_kind) for e in d.entries]
    entries += [_marked(e, None, member_kind) for e in _whole_run_ops(pairs, min_change)]
    only_a, only_b = [m for m in a if m not in b], [m for m in b if m not in a]
    for names, run, is_b in ((only_a, a, False), (only_b, b, True)):
        for m in names:
            entries += [_marked(e, m, member_kind) for e in _phases_of(run[m], is_b)]
    _discount_waiting(pairs, entries)
    entries.sort(key=rank_key)
    d = ClusterDiff(kind, *labels, pairs, only_a, only_b, entries, min_change)
    d.notes = [f"{m}: {n}" for m, p in pairs.items() for n in p.notes]
    d.summary = summary(d)
    return d


def rank_key(e: MemberEntry) -> tuple[bool, int, float, int, str, bool, str]:
    """Significant first, in the tiers of a single diff, by |own change|; a member's entry before the whole run's."""
    return (not e.significant, TIER[e.kind], -abs(e.own_ns), KINDS.index(e.kind), e.name, e.member is None,
            e.member or "")


def _phases_of(trace: Trace, run_is_b: bool) -> list[Entry]:
    """The phases of a member that ran in one run only (the whole run when it has none)."""
    run = prepare(trace, Vocabulary(), Vocabulary())
    out = [one_sided("phase", WHOLE if n == OUTSIDE else n, g, run_is_b) for n, g in run.groups.items()
           if n != OUTSIDE or len(run.groups) == 1]
    for e in out:
        e.significant = True
    return out


def per_iteration(run: RunData, group: str, n_ops: int) -> np.ndarray:
    """[iteration, op family] → time of the group's work per iteration (``run.op`` ids)."""
    g = run.groups[group]
    if g.everything:
        return np.bincount(run.op, weights=run.dur, minlength=n_ops).reshape(1, n_ops)
    inside = g.occ >= 0
    flat = np.bincount(g.occ[inside].astype(np.int64) * n_ops + run.op[inside], weights=run.dur[inside],
                       minlength=g.n * n_ops)
    return flat.reshape(g.n, n_ops)


def _whole_run_ops(pairs: dict[str, Diff], min_change: float) -> list[Entry]:
    """Per group and op family: every member's iterations pooled, in each run."""
    mats: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, dict[str, int]]] = {}
    keys: set[tuple[str, str]] = set()
    steps: dict[str, list[np.ndarray]] = {}
    for m, d in pairs.items():
        index = {n: k for k, n in enumerate(d.op_names)}
        for g in d.matched:
            steps.setdefault(g, []).append(d.a.groups[g].dur_ns.astype(np.float64))
            xa, xb = per_iteration(d.a, g, len(d.op_names)), per_iteration(d.b, g, len(d.op_names))
            mats[(m, g)] = (xa, xb, index)
            keys |= {(g, d.op_names[k]) for k in np.flatnonzero(xa.sum(axis=0) + xb.sum(axis=0)).tolist()}
    out = []
    for g, name in sorted(keys):
        la, lb = [], []
        for m in pairs:
            if (m, g) in mats:
                xa, xb, index = mats[(m, g)]
                k = index.get(name, -1)
                la.append(xa[:, k] if k >= 0 else np.zeros(len(xa)))
                lb.append(xb[:, k] if k >= 0 else np.zeros(len(xb)))
        va, vb = np.concatenate(la), np.concatenate(lb)
        (ma, a_lo, a_hi), (mb, b_lo, b_hi) = median_ci(va), median_ci(vb)
        e = Entry("op", name, WHOLE if g == OUTSIDE else g, ma, mb, a_ci=(a_lo, a_hi), b_ci=(b_lo, b_hi),
                  a_n=len(va), b_n=len(vb))
        if not va.any() or not vb.any():
            e.test, e.p = "present in one run only", 0.0
        elif len(va) >= MIN_REPS and len(vb) >= MIN_REPS:
            e.test, e.p = "mann-whitney (iterations of every member)", mann_whitney(va, vb)
        else:
            e.test = "none (too few iterations across the members)"
        out.append(e)
    step_ns = {g: float(np.median(np.concatenate(x))) for g, x in steps.items()}
    adjusted = benjamini_hochberg(np.array([e.p for e in out]))
    for e, q in zip(out, adjusted.tolist(), strict=True):
        e.p_adjusted = q
        floor = NOISE_FLOOR * step_ns.get(OUTSIDE if e.group == WHOLE else e.group, 0.0)
        one_run = e.a_ns == 0 or e.b_ns == 0
        big = abs(e.change_ns) >= (floor if one_run else max(min_change / 100 * e.a_ns, floor))
        e.significant = bool(q < ALPHA and big and e.change_ns != 0)
    return out


def collectives(d: Diff) -> dict[str, int]:
    """The collective op families of a member's diff (ops on a device's collective lane, NCCL
    kernels), each with how many devices run it (they wait side by side)."""
    out: dict[str, set[int]] = {}
    for run in (d.a, d.b):
        t = run.trace
        track = t.slices.track[run.work]
        unit = t.strings.lookup("collective")
        lane = (t.tracks.kind[track] == int(TrackKind.EXEC_UNIT)) & (t.tracks.name[track] == unit)
        for k in np.unique(run.op).tolist():
            sel = run.op == k
            name = d.op_names[k]
            if lane[sel].any() or nccl_kind(name) is not None:
                out.setdefault(name, set()).update(t.tracks.device[track[sel]].tolist())
    return {n: max(1, len(devs)) for n, devs in out.items()}


def _discount_waiting(pairs: dict[str, Diff], entries: list[MemberEntry]) -> None:
    """Set each member's collective and phase entries' own change: the waiting for the others left out."""
    if len(pairs) < 2:
        return
    coll = {m: collectives(d) for m, d in pairs.items()}
    by_key: dict[tuple[str, str], list[MemberEntry]] = {}
    for e in entries:
        if e.member is not None and e.kind == "op" and e.name in coll.get(e.member, {}):
            by_key.setdefault((e.group, e.name), []).append(e)
    waited: dict[tuple[str, str], float] = {}  # (member, group) → more time waited per iteration
    for (group, name), es in by_key.items():
        if len(es) < 2:
            continue
        shared = min(es, key=lambda x: abs(x.change_ns)).change_ns
        for e in es:
            e.own_ns = shared
            member = e.member or ""
            waited[(member, group)] = waited.get((member, group), 0.0) + (e.change_ns - shared) / coll[member][name]
    for e in entries:
        w = waited.get((e.member or "", e.group), 0.0)
        if e.kind == "phase" and e.member is not None and w:
            e.own_ns = e.change_ns - w if abs(e.change_ns - w) < abs(e.change_ns) else e.change_ns
            if np.sign(e.own_ns) != np.sign(e.change_ns):
                e.own_ns = 0.0
            e.detail = f"{_dur(w)} more waiting for the other {'hosts' if e.member.startswith('host') else 'ranks'}"


def _dur(ns: float) -> str:
    return ("+" if ns >= 0 else "−") + format_duration(abs(ns))


def summary(d: ClusterDiff) -> str:
    """One line: the member that changed most and what changed there (or no significant change)."""
    n = len(d.pairs) + len(d.only_a) + len(d.only_b)
    who = f"{n} {d.kind}"
    top = d.entries[0] if d.entries else None
    if top is None:
        return f"nothing to compare on the {who}"
    if not top.significant:
        where = f" on {top.member}" if top.member else ""
        return (f"no significant change on any of the {who} (largest: {describe(top)}{where}, within run-to-run "
                f"noise or below {d.min_change:g}%)")
    if top.member in d.only_a or top.member in d.only_b:
        return f"{top.member} {'missing' if top.member in d.only_a else 'new'}: {describe(top)}"
    if top.member is None:
        return f"whole run (median of the {who}): {describe(top)}"
    pair = d.pairs[top.member]
    text = pair.summary if pair.top is not None and _same(pair.top, top) else describe(top)
    return f"{top.member} changed most: {text}{_waiters(d, top.member)}"


def _same(e: Entry, m: MemberEntry) -> bool:
    return (e.kind, e.name, e.group) == (m.kind, m.name, m.group)


def _waiters(d: ClusterDiff, member: str) -> str:
    """"; host0 waits for it at gradients all_reduce (+606 µs)" when other members' collectives grew by waiting."""
    waits = [e for e in d.entries if e.kind == "op" and e.member not in (None, member) and e.significant
             and e.change_ns - e.own_ns > 0 and e.own_ns != e.change_ns]
    if not waits:
        return ""
    w = max(waits, key=lambda e: e.change_ns - e.own_ns)
    others = sorted({e.member for e in waits if e.member}, key=member_order)
    where = "" if len(others) == 1 else f" on {w.member}"
    return f"; {', '.join(others[:3])}{' …' if len(others) > 3 else ''} wait{'s' if len(others) == 1 else ''} " \
           f"for it at {w.name} ({_dur(w.change_ns)}{where})"


def member_order(name: str) -> tuple[int, str]:
    """Sort key of a member name: host2 < host10, rank 2 < rank 10."""
    digits = "".join(c for c in name if c.isdigit())
    return (int(digits) if digits else -1, name)
