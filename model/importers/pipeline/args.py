"""Argument sets as typed rows: (set, key, kind, int, real, str) columns, strings as local ids.

Values are typed in bulk: integers within int64 are INT (bools too), floats REAL, strings
STR, anything else (lists, objects, null, huge integers) STR holding its JSON text. Sets that
share their keys are typed a key at a time, in numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from typing import Any

import msgspec
import numpy as np

from ...schema import ArgKind
from .interner import Interner

_KIND = {int: int(ArgKind.INT), bool: int(ArgKind.INT), float: int(ArgKind.REAL)}
_encode = msgspec.json.encode
ARG_COLUMNS = ("set", "key", "kind", "int", "real", "str")
MIN_GROUP = 8  # sets sharing one key layout that are typed column by column (fewer: value by value)
Intern = Callable[[list[str]], np.ndarray]


def dict_rows(sets: list[dict[str, Any]], intern: Intern, first_set: int = 0) -> dict[str, np.ndarray]:
    """Rows of non-empty argument dicts, numbered from ``first_set``; ``intern`` turns keys and
    string values into ids. Sets with the same keys (most of a trace's) are typed a column
    (one key) at a time, each column at once when its values are all of one kind."""
    n = len(sets)
    sizes = np.fromiter(map(len, sets), dtype=np.int64, count=n)
    starts = np.cumsum(sizes) - sizes
    total = int(sizes.sum())
    cols = {"set": np.repeat(np.arange(first_set, first_set + n, dtype=np.int32), sizes),
            "key": np.zeros(total, np.int32), "kind": np.zeros(total, np.uint8), "int": np.zeros(total, np.int64),
            "real": np.zeros(total, np.float64), "str": np.zeros(total, np.int32)}
    layouts = Interner()
    layout = layouts.ids([tuple(a) for a in sets])
    order = np.argsort(layout, kind="stable")
    loose: list[int] = []  # sets of small groups
    for group in np.split(order, np.flatnonzero(np.diff(layout[order])) + 1):
        if len(group) < MIN_GROUP:
            loose += group.tolist()
            continue
        members = group.tolist()
        key_ids = intern(list(sets[members[0]])).tolist()
        rows = starts[group]
        for p, column in enumerate(zip(*[tuple(sets[i].values()) for i in members], strict=True)):
            cols["key"][rows + p] = key_ids[p]
            _put_column(cols, rows + p, column, intern)
    if loose:
        loose.sort()
        rows = np.concatenate([np.arange(starts[i], starts[i] + sizes[i]) for i in loose])
        cols["key"][rows] = intern([k for i in loose for k in sets[i]])
        _put_values(cols, rows, [v for i in loose for v in sets[i].values()], intern)
    return cols


def _put_column(cols: dict[str, np.ndarray], rows: np.ndarray, column: tuple, intern: Intern) -> None:
    """Type the values of one key: at once when all are integers, all floats or all strings."""
    types = set(map(type, column))
    try:
        if types <= {int, bool}:
            cols["int"][rows] = np.array(column, dtype=np.int64)
            cols["kind"][rows] = ArgKind.INT
            return
    except OverflowError:  # an integer beyond int64: value by value
        pass
    if types == {float}:
        cols["real"][rows] = np.array(column, dtype=np.float64)
        cols["kind"][rows] = ArgKind.REAL
    elif types == {str}:
        cols["str"][rows] = intern(list(column))
        cols["kind"][rows] = ArgKind.STR
    else:
        _put_values(cols, rows, list(column), intern)


def _put_values(cols: dict[str, np.ndarray], rows: np.ndarray, values: list[Any], intern: Intern) -> None:
    """Type values one by one: integers within int64 INT (bools too), floats REAL, strings STR,
    anything else (lists, objects, null, huge integers) STR holding its JSON text."""
    kind = np.fromiter(map(_KIND.get, map(type, values), repeat(int(ArgKind.STR))), dtype=np.uint8, count=len(values))
    idx = np.flatnonzero(kind == ArgKind.INT).tolist()
    try:
        cols["int"][rows[idx]] = [values[i] for i in idx]
    except OverflowError:  # integers beyond int64 are kept as text
        kind[[i for i in idx if not -(2**63) <= values[i] < 2**63]] = ArgKind.STR
        idx = np.flatnonzero(kind == ArgKind.INT).tolist()
        cols["int"][rows[idx]] = [values[i] for i in idx]
    idx = np.flatnonzero(kind == ArgKind.REAL).tolist()
    cols["real"][rows[idx]] = [values[i] for i in idx]
    idx = np.flatnonzero(kind == ArgKind.STR).tolist()
    text = [v if type(v) is str else _encode(v).decode() for v in map(values.__getitem__, idx)]
    cols["str"][rows[idx]] = intern(text)
    cols["kind"][rows] = kind


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
