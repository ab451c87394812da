"""Argument sets as typed rows: (set, key, kind, int, real, str) columns, strings as local ids.

Values are typed in bulk: integers within int64 are INT (bools too), floats REAL, strings
STR, anything else (lists, objects, null, huge integers) STR holding its JSON text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

import msgspec
import numpy as np

from ..schema import ArgKind

_KIND = {int: int(ArgKind.INT), bool: int(ArgKind.INT), float: int(ArgKind.REAL)}
_encode = msgspec.json.encode
ARG_COLUMNS = ("set", "key", "kind", "int", "real", "str")


def typed_rows(sizes: Sequence[int], keys: list[str], values: list[Any],
               intern: Callable[[list[str]], np.ndarray], first_set: int = 0) -> dict[str, np.ndarray]:
    """Rows of consecutive argument sets (``sizes[i]`` keys each, numbered from ``first_set``);
    ``intern`` turns keys and string values into ids."""
    n = len(values)
    kind = np.fromiter(map(_KIND.get, map(type, values), repeat(int(ArgKind.STR))), dtype=np.uint8, count=n)
    ints = np.zeros(n, dtype=np.int64)
    reals = np.zeros(n, dtype=np.float64)
    strs = np.zeros(n, dtype=np.int32)
    idx = np.flatnonzero(kind == ArgKind.INT).tolist()
    picked = [values[i] for i in idx]
    try:
        ints[idx] = picked
    except OverflowError:  # integers beyond int64 are kept as text
        big = [i for i, v in zip(idx, picked, strict=True) if not -(2**63) <= v < 2**63]
        kind[big] = ArgKind.STR
        idx = np.flatnonzero(kind == ArgKind.INT).tolist()
        ints[idx] = [values[i] for i in idx]
    idx = np.flatnonzero(kind == ArgKind.REAL).tolist()
    reals[idx] = [values[i] for i in idx]
    idx = np.flatnonzero(kind == ArgKind.STR).tolist()
    strs[idx] = intern([v if type(v) is str else _encode(v).decode() for v in map(values.__getitem__, idx)])
    sets = np.repeat(np.arange(first_set, first_set + len(sizes), dtype=np.int32), sizes)
    return {"set": sets, "key": intern(keys), "kind": kind, "int": ints, "real": reals, "str": strs}


def dict_rows(sets: list[dict[str, Any]], intern: Callable[[list[str]], np.ndarray],
              first_set: int = 0) -> dict[str, np.ndarray]:
    """Rows of non-empty argument dicts, numbered from ``first_set``."""
    keys = [k for a in sets for k in a]
    values = [v for a in sets for v in a.values()]
    return typed_rows(list(map(len, sets)), keys, values, intern, first_set)


class ArgColumns:
    """One file's argument sets, as chunks of typed rows whose string columns are ids of
    ``intern``'s table. Sets added one by one wait as dicts until ``flush``."""

    def __init__(self, intern: Callable[[list[str]], np.ndarray]) -> None:
        self.intern = intern
        self.n_sets = 0
        self.chunks: list[dict[str, np.ndarray]] = []
        self._pending: list[dict[str, Any]] = []

    def add(self, args: dict[str, Any]) -> int:
        """Store one argument set; returns its id, -1 for an empty one."""
        if not args:
            return -1
        self._pending.append(args)
        self.n_sets += 1
        return self.n_sets - 1

    def add_rows(self, rows: dict[str, np.ndarray], n_sets: int) -> int:
        """Store ``n_sets`` sets given as rows numbered from 0 (ids already of this table);
        returns the id their set 0 gets."""
        self.flush()
        base = self.n_sets
        if len(rows["set"]):
            self.chunks.append({**rows, "set": rows["set"] + np.int32(base)})
        self.n_sets += n_sets
        return base

    def flush(self) -> None:
        """Type the pending sets into a chunk."""
        if self._pending:
            self.chunks.append(dict_rows(self._pending, self.intern, self.n_sets - len(self._pending)))
            self._pending = []

    def columns(self) -> dict[str, np.ndarray]:
        """All rows as the args table's columns (empty dict when there are none)."""
        self.flush()
        return {k: np.concatenate([c[k] for c in self.chunks]) for k in ARG_COLUMNS} if self.chunks else {}
