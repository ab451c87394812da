"""The diff of two distributed runs, host by host or rank by rank, and across the whole run.

Members (hosts ``host0`` …, or ranks ``rank N``) are matched by name. Each matched pair is
compared as two single runs are (``compare``: its own iterations matched, its phase, op, lane,
critical-path and finding entries), each entry marked with its member. The whole run's op
entries pool every member's per-iteration times: the median per iteration across the members
(an op a member does not run counts 0 there), tested with the same rank test over the pooled
iterations. A member present in one run only is reported by its phases, new or missing. The
findings of each run's members read together (a straggler, from the hosts on one clock) are
compared per kind and the member they blame.

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
from accelview.model.analysis.findings import Finding
from accelview.model.schema import TrackKind
from accelview.model.text.values import format_duration
from accelview.model.trace import Trace

from .culprits import Culprits, culprit_of, culprits, news
from .diff import ALPHA, NOISE_FLOOR, TIER, Diff, compare
from .entries import KINDS, MIN_REPS, Entry, one_sided
from .explain import describe
from .families import Vocabulary
from .ranktests import benjamini_hochberg, mann_whitney, median_ci
from .runs import OUTSIDE, RunData, prepare

WHOLE = "whole run"
SHOWN_WAIT = 0.05  # a step's waiting is told in its detail when at least this share of its change


@dataclass
class MemberEntry(Entry):
    """An entry of a distributed diff: of one member (``member``: "host1", "rank 3"), or of the
    whole run across members (``member`` None). ``own_ns``: the change less the waiting for
    other members, which ranks it."""

    member: str | None = None
    member_kind: str = "host"  # the JSON field naming the member: host or rank
    own_ns: float = 0.0
    together: bool = False  # a finding of the members read together (a straggler), blaming ``member``

    def to_json(self) -> dict[str, Any]:
        """The documented entry, with its ``host`` or ``rank`` (null for the whole run)."""
        out = super().to_json()
        value: Any = self.member
        if self.member is not None and self.member_kind == "rank":
            value = int(self.member.split()[-1])
        out[self.member_kind] = value
        if self.own_ns != self.change_ns:
            out["own_change_ns"] = round(self.own_ns, 1)
        if self.together:
            out["across_" + ("hosts" if self.member_kind == "host" else "ranks")] = True
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
    culprits: tuple[Culprits, Culprits] = ({}, {})  # whom each run's findings read together blame

    @property
    def member_kind(self) -> str:
        """"host" or "rank"."""
        return "host" if self.kind == "hosts" else "rank"

    def to_json(self) -> dict[str, Any]:
        """The documented object of ``accelview diff --json``, with every entry."""
        return {"summary": self.summary, "a": self.a_label, "b": self.b_label, "members": self.kind,
                "min_change_pct": self.min_change,
                self.kind: {m: {"a": d.a.trace.source, "b": d.b.trace.source,
                                "iterations": {g: [d.a.groups[g].n, d.b.groups[g].n] for g in d.matched}}
                            for m, d in self.pairs.items()},
                "new": self.only_b, "missing": self.only_a,
                "entries": [e.to_json() for e in self.entries],
                "notes": self.notes}


def compare_members(kind: str, a: dict[str, Trace], b: dict[str, Trace], min_change: float = 1.0,
                    labels: tuple[str, str] = ("A", "B"),
                    findings: tuple[list[Finding], list[Finding]] = ([], [])) -> ClusterDiff:
    """Compare run B's members with run A's (``kind``: "hosts" or "ranks"; member name → trace;
    ``findings``: each run's findings of its members read together, as a straggler). Raises
    ``ValueError`` when the runs share no member."""
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
    entries += _run_findings(*findings, member_kind)
    _discount_waiting(pairs, entries)
    entries.sort(key=rank_key)
    d = ClusterDiff(kind, *labels, pairs, only_a, only_b, entries, min_change,
                    culprits=(culprits(findings[0], member_kind), culprits(findings[1], member_kind)))
    d.notes = [f"{m}: {n}" for m, p in pairs.items() for n in p.notes]
    d.summary = summary(d)
    return d


def rank_key(e: MemberEntry) -> tuple[bool, int, float, int, str, bool, str]:
    """Significant first, in the tiers of a single diff, by |own change|; a member's entry before the whole run's."""
    return (not e.significant, TIER[e.kind], -abs(e.own_ns), KINDS.index(e.kind), e.name, e.member is None,
            e.member or "")


def _run_findings(a: list[Finding], b: list[Finding], member_kind: str) -> list[MemberEntry]:
    """Findings of a whole run's members read together, per kind and culprit (a run can name several
    stragglers), marked with the member blamed: time lost in each run; one that appeared or went
    away is significant."""
    def keyed(fs: list[Finding]) -> dict[tuple[str, str], tuple[str | None, Finding]]:
        out: dict[tuple[str, str], tuple[str | None, Finding]] = {}
        for f in fs:
            member, who = culprit_of(f, member_kind)
            out.setdefault((f.kind, who), (member, f))
        return out

    ka, kb = keyed(a), keyed(b)
    out = []
    for key in sorted(set(ka) | set(kb)):
        (member, fa), (_, fb) = ka.get(key, (None, None)), kb.get(key, (None, None))
        member = member if fa is not None else kb[key][0]
        one = fa is None or fb is None
        e = Entry("finding", key[0], WHOLE, float(fa.time_lost_ns if fa else 0), float(fb.time_lost_ns if fb else 0),
                  test="present in one run only" if one else "", p=0.0 if one else 1.0, significant=one,
                  detail=(fb or fa).summary if (fb or fa) else "")
        m = _marked(e, member, member_kind)
        m.together = True
        out.append(m)
    return out


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
        e = Entry("op", name, g, ma, mb, a_ci=(a_lo, a_hi), b_ci=(b_lo, b_hi),
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
        floor = NOISE_FLOOR * step_ns.get(e.group, 0.0)
        one_run = e.a_ns == 0 or e.b_ns == 0
        big = abs(e.change_ns) >= (floor if one_run else max(min_change / 100 * e.a_ns, floor))
        e.significant = bool(q < ALPHA and big and e.change_ns != 0)
    return out


def collective_ops(d: Diff) -> np.ndarray:
    """Per op family of a member's diff (``d.op_names``): whether it is a collective (ops on a
    device's collective lane, NCCL kernels)."""
    out = np.array([nccl_kind(n) is not None for n in d.op_names], bool)
    for run in (d.a, d.b):
        t = run.trace
        track = t.slices.track[run.work]
        unit = t.strings.lookup("collective")
        on_lane = (t.tracks.kind[track] == int(TrackKind.EXEC_UNIT)) & (t.tracks.name[track] == unit)
        out[np.unique(run.op[on_lane])] = True
    return out


def per_device(run: RunData, group: str, wanted: np.ndarray) -> dict[tuple[int, int], float]:
    """(op family, device) → median time per iteration of the group, for the op families ``wanted``."""
    g = run.groups[group]
    t = run.trace
    device = t.tracks.device[t.slices.track[run.work]].astype(np.int64)
    occ = np.zeros(len(run.work), np.int64) if g.everything else g.occ.astype(np.int64)
    sel = wanted[run.op] & (occ >= 0)
    out = {}
    for k, dev in set(zip(run.op[sel].tolist(), device[sel].tolist(), strict=True)):
        m = sel & (run.op == k) & (device == dev)
        out[(k, dev)] = float(np.median(np.bincount(occ[m], weights=run.dur[m], minlength=g.n)))
    return out


def _own(change: float, waited: float) -> float:
    """A change less the waiting in it, never past zero (waiting explains at most all of it)."""
    if change * waited <= 0:
        return change
    return change - waited if abs(waited) < abs(change) else 0.0


def _discount_waiting(pairs: dict[str, Diff], entries: list[MemberEntry]) -> None:
    """Set the own change of the collective and phase entries: per collective and device, the
    part of its change every participant shares (the smallest, by size) is the collective's own;
    the rest is waiting for the others. A member's step waited as long as the least-waiting of
    its devices; the whole run's collective, as the median member."""
    deltas: dict[tuple[str, str], dict[tuple[str, int], float]] = {}  # (group, op) → (member, device) → change
    for m, d in pairs.items():
        wanted = collective_ops(d)
        if not wanted.any():
            continue
        for g in d.matched:
            xa, xb = per_device(d.a, g, wanted), per_device(d.b, g, wanted)
            for k, dev in set(xa) | set(xb):
                change = xb.get((k, dev), 0.0) - xa.get((k, dev), 0.0)
                deltas.setdefault((g, d.op_names[k]), {})[(m, dev)] = change
    op_wait: dict[tuple[str, str, str], float] = {}  # (member, group, op) → summed over its devices
    step_wait: dict[tuple[str, str], float] = {}  # (member, group) → waited by the step
    for (g, name), by_device in deltas.items():
        if len(by_device) < 2:
            continue
        shared = min(by_device.values(), key=abs)
        per_member: dict[str, list[float]] = {}
        for (m, _), change in by_device.items():
            per_member.setdefault(m, []).append(change - shared)
        for m, waits in per_member.items():
            op_wait[(m, g, name)] = sum(waits)
            step_wait[(m, g)] = step_wait.get((m, g), 0.0) + min(waits, key=abs)
    for e in entries:
        g = e.group
        if e.kind == "op" and e.member is not None:
            w = op_wait.get((e.member, g, e.name), 0.0)
            e.own_ns = _own(e.change_ns, w)
            if w and abs(w) >= SHOWN_WAIT * abs(e.change_ns):
                e.detail = f"{_dur(w)} of it waiting for the other {_plural(e.member)}"
        elif e.kind == "op":
            waits = [w for (m, grp, n), w in op_wait.items() if grp == g and n == e.name]
            e.own_ns = _own(e.change_ns, float(np.median(waits)) if waits else 0.0)
        elif e.kind == "phase" and e.member is not None and step_wait.get((e.member, e.group)):
            w = step_wait[(e.member, e.group)]
            e.own_ns = _own(e.change_ns, w)
            if abs(w) >= SHOWN_WAIT * abs(e.change_ns):
                e.detail = f"{_dur(w)} more waiting for the other {_plural(e.member)}"


def _plural(member: str) -> str:
    return "hosts" if member.startswith("host") else "ranks"


def _dur(ns: float) -> str:
    return ("+" if ns >= 0 else "−") + format_duration(abs(ns))


def summary(d: ClusterDiff) -> str:
    """One line: the member that changed most and what changed there (or no significant change),
    and who the run's findings read together blame now (a straggler that appeared, went away, moved)."""
    n = len(d.pairs) + len(d.only_a) + len(d.only_b)
    who = f"{n} {d.kind}"
    top = d.entries[0] if d.entries else None
    if top is None:
        return f"nothing to compare on the {who}"
    if not top.significant:
        where = f" on {top.member}" if top.member else ""
        return (f"no significant change on any of the {who} (largest: {describe(top)}{where}, within run-to-run "
                f"noise or below {d.min_change:g}%)")
    blamed = "".join(f"; {x}" for x in news(*d.culprits))
    if top.member in d.only_a or top.member in d.only_b:
        return f"{top.member} {'missing' if top.member in d.only_a else 'new'}: {describe(top)}{blamed}"
    if top.member is None:
        return f"whole run (median of the {who}): {describe(top)}{blamed}"
    pair = d.pairs[top.member]
    text = pair.summary if pair.top is not None and _same(pair.top, top) else describe(top)
    return f"{top.member} changed most: {text}{_waiters(d, top.member)}{blamed}"


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
