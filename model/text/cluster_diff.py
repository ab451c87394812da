"""A diff of two distributed runs as ``accelview diff DIR_A DIR_B`` prints it: the one-line
answer, the hosts or ranks compared with their iterations, and the ranked changes, each with
the host or rank it was measured on ("all" for the whole run's median across them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .diff import change_text
from .values import MISSING, format_duration

if TYPE_CHECKING:
    from accelview.model.compare.clusters import ClusterDiff, MemberEntry

NAME_WIDTH = 40


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def listed(d: ClusterDiff) -> list[MemberEntry]:
    """The entries worth listing: significant ones, new and missing things, and the rest whose
    change reaches ``min_change``."""
    return [e for e in d.entries if e.significant or e.status in ("new", "missing")
            or (e.change_pct is not None and abs(e.change_pct) >= d.min_change)]


def format_cluster_diff(d: ClusterDiff, top: int = 20) -> str:
    """The diff as text for a terminal; ``top`` bounds the changes listed."""
    lines = [d.summary, "", f"A: {d.a_label}", f"B: {d.b_label}"]
    for m, p in d.pairs.items():
        busiest = sorted(p.matched, key=lambda g: -int(p.a.groups[g].dur_ns.sum()))[:2]
        its = ", ".join(f"{_cut(g, 30)} {p.a.groups[g].n} vs {p.b.groups[g].n}" for g in busiest)
        lines.append(f"  {m}: iterations (A vs B) {its or MISSING}")
    lines += [f"  {m}: in A only (missing from B)" for m in d.only_a]
    lines += [f"  {m}: in B only (new)" for m in d.only_b]
    lines += [f"note: {n}" for n in d.notes]
    rows = listed(d)
    n_sig = sum(e.significant for e in d.entries)
    lines.append(f"\nChanges per iteration ({n_sig} significant of {len(d.entries)}; ~ = no significant change; "
                 f"{d.member_kind} all = median across the {d.kind})")
    lines.append(f"  {'':2}{'kind':<14}{d.member_kind:<9}{'name':<{NAME_WIDTH}}{'group':<16}{'A':>10}{'B':>10}  "
                 f"{'change':<24}detail")
    for e in rows[:top]:
        mark = "*" if e.significant else "~"
        lines.append(f"  {mark} {e.kind:<14}{_cut(e.member or 'all', 8):<9}{_cut(e.name, NAME_WIDTH - 1):<{NAME_WIDTH}}"
                     f"{_cut(e.group, 15):<16}{format_duration(e.a_ns):>10}{format_duration(e.b_ns):>10}  "
                     f"{change_text(e):<24}{_cut(e.detail, 60)}")
    if len(rows) > top:
        lines.append(f"  … {len(rows) - top} more (--top, --json)")
    if not rows:
        lines.append("  none beyond run-to-run noise")
    return "\n".join(lines)
