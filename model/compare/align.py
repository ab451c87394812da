"""Ops of two runs of one step matched one to one by name and place in the step's structure.

The op families of each run's step, in launch order, are aligned as sequences (a longest common
subsequence by dynamic programming, as TraceLens aligns call trees), so an op inserted or renamed
in one run is left unmatched there instead of shifting every later op. Between the matches, and
for steps too long to align, the k-th op of a family in one run is matched to the k-th op of that
family in the other."""

from __future__ import annotations

import numpy as np

ALIGN_MAX = 5000  # ops per step up to which the sequences are aligned (the table is len(a) x len(b))


def by_rank(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (ia, ib), in the order of ``a``, pairing the k-th occurrence of each value in
    ``a`` with its k-th in ``b``. O(n) for small values (a radix sort)."""
    if not len(a) or not len(b):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    top = int(max(a.max(), b.max())) + 1

    def by_value(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        o = np.argsort(x.astype(np.int16) if top < 1 << 15 else x, kind="stable")
        count = np.bincount(x, minlength=top)
        first = np.concatenate(([0], np.cumsum(count)[:-1]))
        rank = np.arange(len(x)) - np.repeat(first, count)
        return o, x[o], rank

    oa, va, ra = by_value(a)
    ob, vb, rb = by_value(b)
    both = np.minimum(np.bincount(a, minlength=top), np.bincount(b, minlength=top))
    ka, kb = oa[ra < both[va]], ob[rb < both[vb]]  # the same (value, rank) order on both sides
    partner = np.full(len(a), -1, np.int64)
    partner[ka] = kb
    ia = np.flatnonzero(partner >= 0)
    return ia, partner[ia]


def lcs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (ia, ib) of a longest common subsequence of ``a`` and ``b``, by dynamic
    programming: row i of the table is the running maximum of max(row i-1, row i-1 shifted + match),
    so each row is a few numpy operations; the walk back is O(len(a) + len(b))."""
    n, m = len(a), len(b)
    table = np.zeros((n + 1, m + 1), np.int16 if max(n, m) < 1 << 15 else np.int32)
    for i in range(1, n + 1):
        prev = table[i - 1]
        cand = np.maximum(prev[1:], prev[:-1] + (b == a[i - 1]))
        table[i, 1:] = np.maximum.accumulate(cand)
    ia: list[int] = []
    ib: list[int] = []
    i, j = n, m
    while i > 0 and j > 0:
        if a[i - 1] == b[j - 1] and table[i, j] == table[i - 1, j - 1] + 1:
            ia.append(i - 1)
            ib.append(j - 1)
            i, j = i - 1, j - 1
        elif table[i - 1, j] >= table[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return np.array(ia[::-1], np.int64), np.array(ib[::-1], np.int64)


def align(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Matched positions (ia, ib) of two sequences of op family ids, in order."""
    if len(a) > ALIGN_MAX or len(b) > ALIGN_MAX:
        return by_rank(a, b)
    la, lb = lcs(a, b)
    ia: list[np.ndarray] = [la]
    ib: list[np.ndarray] = [lb]
    # Between consecutive matches, what is left of each family pairs up by occurrence.
    starts_a, starts_b = np.concatenate(([0], la + 1)), np.concatenate(([0], lb + 1))
    ends_a, ends_b = np.concatenate((la, [len(a)])), np.concatenate((lb, [len(b)]))
    for a0, a1, b0, b1 in zip(starts_a.tolist(), ends_a.tolist(), starts_b.tolist(), ends_b.tolist(), strict=True):
        if a1 > a0 and b1 > b0:
            ra, rb = by_rank(a[a0:a1], b[b0:b1])
            ia.append(ra + a0)
            ib.append(rb + b0)
    pa, pb = np.concatenate(ia), np.concatenate(ib)
    o = np.argsort(pa, kind="stable")
    return pa[o], pb[o]
