"""Ops of two runs of one step matched one to one by name and place in the step's structure.

The op families of each run's step, in start order, are aligned as sequences (difflib's
matching blocks: the longest common runs first, in order, as TraceLens aligns call trees), so an
op inserted or renamed in one run is left unmatched there instead of shifting every later op.
Inside the stretches between matching blocks, and for steps too long to align, the k-th op of a
family in one run is matched to the k-th op of that family in the other."""

from __future__ import annotations

from difflib import SequenceMatcher

import numpy as np

ALIGN_MAX = 5000  # ops per step up to which the sequences are aligned (difflib is about quadratic)


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


def align(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Matched positions (ia, ib) of two sequences of op family ids, in order."""
    if len(a) > ALIGN_MAX or len(b) > ALIGN_MAX:
        return by_rank(a, b)
    ia: list[int] = []
    ib: list[int] = []
    matcher = SequenceMatcher(None, a.tolist(), b.tolist(), autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            ia.extend(range(a0, a1))
            ib.extend(range(b0, b1))
        elif tag == "replace":
            ra, rb = by_rank(a[a0:a1], b[b0:b1])
            ia.extend((ra + a0).tolist())
            ib.extend((rb + b0).tolist())
    return np.array(ia, np.int64), np.array(ib, np.int64)
