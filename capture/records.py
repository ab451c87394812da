"""The simulator's raw records as they travel from the profiled child to the capture service.

The child does as little as it can per record: a drain's host calls, submissions and device
commands (:class:`~.sim.drain.Drained`) become a handful of numpy columns (times, ids,
codes) and a small pickled side part (what repeats is sent once and referred to by number:
names, argument sets, op cost templates; what is rare goes as it is: DMA jobs, graph
replays, progress segments). The service rebuilds the records and turns them into the
capture's rows (:mod:`.collector`) on its own core. ``RecordPacker`` (child) and
``RecordUnpacker`` (service) keep the numbering in step; each ``pack`` depends on the
ones before it, as frames do.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
from collections.abc import Callable
from itertools import chain, repeat
from operator import attrgetter
from typing import Any

import numpy as np

from .sim.costs import OpCost
from .sim.drain import Drained
from .sim.engine import Command
from .sim.hostlog import ApiCall, Submission

CAUSES = ("", "host", "pcie", "sync", "resource")
_CAUSE = {k: i for i, k in enumerate(CAUSES)}
_NO_SEGMENT = (np.nan, np.nan, np.nan, np.nan)
# (column, attribute, dtype); dtype None: handed back as a tuple of objects under "<column>_"
_CALL_FIELDS = (("start", "start_ns", np.int64), ("end", "end_ns", np.int64), ("name", "name", None),
                ("cid", "cid", np.int64), ("args", "args", None))
_SUBMISSION_FIELDS = (("device", "device", np.int16), ("stream", "stream", np.int32),
                      ("submit", "submit_ns", np.int64), ("visible", "visible_ns", np.int64),
                      ("name", "name", None), ("cid", "cid", np.int64), ("chunk", "chunk", np.int32))
_OP_FIELDS = (("cid", "cid", np.int64), ("stream", "stream", np.int32), ("name", "name", None),
              ("cost", "cost", None), ("args", "args", None), ("start", "start_ns", np.float64),
              ("end", "end_ns", np.float64), ("cause", "cause", None), ("segments", "segments", None))
_KIND_OF, _COST_OF = attrgetter("kind"), attrgetter("cost")
_WORK_OF, _JITTER_OF = attrgetter("work"), attrgetter("jitter")


def _columns(prefix: str, records: list, fields: tuple) -> dict[str, Any]:
    """The fields of ``records`` as columns, read in C (``attrgetter``, or the tuples themselves) and
    transposed with ``zip``."""
    if not records:
        return {f"{prefix}_{c}" + ("_" if t is None else ""): (np.empty(0, t) if t is not None else ())
                for c, _, t in fields}
    if isinstance(records[0], tuple):  # named tuples whose fields are ``fields``, in order
        columns = zip(*records, strict=True)
    else:
        columns = zip(*map(attrgetter(*(a for _, a, _ in fields)), records), strict=True)
    return {f"{prefix}_{c}" + ("_" if t is None else ""): (np.array(v, dtype=t) if t is not None else v)
            for (c, _, t), v in zip(fields, columns, strict=True)}


class _Numbering:
    """Numbers distinct values (new ones are collected for the next frame), by ``key(value)``;
    with ``by_identity``, first by the object's identity, the way shared objects (a stream's
    call arguments, an op's cached shapes) come back again and again."""

    def __init__(self, key: Callable[[Any], Any] | None = None, by_identity: bool = False) -> None:
        self.key = key
        self.by_key: dict[Any, int] = {}
        self.by_id: dict[int, int] | None = {} if by_identity else None  # id(object) → number
        self._alive: list[Any] = []  # the objects in by_id: kept alive, so their ids stay theirs
        self.next = 0
        self.new: list[tuple[int, Any]] = []

    def numbers(self, values: list[Any]) -> list[int]:
        """The number of each value."""
        if self.by_id is not None:
            out = list(map(self.by_id.get, map(id, values), repeat(-1)))  # all in C
        elif self.key is None:
            out = list(map(self.by_key.get, values, repeat(-1)))
        else:
            out = list(map(self.by_key.get, map(self.key, values), repeat(-1)))
        if -1 in out:
            for i, n in enumerate(out):
                if n < 0:
                    out[i] = self._add(values[i])
        return out

    def _add(self, v: Any) -> int:
        if self.by_id is not None and (n := self.by_id.get(id(v), -1)) >= 0:  # seen earlier in this batch
            return n
        try:
            k = v if self.key is None else self.key(v)
            n = self.by_key.get(k)
        except TypeError:  # unhashable: a number of its own every time
            k, n = None, None
        if n is None:
            n, self.next = self.next, self.next + 1
            self.new.append((n, v))
            if k is not None:
                self.by_key[k] = n
        if self.by_id is not None:
            if len(self.by_id) > 50_000:  # objects that never come back: forget them
                self.by_id.clear()
                self._alive.clear()
            self.by_id[id(v)] = n
            self._alive.append(v)
        return n

    def take_new(self) -> list[tuple[int, Any]]:
        """The values numbered since the last call."""
        new, self.new = self.new, []
        return new


def _args_key(args: dict[str, Any]) -> tuple:
    return tuple(args.items())


class RecordPacker:
    """The child's side: ``pack(drained)`` → (frame metadata, columns)."""

    def __init__(self) -> None:
        self.names = _Numbering()
        self.arg_sets = _Numbering(_args_key, by_identity=True)
        self.works = _Numbering(id, by_identity=True)  # an op's cost template: one per OpWork (cached by shape)

    def pack(self, d: Drained, sites: list[int] | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """One drain as frame metadata (JSON-able) and columns; ``sites``: a call-site id per call."""
        cols: dict[str, np.ndarray] = {}
        cols.update(_columns("c", d.calls, _CALL_FIELDS))
        cols["c_name"] = np.array(self.names.numbers(list(cols.pop("c_name_"))), dtype=np.int32)
        cols["c_args"] = np.array(self.arg_sets.numbers(list(cols.pop("c_args_"))), dtype=np.int32)
        cols["c_site"] = np.array(sites if sites is not None else [-1] * len(d.calls), dtype=np.int32)
        cols.update(_columns("s", d.submissions, _SUBMISSION_FIELDS))
        cols["s_name"] = np.array(self.names.numbers(list(cols.pop("s_name_"))), dtype=np.int32)
        cmds = [c for per_device in d.commands for c in per_device]
        cols["k_count"] = np.array([len(x) for x in d.commands], dtype=np.int64)
        is_op = np.array([k == "op" and c is not None for k, c in zip(
            map(_KIND_OF, cmds), map(_COST_OF, cmds), strict=True)], dtype=bool).reshape(-1)
        ops = [c for c, op in zip(cmds, is_op.tolist(), strict=True) if op] if not is_op.all() else cmds
        # everything but ops (copies, replays, events) is rare: sent whole, with its place among the others
        rare = {"others": [(i, c) for i, c in enumerate(cmds) if not is_op[i]]}
        cols.update(_columns("k", ops, _OP_FIELDS))
        cols["k_name"] = np.array(self.names.numbers(list(cols.pop("k_name_"))), dtype=np.int32)
        cols["k_args"] = np.array(self.arg_sets.numbers(list(cols.pop("k_args_"))), dtype=np.int32)
        cols["k_cause"] = np.array(list(map(_CAUSE.__getitem__, cols.pop("k_cause_"))), dtype=np.uint8)
        costs = cols.pop("k_cost_")
        works = self.works.numbers(list(map(_WORK_OF, costs)))
        cols["k_cost"] = np.array(works, dtype=np.int32)
        cols["k_jitter"] = np.array(list(map(_JITTER_OF, costs)), dtype=np.float64)
        new = dict(self.works.take_new())
        templates = []
        for c, n in zip(costs, works, strict=True):
            if new and new.pop(n, None) is not None:
                templates.append((n, dataclasses.replace(c, jitter=1.0)))
        segments = cols.pop("k_segments_")
        one = [s[0] if len(s) == 1 else _NO_SEGMENT for s in segments]  # an op alone: one (t0, t1, amount, sharers)
        rare["segments"] = {i: s for i, s in enumerate(segments) if len(s) != 1}
        cols["k_segment"] = np.array(list(chain.from_iterable(one)), dtype=np.float64)
        side = {"names": [v for _, v in self.names.take_new()], "args": self.arg_sets.take_new(),
                "costs": templates, **rare,
                "memcpys": [(m.start_ns, m.end_ns, m.name, m.cid, m.args) for m in d.memcpys],
                "ranges": [(r.start_ns, r.end_ns, r.name) for r in d.ranges]}
        cols["side"] = np.frombuffer(pickle.dumps(side, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)
        meta = {"waits": d.waits, "horizon_ns": d.horizon_ns, "host_now_ns": d.host_now_ns}
        return meta, cols


class RecordUnpacker:
    """The service's side: ``unpack(meta, columns)`` → the drain's records (and call sites)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.arg_sets: dict[int, dict[str, Any]] = {}
        self.costs: dict[int, OpCost] = {}

    def unpack(self, meta: dict[str, Any], cols: dict[str, np.ndarray]) -> tuple[Drained, np.ndarray]:
        """The records of one packed drain and each call's site id (-1: none)."""
        side = pickle.loads(cols["side"].tobytes())
        self.names += side["names"]
        self.arg_sets.update(side["args"])
        self.costs.update(side["costs"])
        names, sets = self.names, self.arg_sets
        calls = [ApiCall(s, e, names[n], c, dict(sets[a])) for s, e, n, c, a in zip(
            cols["c_start"].tolist(), cols["c_end"].tolist(), cols["c_name"].tolist(), cols["c_cid"].tolist(),
            cols["c_args"].tolist(), strict=True)]
        subs = [Submission(*row) for row in zip(
            cols["s_device"].tolist(), cols["s_stream"].tolist(), cols["s_submit"].tolist(),
            cols["s_visible"].tolist(), [names[n] for n in cols["s_name"].tolist()], cols["s_cid"].tolist(),
            cols["s_chunk"].tolist(), strict=True)]
        cmds = self._commands(cols, side)
        bounds = np.cumsum([0, *cols["k_count"].tolist()])
        d = Drained(calls=calls, submissions=subs, waits=[tuple(w) for w in meta["waits"]],
                    memcpys=[ApiCall(s, e, n, c, a) for s, e, n, c, a in side["memcpys"]],
                    ranges=[ApiCall(s, e, n, -1, {}) for s, e, n in side["ranges"]],
                    commands=[cmds[a:z] for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)],
                    horizon_ns=list(meta["horizon_ns"]), host_now_ns=int(meta["host_now_ns"]))
        return d, cols["c_site"]

    def _commands(self, cols: dict[str, np.ndarray], side: dict[str, Any]) -> list[Command]:
        names, sets, costs = self.names, self.arg_sets, self.costs
        segments = side["segments"]
        one = cols["k_segment"].reshape(-1, 4).tolist()
        ops = []
        rows = zip(*(cols[k].tolist() for k in (
            "k_cid", "k_stream", "k_name", "k_cost", "k_jitter", "k_args", "k_start", "k_end", "k_cause")), strict=True)
        for i, (cid, stream, name, cost, jitter, args, start, end, cause) in enumerate(rows):
            c = costs[cost]
            if jitter != 1.0:
                c = dataclasses.replace(c, jitter=jitter)
            seg = segments.get(i)
            if seg is None:
                t0, t1, amount, sharers = one[i]
                seg = [(t0, t1, amount, int(sharers))]
            ops.append(Command(cid, "op", stream, math.nan, math.nan, names[name], cost=c, args=sets[args],
                               start_ns=start, end_ns=end, cause=CAUSES[cause], segments=seg, done=True))
        others = side["others"]
        if not others:
            return ops
        out: list[Command | None] = [None] * (len(ops) + len(others))
        for i, c in others:
            out[i] = c
        it = iter(ops)
        return [c if c is not None else next(it) for c in out]
