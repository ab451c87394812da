"""Bulk rows for a ``TraceBuilder``: slices, args, op counters, flows, instants and truth added as arrays.

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
from accelview.model.schema import ARGS, OP_COUNTER_COLUMNS

CATEGORIES = ("runtime", "host memcpy", "driver", "op", "copy", "pcie", "sync")
_INT, _REAL, _STR = int(ArgKind.INT), int(ArgKind.REAL), int(ArgKind.STR)


class TraceBatch:
    """Rows gathered for one ``TraceBuilder``."""

    def __init__(self, builder: TraceBuilder) -> None:
        self.b = builder
        self.intern = builder.strings.intern
        columns = ("track", "start_ns", "dur_ns", "name", "category", "correlation", "args")
        self.slices: dict[str, list[int]] = {k: [] for k in columns}
        self.arg_rows: list[tuple[int, int, int, int, float, int]] = []
        self.instants: dict[str, list[int]] = {k: [] for k in ("track", "ts_ns", "name", "category", "args")}
        self.flows: list[tuple[int, int, int]] = []
        self.truth_ops: list[tuple[int, int]] = []
        # rows added as columns (graph replays), after the listed rows of the same table up to then
        self.slice_chunks: list[dict[str, np.ndarray]] = []
        self._sealed = 0  # slices in slice_chunks
        self.flow_chunks: list[np.ndarray] = []  # (3, n): local src, local dst, name
        self.truth_chunks: list[np.ndarray] = []  # (2, n): local slice, limiter
        self.op_counter_chunks: list[tuple[np.ndarray, Mapping[str, np.ndarray]]] = []  # local slices, columns
        self._sets = 0
        self._known: dict[tuple, int] = {}
        self._ids = np.empty(0, np.int64)  # the builder's id of each slice, by local index (set by flush)
        for category in CATEGORIES:  # small ids: the slices' category column is int16
            self.intern(category)

    @property
    def arg_sets(self) -> int:
        """Argument sets made so far (their ids are 0 .. arg_sets - 1)."""
        return self._sets

    def add_args(self, args: Mapping[str, Any] | None) -> int:
        """An argument set; returns its id (-1 for none). Identical sets are stored once."""
        if not args:
            return -1
        try:
            key_: tuple | None = tuple(args.items())
            known = self._known.get(key_)
        except TypeError:  # unhashable values: a set of its own
            key_, known = None, None
        if known is not None:
            return known
        set_id = self._sets
        if key_ is not None:
            self._known[key_] = set_id
        self._sets += 1
        self.arg_rows.extend((set_id, *row) for row in self._rows(args))
        return set_id

    def _rows(self, args: Mapping[str, Any]) -> list[tuple[int, int, int, float, int]]:
        out, intern = [], self.intern
        for key, value in args.items():
            k = intern(key)
            kind = type(value)
            if kind is int:  # the usual kinds first, without the isinstance chain
                out.append((k, _INT, value, 0.0, 0))
            elif kind is str:
                out.append((k, _STR, 0, 0.0, intern(value)))
            elif isinstance(value, bool | int | np.integer):
                out.append((k, _INT, int(value), 0.0, 0))
            elif isinstance(value, float | np.floating):
                out.append((k, _REAL, 0, float(value), 0))
            else:
                out.append((k, _STR, 0, 0.0, intern(str(value))))
        return out

    @property
    def slice_count(self) -> int:
        """Slices added so far (the next one's local index)."""
        return self._sealed + len(self.slices["track"])

    def _seal(self) -> None:
        """Move the listed slices into a column chunk (so columns can follow them in order)."""
        s = self.slices
        if s["track"]:
            self.slice_chunks.append({k: np.asarray(v) for k, v in s.items()})
            self._sealed += len(s["track"])
            for v in s.values():
                v.clear()

    def add_slice_columns(self, track: np.ndarray, start_ns: np.ndarray, dur_ns: np.ndarray, name: np.ndarray,
                          category: str, correlation: int | np.ndarray, args: np.ndarray) -> int:
        """Many slices as columns (``name``: interned ids; one category for all); returns the local
        index of the first."""
        self._seal()
        first, n = self._sealed, len(start_ns)
        self.slice_chunks.append({
            "track": np.asarray(track), "start_ns": np.asarray(start_ns, dtype=np.int64),
            "dur_ns": np.maximum(0, np.asarray(dur_ns, dtype=np.int64)), "name": np.asarray(name),
            "category": np.full(n, self.intern(category)),
            "correlation": np.broadcast_to(np.asarray(correlation, dtype=np.int64), (n,)).copy(),
            "args": np.asarray(args)})
        self._sealed += n
        return first

    def add_flow_columns(self, src: np.ndarray, dst: np.ndarray, name: str) -> None:
        """Flows between slices given by local index, as columns."""
        src, dst = np.broadcast_arrays(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64))
        self.flow_chunks.append(np.stack([src, dst, np.full(len(src), self.intern(name), dtype=np.int64)]))

    def add_op_counters(self, local: np.ndarray, columns: Mapping[str, np.ndarray]) -> None:
        """The device's counters of the op slices at local indices ``local``: a column per counter
        of the ``op_counters`` table (``OP_COUNTER_COLUMNS``)."""
        self.op_counter_chunks.append((np.asarray(local, dtype=np.int64), columns))

    def add_truth_op_columns(self, local: np.ndarray, limiter: np.ndarray) -> None:
        """True limiters (interned ids) of the op slices at local indices ``local``."""
        self.truth_chunks.append(np.stack([np.asarray(local, dtype=np.int64), np.asarray(limiter, dtype=np.int64)]))

    def add_slice_ids(self, track: int | Sequence[int], start_ns: Sequence[int], dur_ns: Sequence[int],
                      names: Sequence[int], category: str, correlation: Sequence[int] | int = -1,
                      args: Sequence[int] | int = -1) -> int:
        """Many slices of one category, names and argument sets given as ids (ints, in lists);
        returns the local index of the first."""
        s = self.slices
        first = self.slice_count
        n = len(start_ns)
        s["track"].extend([track] * n if isinstance(track, int) else track)
        s["start_ns"].extend(start_ns)
        s["dur_ns"].extend(np.maximum(0, np.asarray(dur_ns, dtype=np.int64)).tolist())
        s["name"].extend(names)
        s["category"].extend([self.intern(category)] * n)
        s["correlation"].extend([correlation] * n if isinstance(correlation, int) else correlation)
        s["args"].extend([args] * n if isinstance(args, int) else args)
        return first

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
        return self.slice_count - 1

    def slice_ids(self, local: np.ndarray) -> np.ndarray:
        """The builder's ids of the slices at local indices ``local`` (once :meth:`flush` has run)."""
        return self._ids[np.asarray(local, dtype=np.int64)]

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
        self._seal()
        if self.slice_chunks:
            cols = {k: np.concatenate([c[k] for c in self.slice_chunks]) for k in self.slices}
            ids = b.add_slices(cols["track"], cols["start_ns"], cols["dur_ns"], cols["name"],
                               cols["category"], cols["correlation"], cols["args"])
        else:
            ids = np.empty(0, np.int64)
        self._ids = ids
        self._flush_args()
        if self.instants["track"]:
            b.add_rows("instants", {k: np.asarray(v) for k, v in self.instants.items()})
        flows = [np.asarray(self.flows, dtype=np.int64).reshape(-1, 3).T, *self.flow_chunks]
        f = np.concatenate(flows, axis=1)
        if f.shape[1]:
            b.add_rows("flows", {"src": ids[f[0]], "dst": ids[f[1]], "name": f[2]})
        if self.op_counter_chunks:
            chunks = self.op_counter_chunks
            one = len(chunks) == 1
            cols = {c: np.asarray(chunks[0][1][c], dtype=d) if one else
                    np.concatenate([np.asarray(cc[c], dtype=d) for _, cc in chunks]) for c, d in OP_COUNTER_COLUMNS}
            local = chunks[0][0] if one else np.concatenate([lc for lc, _ in chunks])
            b.add_rows("op_counters", {"slice": ids[local], **cols}, copy=False)
        truth = [np.asarray(self.truth_ops, dtype=np.int64).reshape(-1, 2).T, *self.truth_chunks]
        t = np.concatenate(truth, axis=1)
        if t.shape[1]:
            b.add_rows("truth_ops", {"slice": ids[t[0]], "limiter": t[1]})

    def _flush_args(self) -> None:
        """Every argument set into one set of args columns, in set order."""
        listed = self.arg_rows
        if listed:
            self.b.add_rows("args", {name: np.asarray(col, dtype=dtype) for (name, dtype), col in zip(
                ARGS.columns, zip(*listed, strict=True), strict=True)}, copy=False)
