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
from array import array
from collections.abc import Callable, Sequence
from itertools import chain, compress, repeat
from operator import attrgetter, is_, itemgetter, not_
from typing import Any

import numpy as np

from .sim.costs import OpCost
from .sim.drain import Drained
from .sim.engine import Command
from .sim.hostlog import ApiCall

CAUSES = ("", "host", "pcie", "sync", "resource")
_CAUSE = {k: i for i, k in enumerate(CAUSES)}
_NO_SEGMENT = (np.nan, np.nan, np.nan, np.nan)
# the columns of the host log's integers (HostLog.call_ints, submission_ints), in their order, and their types
_CALL_INTS = (("c_start", np.int64), ("c_end", np.int64), ("c_cid", np.int64))
_SUBMISSION_INTS = (("s_device", np.int16), ("s_stream", np.int32), ("s_submit", np.int64),
                    ("s_visible", np.int64), ("s_cid", np.int64), ("s_chunk", np.int32))
_OP_FIELDS = ("cid", "stream", "name", "cost", "args", "start_ns", "end_ns", "cause", "segments")
_OP = attrgetter(*_OP_FIELDS)  # an op's fields, read in one call
_OP_NUMBERS = (("k_cid", 0, np.int64), ("k_stream", 1, np.int32), ("k_start", 5, np.float64),
               ("k_end", 6, np.float64))
_KIND_OF, _WORK_OF, _JITTER_OF, _FIRST = attrgetter("kind"), attrgetter("work"), attrgetter("jitter"), itemgetter(0)


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

    def numbers(self, values: Sequence[Any]) -> list[int]:
        """The number of each value."""
        by_id = self.by_id
        if by_id is not None:
            out = list(map(by_id.get, map(id, values), repeat(-1)))  # all in C
        elif self.key is None:
            out = list(map(self.by_key.get, values, repeat(-1)))
        else:
            out = list(map(self.by_key.get, map(self.key, values), repeat(-1)))
        if -1 in out:  # new values, each maybe many times
            i = out.index(-1)
            while True:
                v = values[i]
                n = by_id.get(id(v), -1) if by_id is not None else -1
                out[i] = n if n >= 0 else self._add(v)
                try:
                    i = out.index(-1, i + 1)
                except ValueError:
                    break
        return out

    def _add(self, v: Any) -> int:
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


def _ops_and_others(cmds: list[Command], is_op: list[bool]) -> tuple[list[Command], list[tuple[int, Command]]]:
    """The ops among ``cmds`` (sent as columns), and every other command with its place among them
    (copies, graph replays, events: rare, sent whole)."""
    if all(is_op):
        return cmds, []
    others = [(i, cmds[i]) for i in compress(range(len(cmds)), map(not_, is_op))]
    return list(compress(cmds, is_op)), others


class RecordPacker:
    """The child's side: ``pack(drained)`` → (frame metadata, columns)."""

    def __init__(self) -> None:
        self.names = _Numbering()
        self.arg_sets = _Numbering(_args_key, by_identity=True)
        self.works = _Numbering(id, by_identity=True)  # an op's cost template: one per OpWork (cached by shape)

    def pack(self, d: Drained, sites: list[int] | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """One drain as frame metadata (JSON-able) and columns; ``sites``: a call-site id per call.

        Every field is read in C: the host log's integers are already a C array, its names and
        argument dicts are numbered with ``map``; the commands' fields are read with one
        ``attrgetter`` each and transposed with ``zip``."""
        cols: dict[str, np.ndarray] = {}
        ints = np.frombuffer(d.call_ints, dtype=np.int64).reshape(-1, len(_CALL_INTS))
        for i, (name, dtype) in enumerate(_CALL_INTS):
            cols[name] = ints[:, i].astype(dtype)
        cols["c_name"] = np.array(self.names.numbers(d.call_objects[0::2]), dtype=np.int32)
        cols["c_args"] = np.array(self.arg_sets.numbers(d.call_objects[1::2]), dtype=np.int32)
        cols["c_site"] = np.array(sites if sites is not None else [-1] * d.n_calls, dtype=np.int32)
        ints = np.frombuffer(d.submission_ints, dtype=np.int64).reshape(-1, len(_SUBMISSION_INTS))
        for i, (name, dtype) in enumerate(_SUBMISSION_INTS):
            cols[name] = ints[:, i].astype(dtype)
        cols["s_name"] = np.array(self.names.numbers(d.submission_names), dtype=np.int32)
        cmds = list(chain.from_iterable(d.commands))
        cols["k_count"] = np.array(list(map(len, d.commands)), dtype=np.int64)
        ops, others = _ops_and_others(cmds, list(map("op".__eq__, map(_KIND_OF, cmds))))
        fields = list(zip(*map(_OP, ops), strict=True)) if ops else [()] * len(_OP_FIELDS)
        costs = fields[3]
        if any(map(is_, costs, repeat(None))):  # an op without a cost (the runtime makes none): sent whole too
            ops, others = _ops_and_others(cmds, [c.kind == "op" and c.cost is not None for c in cmds])
            fields = list(zip(*map(_OP, ops), strict=True)) if ops else [()] * len(_OP_FIELDS)
            costs = fields[3]
        for name, i, dtype in _OP_NUMBERS:
            cols[name] = np.array(fields[i], dtype=dtype)
        cols["k_name"] = np.array(self.names.numbers(fields[2]), dtype=np.int32)
        cols["k_args"] = np.array(self.arg_sets.numbers(fields[4]), dtype=np.int32)
        cols["k_cause"] = np.array(list(map(_CAUSE.__getitem__, fields[7])), dtype=np.uint8)
        works = self.works.numbers(list(map(_WORK_OF, costs)))
        cols["k_cost"] = np.array(works, dtype=np.int32)
        cols["k_jitter"] = np.array(list(map(_JITTER_OF, costs)), dtype=np.float64)
        # a new template: the first op of its work with jitter 1
        templates = [(n, dataclasses.replace(costs[works.index(n)], jitter=1.0)) for n, _ in self.works.take_new()]
        segments = fields[8]
        one_each = list(map(len, segments)).count(1) == len(segments)
        one = map(_FIRST, segments) if one_each else (s[0] if len(s) == 1 else _NO_SEGMENT for s in segments)
        # an op alone: (t0, t1, amount, sharers)
        cols["k_segment"] = np.fromiter(chain.from_iterable(one), dtype=np.float64, count=4 * len(segments))
        side = {"names": [v for _, v in self.names.take_new()], "args": self.arg_sets.take_new(),
                "costs": templates, "others": others,
                "segments": {} if one_each else {i: s for i, s in enumerate(segments) if len(s) != 1},
                "memcpys": [(m.start_ns, m.end_ns, m.name, m.cid, m.args) for m in d.memcpys],
                "ranges": [(r.start_ns, r.end_ns, r.name) for r in d.ranges]}
        cols["side"] = np.frombuffer(pickle.dumps(side, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)
        # len(d), without asking every command how many records it left: an op leaves one
        events = d.n_calls + len(d.submission_names) + len(d.memcpys) + len(d.ranges) + len(ops) + sum(
            c.records for _, c in others)
        meta = {"waits": d.waits, "horizon_ns": d.horizon_ns, "host_now_ns": d.host_now_ns, "events": events}
        return meta, cols


def _int_rows(cols: dict[str, np.ndarray], columns: tuple[tuple[str, Any], ...]) -> array[int]:
    """Integer columns back into the host log's form: each record's integers back to back."""
    return array("q", np.stack([cols[c].astype(np.int64) for c, _ in columns], axis=1).tobytes())


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
        call_ints = _int_rows(cols, _CALL_INTS)
        call_objects = list(chain.from_iterable(zip([names[n] for n in cols["c_name"].tolist()],
                                                    [dict(sets[a]) for a in cols["c_args"].tolist()], strict=True)))
        submission_ints = _int_rows(cols, _SUBMISSION_INTS)
        submission_names = [names[n] for n in cols["s_name"].tolist()]
        cmds = self._commands(cols, side)
        bounds = np.cumsum([0, *cols["k_count"].tolist()])
        d = Drained(call_ints, call_objects, submission_ints, submission_names, waits=[tuple(w) for w in meta["waits"]],
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
