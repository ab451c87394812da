"""What the comparison view draws between the two timelines: the iteration both are aligned on,
and its ops matched one to one (each pair's start in both runs and how its duration changed),
with the ops of either run that have no partner."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .diff import Diff
from .entries import MATCH_MAX
from .runs import OUTSIDE


@dataclass
class IterationLinks:
    """One matched iteration of two runs, its windows (absolute ns) and its matched ops."""

    group: str
    a_window: tuple[int, int]
    b_window: tuple[int, int]
    a_slice: np.ndarray  # matched pairs, sorted by their start in A
    b_slice: np.ndarray
    a_start: np.ndarray
    b_start: np.ndarray
    ratio: np.ndarray  # B's duration over A's, per pair
    a_only: np.ndarray  # slice ids with no partner
    b_only: np.ndarray


def link_group(d: Diff) -> str | None:
    """The group the view aligns on: the top entry's, else the most repeated one in both runs."""
    if not d.matched:
        return None
    if d.entries and d.entries[0].group in d.matched:
        return d.entries[0].group
    inside = [g for g in d.matched if g != OUTSIDE] or list(d.matched)
    return max(inside, key=lambda g: (min(d.a.groups[g].n, d.b.groups[g].n), -inside.index(g)))


def iteration_links(d: Diff, group: str | None = None) -> IterationLinks | None:
    """The links of ``group`` (default :func:`link_group`); None when the runs share no group."""
    group = group or link_group(d)
    if group is None or group not in d.matched:
        return None
    m = d.matched[group]
    ga, gb = d.a.groups[group], d.b.groups[group]
    sa, sb = d.a.trace.slices, d.b.trace.slices
    ia, ib = m.a_work[m.pairs_a], m.b_work[m.pairs_b]
    o = np.argsort(sa.start_ns[ia], kind="stable")
    ia, ib = ia[o], ib[o]
    ratio = sb.dur_ns[ib] / np.maximum(sa.dur_ns[ia], 1)
    if max(len(m.a_work), len(m.b_work)) > MATCH_MAX:  # not matched op by op: no links, no "unmatched"
        a_only = b_only = np.empty(0, np.int64)
    else:
        a_only, b_only = np.setdiff1d(m.a_work, ia), np.setdiff1d(m.b_work, ib)
    k_a, k_b = m.a_occurrence, m.b_occurrence
    return IterationLinks(group, (int(ga.start_ns[k_a]), int(ga.end_ns[k_a])),
                          (int(gb.start_ns[k_b]), int(gb.end_ns[k_b])), ia, ib, sa.start_ns[ia], sb.start_ns[ib],
                          ratio, a_only, b_only)


def partner(links: IterationLinks, slice_id: int, in_a: bool) -> int:
    """The matched op of ``slice_id`` in the other run, or -1."""
    mine, other = (links.a_slice, links.b_slice) if in_a else (links.b_slice, links.a_slice)
    hit = np.flatnonzero(mine == slice_id)
    return int(other[hit[0]]) if len(hit) else -1
