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
    """Positions (ia, ib) pairing the k-th occurrence of each value in ``a`` with its k-th in ``b``."""

    def keys(x: np.ndarray) -> np.ndarray:
        o = np.argsort(x, kind="stable")
        xs = x[o]
        first = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1]))) if len(xs) else np.empty(0, np.int64)
        rank = np.arange(len(xs)) - np.repeat(first, np.diff(np.concatenate((first, [len(xs)]))))
        out = np.empty(len(x), np.int64)
        out[o] = xs.astype(np.int64) * (len(a) + len(b) + 1) + rank
        return out

    _, ia, ib = np.intersect1d(keys(a), keys(b), assume_unique=True, return_indices=True)
    o = np.argsort(ia, kind="stable")
    return ia[o].astype(np.int64), ib[o].astype(np.int64)


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
