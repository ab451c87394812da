"""The simulator's raw records as they travel from the profiled child to the service.

The child does as little as it can per record. A drain's host calls and submissions
(:class:`~.sim.drain.Drained`) are logged as columns already: their integers become numpy
columns without being read one by one. Each op's fields are read with one ``attrgetter`` and
transposed with one ``zip``; they, and the calls' and submissions' names and argument dicts,
cross in two pickles (``numbers``, ``objects``): pickling is C, and a name or an argument dict
that comes back again in a frame (a stream's call arguments, an op shape's cached arguments)
is pickled once and referred to after that. An op's cost goes as a template number (one
template per op shape, by identity, sent once per capture) and its jitter. What is rare goes
whole in ``side``: DMA jobs, graph replays, events, memcpys, ranges. The service rebuilds the
records and turns them into the capture's rows (:mod:`.collector`) on its own core.
``RecordPacker`` (child) and ``RecordUnpacker`` (service) keep the template numbering in step;
each ``pack`` depends on the ones before it, as frames do.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
from array import array
from collections.abc import Sequence
from itertools import chain, compress, repeat
from operator import attrgetter, is_, itemgetter, not_
from typing import Any

import numpy as np

from .sim.costs import OpCost
from .sim.drain import Drained
from .sim.engine import Command
from .sim.hostlog import ApiCall

# the columns of the host log's integers (HostLog.call_ints, submission_ints), in their order, and their types
_CALL_INTS = (("c_start", np.int64), ("c_end", np.int64), ("c_cid", np.int64))
_SUBMISSION_INTS = (("s_device", np.int16), ("s_stream", np.int32), ("s_submit", np.int64),
                    ("s_visible", np.int64), ("s_cid", np.int64), ("s_chunk", np.int32))
# a command's kind and, for an op, its fields, read in one call; its cost goes as a template number and its jitter
_COMMAND = attrgetter("kind", "cost", "cid", "stream", "name", "args", "start_ns", "end_ns", "cause", "segments")
_FIRST, _WORK_OF, _JITTER_OF = itemgetter(0), attrgetter("work"), attrgetter("jitter")


class _ByIdentity:
    """Numbers objects by identity (the new ones are collected for the next frame), keeping them
    alive so that an id stays its object's."""

    def __init__(self) -> None:
        self.by_id: dict[int, int] = {}  # id(object) → number
        self._alive: list[Any] = []
        self.next = 0
        self.new: list[tuple[int, Any]] = []

    def numbers(self, values: Sequence[Any]) -> list[int]:
        """The number of each value."""
        by_id = self.by_id
        out = list(map(by_id.get, map(id, values), repeat(-1)))  # all in C
        if -1 in out:  # new values, each maybe many times
            i = out.index(-1)
            while True:
                v = values[i]
                n = by_id.get(id(v), -1)
                if n < 0:
                    if len(by_id) > 50_000:  # objects that never come back: forget them
                        by_id.clear()
                        self._alive.clear()
                    n, self.next = self.next, self.next + 1
                    by_id[id(v)] = n
                    self._alive.append(v)
                    self.new.append((n, v))
                out[i] = n
                try:
                    i = out.index(-1, i + 1)
                except ValueError:
                    break
        return out

    def take_new(self) -> list[tuple[int, Any]]:
        """The values numbered since the last call."""
        new, self.new = self.new, []
        return new


def _ops_and_others(cmds: list[Command], rows: list[tuple], is_op: list[bool]) -> tuple[
        list[Command], list[tuple[int, Command]], list[tuple]]:
    """The ops among ``cmds`` (sent as columns) and their ``rows``, and every other command with its
    place among them (copies, graph replays, events: rare, sent whole)."""
    if all(is_op):
        return cmds, [], rows
    odd = list(compress(range(len(cmds)), map(not_, is_op)))
    ops, rows = cmds[:], rows[:]
    for i in reversed(odd):
        del ops[i], rows[i]
    return ops, [(i, cmds[i]) for i in odd], rows


class RecordPacker:
    """The child's side: ``pack(drained)`` → (frame metadata, columns)."""

    def __init__(self) -> None:
        self.works = _ByIdentity()  # an op's cost template: one per OpWork (the runtime caches one per shape)

    def pack(self, d: Drained, sites: Sequence[int] | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """One drain as frame metadata (JSON-able) and columns; ``sites``: a call-site id per call
        (an ``array('i')`` is copied whole, not read number by number)."""
        cols: dict[str, np.ndarray] = {}
        ints = np.frombuffer(d.call_ints, dtype=np.int64).reshape(-1, len(_CALL_INTS))
        for i, (name, dtype) in enumerate(_CALL_INTS):
            cols[name] = ints[:, i].astype(dtype)
        cols["c_site"] = np.array(sites if sites is not None else [-1] * d.n_calls, dtype=np.int32)
        ints = np.frombuffer(d.submission_ints, dtype=np.int64).reshape(-1, len(_SUBMISSION_INTS))
        for i, (name, dtype) in enumerate(_SUBMISSION_INTS):
            cols[name] = ints[:, i].astype(dtype)
        cmds = list(chain.from_iterable(d.commands))
        cols["k_count"] = np.array(list(map(len, d.commands)), dtype=np.int64)
        every = list(map(_COMMAND, cmds))
        ops, others, rows = _ops_and_others(cmds, every, list(map("op".__eq__, map(_FIRST, every))))
        fields = list(zip(*rows, strict=True)) if rows else [()] * 10
        if any(map(is_, fields[1], repeat(None))):  # an op without a cost (the runtime makes none): sent whole too
            ops, others, rows = _ops_and_others(cmds, every, [r[0] == "op" and r[1] is not None for r in every])
            fields = list(zip(*rows, strict=True)) if rows else [()] * 10
        del fields[0]  # the kinds
        costs = fields[0]
        works = self.works.numbers(list(map(_WORK_OF, costs)))
        # a new template: the first op of its work, with jitter 1
        templates = [(n, dataclasses.replace(costs[works.index(n)], jitter=1.0)) for n, _ in self.works.take_new()]
        cid, stream, name, args, start, end, cause, segments = fields[1:]
        # numbers, each op's own (two pickles: the numbers' memo does not slow down the names' one)
        cols["numbers"] = _dump([works, list(map(_JITTER_OF, costs)), cid, stream, start, end, segments])
        # names and argument dicts: the same few objects again and again, each pickled once per frame
        cols["objects"] = _dump([d.call_objects, d.submission_names, name, args, cause])
        cols["side"] = _dump({"costs": templates, "others": others,
                              "memcpys": [(m.start_ns, m.end_ns, m.name, m.cid, m.args) for m in d.memcpys],
                              "ranges": [(r.start_ns, r.end_ns, r.name) for r in d.ranges]})
        # len(d), without asking every command how many records it left: an op leaves one
        events = d.n_calls + len(d.submission_names) + len(d.memcpys) + len(d.ranges) + len(ops) + sum(
            c.records for _, c in others)
        meta = {"waits": d.waits, "horizon_ns": d.horizon_ns, "host_now_ns": d.host_now_ns, "events": events}
        return meta, cols


def _dump(value: Any) -> np.ndarray:
    return np.frombuffer(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)


def _load(data: np.ndarray) -> Any:
    return pickle.loads(data.tobytes())


def _int_rows(cols: dict[str, np.ndarray], columns: tuple[tuple[str, Any], ...]) -> array[int]:
    """Integer columns back into the host log's form: each record's integers back to back."""
    return array("q", np.stack([cols[c].astype(np.int64) for c, _ in columns], axis=1).tobytes())


class RecordUnpacker:
    """The service's side: ``unpack(meta, columns)`` → the drain's records (and call sites)."""

    def __init__(self) -> None:
        self.costs: dict[int, OpCost] = {}

    def unpack(self, meta: dict[str, Any], cols: dict[str, np.ndarray]) -> tuple[Drained, np.ndarray]:
        """The records of one packed drain and each call's site id (-1: none)."""
        side = _load(cols["side"])
        self.costs.update(side["costs"])
        calls, submissions, *op_objects = _load(cols["objects"])
        calls[1::2] = map(dict, calls[1::2])  # a call's own arguments (the collector adds its call site)
        cmds = self._commands(_load(cols["numbers"]), op_objects, side["others"])
        bounds = np.cumsum([0, *cols["k_count"].tolist()])
        d = Drained(_int_rows(cols, _CALL_INTS), calls, _int_rows(cols, _SUBMISSION_INTS), submissions,
                    waits=[tuple(w) for w in meta["waits"]],
                    memcpys=[ApiCall(s, e, n, c, a) for s, e, n, c, a in side["memcpys"]],
                    ranges=[ApiCall(s, e, n, -1, {}) for s, e, n in side["ranges"]],
                    commands=[cmds[a:z] for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)],
                    horizon_ns=list(meta["horizon_ns"]), host_now_ns=int(meta["host_now_ns"]))
        return d, cols["c_site"]

    def _commands(self, numbers: list[Any], objects: list[Any], others: list[tuple[int, Command]]) -> list[Command]:
        costs = self.costs
        ops = []
        works, jitters, cids, streams, starts, ends, segments_ = numbers
        names, args_, causes = objects
        for work, jitter, cid, stream, name, args, start, end, cause, segments in zip(
                works, jitters, cids, streams, names, args_, starts, ends, causes, segments_, strict=True):
            c = costs[work]
            if jitter != 1.0:
                c = dataclasses.replace(c, jitter=jitter)
            ops.append(Command(cid, "op", stream, math.nan, math.nan, name, cost=c, args=args, start_ns=start,
                               end_ns=end, cause=cause, segments=segments, done=True))
        if not others:
            return ops
        out: list[Command | None] = [None] * (len(ops) + len(others))
        for i, c in others:
            out[i] = c
        it = iter(ops)
        return [c if c is not None else next(it) for c in out]
