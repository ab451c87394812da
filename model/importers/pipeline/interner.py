"""Local string (or key) tables: value → small int id, in order of first use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class Interner(dict):
    """A local value → id table (ids in order of first use)."""

    def id(self, value: Any) -> int:
        """The id of ``value``, adding it when new."""
        i = self.get(value)
        if i is None:
            i = self[value] = len(self)
        return i

    def ids(self, values: Sequence) -> np.ndarray:
        """Ids of many values as int32: new ones are added in order, then one C-level look-up each."""
        for v in dict.fromkeys(values):
            if v not in self:
                self[v] = len(self)
        return np.array(list(map(self.__getitem__, values)), dtype=np.int32)  # faster than fromiter on a map

    def pair_ids(self, first: Sequence, second: Sequence) -> np.ndarray:
        """Ids of (first[i], second[i]) pairs. Integer pairs are grouped in numpy first, so new
        ones are added in sorted order; pairs holding other values in order of first use."""
        a, b = np.asarray(first), np.asarray(second)
        if not len(a):
            return np.empty(0, dtype=np.int32)
        if a.dtype.kind != "i" or b.dtype.kind != "i" or a.ndim != 1 or b.ndim != 1:  # strings, huge integers
            return self.ids(list(zip(first, second, strict=True)))
        starts = np.flatnonzero(np.concatenate(([True], (a[1:] != a[:-1]) | (b[1:] != b[:-1]))))
        if len(starts) * 4 < len(a):  # long runs of one pair (events of a thread come together): one per run
            return np.repeat(self.pair_ids(a[starts], b[starts]), np.diff(np.append(starts, len(a))))
        ua, ia = np.unique(a, return_inverse=True)
        ub, ib = np.unique(b, return_inverse=True)
        keys, inv = np.unique(ia.astype(np.int64) * len(ub) + ib, return_inverse=True)
        ua_l, ub_l = ua.tolist(), ub.tolist()
        ids = np.asarray([self.id((ua_l[k // len(ub_l)], ub_l[k % len(ub_l)])) for k in keys.tolist()], dtype=np.int32)
        return ids[inv.reshape(-1)]
