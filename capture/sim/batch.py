"""Bulk rows for a ``TraceBuilder``: slices, args, flows, instants and truth added as arrays.

Adding tens of thousands of slices one ``add_slice`` call at a time spends most of its time
in per-row bookkeeping; this gathers plain Python lists and hands the builder one batch per
table. Slices are referred to by their local index (order of addition) until ``flush``.
Use it on a fresh builder: argument-set ids are counted from 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from accelview.model import ArgKind, TraceBuilder

CATEGORIES = ("runtime", "host memcpy", "driver", "op", "copy", "pcie", "sync")
_ARG_COLUMNS = ("set", "key", "kind", "int", "real", "str")
_INT, _REAL, _STR = int(ArgKind.INT), int(ArgKind.REAL), int(ArgKind.STR)


class TraceBatch:
    """Rows gathered for one ``TraceBuilder``."""

    def __init__(self, builder: TraceBuilder) -> None:
        self.b = builder
        self.intern = builder.strings.intern
        columns = ("track", "start_ns", "dur_ns", "name", "category", "correlation", "args")
        self.slices: dict[str, list[int]] = {k: [] for k in columns}
        self.arg_rows: list[tuple[int, int, int, int, float, int]] = []
        self.arg_columns: list[dict[str, np.ndarray]] = []
        self.instants: dict[str, list[int]] = {k: [] for k in ("track", "ts_ns", "name", "category", "args")}
        self.flows: list[tuple[int, int, int]] = []
        self.truth_ops: list[tuple[int, int]] = []
        self._sets = 0
        self._known: dict[tuple, int] = {}
        for category in CATEGORIES:  # small ids: the slices' category column is int16
            self.intern(category)

    @property
    def arg_sets(self) -> int:
        """Argument sets made so far (their ids are 0 .. arg_sets - 1)."""
        return self._sets

    def add_args(self, args: Mapping[str, Any] | None, shared: bool = True) -> int:
        """An argument set; returns its id (-1 for none). Identical ``shared`` sets are stored once;
        pass ``shared=False`` for a set that :meth:`add_arg_column` will add to."""
        if not args and shared:
            return -1
        try:
            key_ = tuple(args.items()) if shared and args else None
            known = self._known.get(key_) if key_ is not None else None
        except TypeError:
            key_, known = None, None
        if known is not None:
            return known
        set_id = self._sets
        if key_ is not None:
            self._known[key_] = set_id
        self._sets += 1
        rows, intern = self.arg_rows, self.intern
        for key, value in (args or {}).items():
            k = intern(key)
            if isinstance(value, bool | int | np.integer):
                rows.append((set_id, k, _INT, int(value), 0.0, 0))
            elif isinstance(value, float | np.floating):
                rows.append((set_id, k, _REAL, 0, float(value), 0))
            else:
                rows.append((set_id, k, _STR, 0, 0.0, intern(str(value))))
        return set_id

    def _rows(self, args: Mapping[str, Any]) -> list[tuple[int, int, int, float, int]]:
        out, intern = [], self.intern
        for key, value in args.items():
            k = intern(key)
            if isinstance(value, bool | int | np.integer):
                out.append((k, _INT, int(value), 0.0, 0))
            elif isinstance(value, float | np.floating):
                out.append((k, _REAL, 0, float(value), 0))
            else:
                out.append((k, _STR, 0, 0.0, intern(str(value))))
        return out

    def add_sets(self, arg_dicts: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """One new argument set per mapping, not shared (so :meth:`add_arg_column` can add to each);
        returns their ids. Identical mappings are converted once: for many ops of few kinds."""
        n = len(arg_dicts)
        first = self._sets
        self._sets += n
        templates: dict[tuple, int] = {}
        rows_of: list[list[tuple[int, int, int, float, int]]] = []
        which = np.empty(n, dtype=np.int64)
        for i, a in enumerate(arg_dicts):
            key = tuple(a.items())
            t = templates.get(key)
            if t is None:
                t = templates[key] = len(rows_of)
                rows_of.append(self._rows(a))
            which[i] = t
        flat = [r for rows in rows_of for r in rows]
        if not flat:
            return first + np.arange(n)
        counts = np.array([len(r) for r in rows_of], dtype=np.int64)
        starts = np.cumsum(counts) - counts
        lengths = counts[which]
        pos = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths) + np.repeat(starts[which],
                                                                                                       lengths)
        cols = list(zip(*flat, strict=True))
        self.arg_columns.append({
            "set": np.repeat(first + np.arange(n), lengths).astype(np.int32),
            **{name: np.asarray(col)[pos] for name, col in zip(_ARG_COLUMNS[1:], cols, strict=True)}})
        return first + np.arange(n)

    def add_slice_rows(self, track: Sequence[int], start_ns: Sequence[int], dur_ns: Sequence[int],
                       names: Sequence[str], category: str, correlation: Sequence[int],
                       args: Sequence[int] | int = -1) -> int:
        """Many slices of one category at once (``args``: set ids, or one for all); returns the
        local index of the first."""
        s = self.slices
        first = len(s["track"])
        n = len(start_ns)
        intern = self.intern
        s["track"].extend(track)
        s["start_ns"].extend(start_ns)
        s["dur_ns"].extend(max(0, d) for d in dur_ns)
        s["name"].extend(intern(x) for x in names)
        s["category"].extend([intern(category)] * n)
        s["correlation"].extend(correlation)
        s["args"].extend([args] * n if isinstance(args, int) else args)
        return first

    def add_arg_column(self, sets: np.ndarray, key: str, values: np.ndarray) -> None:
        """Add ``key`` with one value per set in ``sets`` (an int or float array)."""
        n = len(sets)
        real = np.issubdtype(np.asarray(values).dtype, np.floating)
        zeros = np.zeros(n)
        self.arg_columns.append({
            "set": np.asarray(sets, dtype=np.int32), "key": np.full(n, self.intern(key), dtype=np.int32),
            "kind": np.full(n, _REAL if real else _INT, dtype=np.uint8),
            "int": zeros.astype(np.int64) if real else np.asarray(values, dtype=np.int64),
            "real": np.asarray(values, dtype=np.float64) if real else zeros,
            "str": np.zeros(n, dtype=np.int32),
        })

    def add_slice(self, track: int, start_ns: int, dur_ns: int, name: str, category: str = "",
                  correlation: int = -1, args: Mapping[str, Any] | int | None = None) -> int:
        """One slice; returns its local index. ``args``: a mapping, or a set id from :meth:`add_args`."""
        s = self.slices
        s["track"].append(track)
        s["start_ns"].append(int(start_ns))
        s["dur_ns"].append(max(0, int(dur_ns)))
        s["name"].append(self.intern(name))
        s["category"].append(self.intern(category))
        s["correlation"].append(correlation)
        s["args"].append(args if isinstance(args, int) else self.add_args(args))
        return len(s["track"]) - 1

    def add_flow(self, src: int, dst: int, name: str = "") -> None:
        """A flow between two slices given by local index."""
        self.flows.append((src, dst, self.intern(name)))

    def add_truth_op(self, local: int, limiter: str) -> None:
        """The true limiter of the op slice at local index ``local``."""
        self.truth_ops.append((local, self.intern(limiter)))

    def add_instant(self, track: int, ts_ns: int, name: str, category: str = "",
                    args: Mapping[str, Any] | None = None) -> None:
        """An instant event."""
        i = self.instants
        i["track"].append(track)
        i["ts_ns"].append(int(ts_ns))
        i["name"].append(self.intern(name))
        i["category"].append(self.intern(category))
        i["args"].append(self.add_args(args))

    def flush(self) -> None:
        """Hand everything to the builder."""
        b = self.b
        n = len(self.slices["track"])
        if n:
            cols = {k: np.asarray(v) for k, v in self.slices.items()}
            ids = b.add_slices(cols["track"], cols["start_ns"], cols["dur_ns"], cols["name"],
                               cols["category"], cols["correlation"], cols["args"])
        else:
            ids = np.empty(0, np.int64)
        if self.arg_rows:
            cols = list(zip(*self.arg_rows, strict=True))
            b.add_rows("args", {k: np.asarray(v) for k, v in zip(_ARG_COLUMNS, cols, strict=True)})
        for chunk in self.arg_columns:
            b.add_rows("args", chunk)
        if self.instants["track"]:
            b.add_rows("instants", {k: np.asarray(v) for k, v in self.instants.items()})
        if self.flows:
            f = np.asarray(self.flows, dtype=np.int64)
            b.add_rows("flows", {"src": ids[f[:, 0]], "dst": ids[f[:, 1]], "name": f[:, 2]})
        if self.truth_ops:
            t = np.asarray(self.truth_ops, dtype=np.int64)
            b.add_rows("truth_ops", {"slice": ids[t[:, 0]], "limiter": t[:, 1]})
