"""Repeated structure of a graph folded into groups: the same sequence of device work, repeated
back to back (32 layers of a decode step, 8 decode steps), becomes one group "×32" that
expands on demand.

The device work (ops, DMA jobs, transfers) in start order is a sequence of labels: the node's
kind and its name with every number replaced by ``#`` (``decode.layers.7.o_proj`` and
``decode.layers.8.o_proj`` are the same label). Tandem repeats are found from the shortest
period up (a numpy comparison of the sequence with itself shifted by the period); each run of
two or more copies becomes one symbol, and the search starts again on the shorter sequence, so
layers fold before the steps that hold them. Host calls, submissions and wake nodes join the
group of the device work they launched or waited for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .dag import DMA, LAUNCH, OP, SYNC, TRANSFER, OpGraph

DIGITS = re.compile(r"\d+")
WORD = re.compile(r"[\w-]+(?=\.)")
MAX_PERIOD = 4096


@dataclass
class Group:
    """One run of ``count`` back-to-back copies of the same block of device work."""

    label: str
    count: int
    parent: int  # the group whose copies hold this one, or -1
    first: int  # its device work: positions [first, last) of the work sequence
    last: int
    members: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # node indexes, all copies


@dataclass
class Groups:
    """The groups of one graph and, per node, the innermost group holding it (-1: none)."""

    groups: list[Group]
    innermost: np.ndarray

    def shown_as(self, expanded: set[int]) -> np.ndarray:
        """Per node: the collapsed group it is drawn as (-1: drawn as itself), when the groups
        in ``expanded`` show their contents and all others are folded."""
        rep = np.full(len(self.groups), -1, np.int64)
        for gi in range(len(self.groups) - 1, -1, -1):  # parents come after their children
            p = self.groups[gi].parent
            if p >= 0 and rep[p] >= 0:
                rep[gi] = rep[p]
            elif gi not in expanded:
                rep[gi] = gi
        inner = self.innermost
        if not len(rep):
            return np.full(len(inner), -1, np.int64)
        return np.where(inner >= 0, rep[np.maximum(inner, 0)], -1)


def _labels(g: OpGraph, work: np.ndarray) -> np.ndarray:
    """An integer label per work node: kind and name with digits folded."""
    names = g.trace.slices.name[g.slice_of[work]]
    uniq, inv = np.unique(names, return_inverse=True)
    folded = [DIGITS.sub("#", g.trace.strings[int(u)]) for u in uniq]
    keys = {(k, f): i for i, (k, f) in enumerate(sorted(set(zip(g.kind[work].tolist(),
                                                                 [folded[j] for j in inv], strict=True))))}
    return np.array([keys[(int(k), folded[j])] for k, j in zip(g.kind[work], inv, strict=True)], np.int64)


def _label_text(g: OpGraph, nodes: np.ndarray) -> str:
    """A group's name: what its first copy's names have in common; else the first part of a
    dotted name most of them share; else its first and last."""
    names = [DIGITS.sub("#", g.name(int(i))) for i in nodes]
    words = [m.group(0) if (m := WORD.match(nm)) else "" for nm in names]  # "decode" of "decode.embed"
    top = max(set(words), key=lambda w: (words.count(w), w))
    common = names[0]
    for nm in names[1:]:
        k = 0
        while k < min(len(common), len(nm)) and common[k] == nm[k]:
            k += 1
        common = common[:k]
    common = common.rstrip(". _-")
    if len(common) >= 3:
        return common
    if len(top) >= 2 and words.count(top) * 2 >= len(words):
        return f"{top} …"
    return names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"


def find_groups(g: OpGraph, max_period: int = MAX_PERIOD) -> Groups:
    """Fold the graph's repeated device work into groups (see the module's docstring)."""
    work = np.flatnonzero(np.isin(g.kind, (OP, DMA, TRANSFER)))
    seq = _labels(g, work) if len(work) else np.empty(0, np.int64)
    # Each item of the working sequence covers work positions [lo, hi).
    lo, hi = np.arange(len(seq)), np.arange(1, len(seq) + 1)
    groups: list[Group] = []
    item_group = np.full(len(seq), -1, np.int64)  # the group an item stands for (-1: one node)
    symbols: dict[tuple[int, ...], int] = {}
    next_symbol = int(seq.max()) + 1 if len(seq) else 0
    # A copy starts after the widest gap its run allows: a step starts where the host woke, not
    # with the previous step's last copy (gap before work position k: its start - all ends before).
    ws = g.start_ns[work]
    gap = ws - np.concatenate(([np.iinfo(np.int64).min // 2], np.maximum.accumulate(g.end_ns[work])[:-1]))
    p = 1
    while p <= min(len(seq) // 2, max_period):
        eq = seq[p:] == seq[:-p]
        runs = _runs(eq, p)
        if not runs:
            p += 1
            continue
        keep = np.ones(len(seq), bool)
        for i0, length in reversed(runs):  # from the right: earlier indexes stay valid
            copies = (length + p) // p
            spare = length + p - copies * p
            i = i0 + int(np.argmax(gap[lo[i0:i0 + spare + 1]]))
            block = tuple(seq[i:i + p].tolist())
            sym = symbols.setdefault(block, next_symbol)
            next_symbol += sym == next_symbol
            gi = len(groups)
            groups.append(Group("", copies, -1, int(lo[i]), int(hi[i + copies * p - 1])))
            inner = item_group[i:i + copies * p]
            for c in inner[inner >= 0]:
                groups[c].parent = gi
            seq[i], hi[i], item_group[i] = sym, hi[i + copies * p - 1], gi
            keep[i + 1:i + copies * p] = False
        seq, lo, hi, item_group = seq[keep], lo[keep], hi[keep], item_group[keep]
        p = 1
    innermost = np.full(len(g), -1, np.int64)
    for gi, grp in enumerate(groups):  # children first: an outer group claims only what is left
        nodes = work[grp.first:grp.last]
        free = innermost[nodes] < 0
        innermost[nodes[free]] = gi
    _attach_host(g, innermost)
    members: list[list[int]] = [[] for _ in groups]
    for v, gi in enumerate(innermost.tolist()):  # a node belongs to its group and every one around it
        while gi >= 0:
            members[gi].append(v)
            gi = groups[gi].parent
    for gi, grp in enumerate(groups):
        grp.members = np.array(members[gi], np.int64)
        span = (grp.last - grp.first) // grp.count
        grp.label = _label_text(g, work[grp.first:grp.first + span])
    return Groups(groups, innermost)


def _runs(eq: np.ndarray, p: int) -> list[tuple[int, int]]:
    """(start, length) of the runs of True in ``eq`` at least ``p`` long, left to right and not
    overlapping once each is widened by ``p`` (the copies it folds)."""
    if not eq.any():
        return []
    d = np.diff(np.concatenate(([0], eq.view(np.int8), [0])))
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
    out: list[tuple[int, int]] = []
    free_from = 0
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        s = max(s, free_from)
        length = ((e - s) // p) * p  # whole copies only
        if length >= p:
            out.append((s, length))
            free_from = s + length + p
    return out


def _attach_host(g: OpGraph, innermost: np.ndarray) -> None:
    """Host nodes join the group of the device work they launched (a call through its
    submission) or, for a wake node, of the work that woke it."""
    for _ in range(2):  # submission ← work, then call ← submission
        m = (g.etype == LAUNCH) & (innermost[g.src] < 0)
        # The first node it launched decides, grouped or not (a replay's submission launches
        # the step's first op, outside the layers that follow).
        o = np.lexsort((g.dst[m], g.src[m]))
        s, d = g.src[m][o], g.dst[m][o]
        first = np.ones(len(s), bool)
        first[1:] = s[1:] != s[:-1]
        innermost[s[first]] = innermost[d[first]]
    m = (g.etype == SYNC) & (innermost[g.dst] < 0) & (innermost[g.src] >= 0)
    innermost[g.dst[m]] = innermost[g.src[m]]
