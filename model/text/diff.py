"""A diff of two runs as ``accelview diff`` prints it: the one-line answer, the ranked changes
(significant first, "~" for no significant change), and the bottleneck mix of the step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .clip import distinct_cuts
from .values import MISSING, format_duration

if TYPE_CHECKING:
    from accelview.model.compare.diff import Diff
    from accelview.model.compare.entries import Entry

NAME_WIDTH = 44


def relative(a_ns: float, b_ns: float, decimals: int = 1) -> str:
    """B against A: "+52.0%", or "×291" once B is ten times A or more ("" when A is 0)."""
    if not a_ns:
        return ""
    if b_ns >= 10 * a_ns:
        return f"×{b_ns / a_ns:,.0f}"
    text = f"{100 * (b_ns - a_ns) / a_ns:+.{decimals}f}%"
    return "±" + text[1:] if float(text[1:-1]) == 0 else text.replace("-", "−")


def change_text(e: Entry, percent: bool = True) -> str:
    """"+1.90 ms (+52.0%)" (without the relative change unless ``percent``), or new / missing."""
    if e.status in ("new", "missing"):
        return e.status
    sign = "+" if e.change_ns >= 0 else "−"
    rel = relative(e.a_ns, e.b_ns)
    return f"{sign}{format_duration(abs(e.change_ns))}" + (f" ({rel})" if rel and percent else "")


def _interval(lo_hi: tuple[float, float] | None) -> str:
    return MISSING if lo_hi is None else f"{format_duration(lo_hi[0])}–{format_duration(lo_hi[1])}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def more_text(n: int) -> str:
    """The line under a cut list of changes: how many more, and where to see them."""
    return f"{n} more (--top to see them, --json for all)"


def format_diff(d: Diff, top: int = 20) -> str:
    """The diff as text for a terminal: the first ``top`` entries, then how many more."""
    spans = [r.trace.time_bounds() for r in (d.a, d.b)]
    lines = [d.summary, "",
             f"A: {d.a.trace.source} ({format_duration(spans[0][1] - spans[0][0])})",
             f"B: {d.b.trace.source} ({format_duration(spans[1][1] - spans[1][0])})"]
    if d.matched:  # the groups with the most time, with their iteration counts
        busiest = sorted(d.matched, key=lambda g: -int(d.a.groups[g].dur_ns.sum()))[:3]
        lines.append("iterations (A vs B): " + ", ".join(f"{_cut(g, 40)} {d.a.groups[g].n} vs {d.b.groups[g].n}"
                                                         for g in busiest)
                     + (f", {len(d.matched) - 3} more groups" if len(d.matched) > 3 else ""))
    lines += [f"note: {n}" for n in d.notes]
    rows = d.entries
    n_sig = sum(e.significant for e in d.entries)
    lines.append(f"\nChanges per iteration ({n_sig} significant of {len(d.entries)}; ~ = no significant change)")
    lines.append(f"  {'':2}{'kind':<14}{'name':<{NAME_WIDTH}}{'group':<18}{'A':>10}{'B':>10}  {'change':<24}"
                 f"{'A 95% interval':<22}")
    shown = rows[:top]
    names = distinct_cuts([e.name for e in shown], NAME_WIDTH - 1)
    groups = distinct_cuts([e.group for e in shown], 17)
    for e, name, group in zip(shown, names, groups, strict=True):
        mark = "*" if e.significant else "~"
        lines.append(f"  {mark} {e.kind:<14}{name:<{NAME_WIDTH}}{group:<18}"
                     f"{format_duration(e.a_ns):>10}{format_duration(e.b_ns):>10}  {change_text(e):<24}"
                     f"{_interval(e.a_ci):<22}")
    if len(rows) > top:
        lines.append(f"  … {more_text(len(rows) - top)}")
    if not rows:
        lines.append("  nothing to compare")
    group = d.entries[0].group if d.entries and d.entries[0].group in d.mix else "whole run"
    mix = d.mix.get(group, {})
    if mix:
        lines.append(f"\nBottleneck mix ({group}, per iteration)")
        for c, (x, y) in sorted(mix.items(), key=lambda kv: -max(kv[1])):
            lines.append(f"  {c:<16}{format_duration(x):>10}{format_duration(y):>10}  "
                         f"{'+' if y >= x else '−'}{format_duration(abs(y - x))}")
    return "\n".join(lines)
