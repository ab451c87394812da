"""The simulator's raw records as they travel from the profiled child to the service.

The child does as little as it can per record. A drain's host calls and submissions
(:class:`~.sim.drain.Drained`) are logged as columns already: their integers cross as the
log's two lists, each packed by one ``struct.pack``. An op's fields are read with one list comprehension
each (its attribute loads specialise to slot reads: 2.4x faster than a ``map`` of an
``attrgetter``, which looks each one up the generic way; a command with a cost is an op,
the runtime gives costs to ops only), and only those the service cannot know otherwise:
its stream and name are its submission's (the service keeps the submissions of commands not
finished yet, by correlation id; the last drain sends them too, see :meth:`RecordPacker.pack`). Its cost goes as its
shape's number (``OpCost.shape``, given by the runtime's cost cache; the first op's cost of a
shape is sent once per capture as the shape's template) and its jitter; an op the runtime
did not cache gets a template of its own, for that frame only. Numbers cross as int64 and
float64 columns, each list packed in C by ``struct.pack`` (13 ns a number; a ``marshal``
takes 25, an ``array('q')`` 38), and an op's progress segments (a list of tuples) in one
``marshal`` (no memo: cheaper than a pickle, and the child and the service run the same
Python); names and argument dicts in one pickle, where a name or an argument dict that comes
back again in a frame (a stream's call arguments, an op shape's cached arguments) is pickled
once and referred to after that. What is rare goes whole in ``side``: copies, graph replays,
events (as tuples of their fields), memcpys, ranges. The service rebuilds the records and
turns them into the capture's rows (:mod:`.collector`) on its own core.
``RecordPacker`` (child) and ``RecordUnpacker`` (service) keep the templates sent and
the unfinished submissions in step; each ``pack`` depends on the ones before it, as frames do.
"""

from __future__ import annotations

import contextlib
import dataclasses
import marshal
import math
import pickle
import struct
from collections.abc import Mapping, Sequence
from itertools import chain, compress
from operator import attrgetter, not_
from typing import Any

import numpy as np

from .sim.costs import OpCost
from .sim.drain import Drained
from .sim.engine import Command
from .sim.hostlog import SUBMISSION_INTS, ApiCall

Buffer = bytes | np.ndarray  # a column: its bytes, or a uint8 array of them

# where a submission's stream, cid and chunk are among its integers (HostLog.submission_ints)
_S_STREAM, _S_CID, _S_CHUNK = 1, 4, 5
# a command that is not an op (rare) crosses as all its fields, read in C (pickling a slotted
# dataclass whole walks dataclasses.fields in Python)
_COMMAND = attrgetter(*(f.name for f in dataclasses.fields(Command)))
_JITTER_AT = [f.name for f in dataclasses.fields(OpCost)].index("jitter")


class RecordPacker:
    """The child's side: ``pack(drained)`` → (frame metadata, columns)."""

    def __init__(self) -> None:
        self.sent: set[int] = set()  # the shapes whose cost has been sent (OpCost.shape)
        self.uncached = -1  # the number of the last cost sent whole (an op with no shape: negative numbers)

    def pack(self, d: Drained, sites: Sequence[int] | None = None, named: bool = False) -> tuple[
            dict[str, Any], dict[str, bytes]]:
        """One drain as frame metadata (JSON-able) and columns, each as its bytes (the wire sends
        them as ``uint8`` columns: no numpy in the child's path); ``sites``: a call-site id per call
        (-1: none; None: no call sites recorded, an empty column). ``named``: the ops carry
        their own streams and names too (the last drain: a script stopped by a signal between a
        command's submission to the device and its entry in the host log left an op that no
        logged submission names)."""
        cols: dict[str, bytes] = {}
        # the host log's integers as they are (each record's back to back), and each call's site id:
        # struct.pack of the list (13 ns an integer, marshal 25, array('q') 38)
        cols["call_ints"] = _packed("q", d.call_ints)
        cols["submission_ints"] = _packed("q", d.submission_ints)
        cols["sites"] = b"" if sites is None else _packed("q", sites)
        cmds = list(chain.from_iterable(d.commands))
        cols["k_count"] = _packed("q", list(map(len, d.commands)))
        costs = [c.cost for c in cmds]
        # every command an op: one C scan of truth values, no list (a cost is always true; ``None in
        # costs`` would call OpCost.__eq__ on each)
        others: list[tuple[int, Command]] = []
        if not all(costs):  # copies, events, graph replays: rare, sent whole with their place
            flags = list(map(not_, costs))
            i = -1
            with contextlib.suppress(ValueError):  # each found by a C scan from the one before
                while True:
                    i = flags.index(True, i + 1)
                    others.append((i, cmds[i]))
            for i, _ in reversed(others):
                del cmds[i], costs[i]
        ops = cmds
        works = [c.shape for c in costs]
        templates = self._templates(works, costs)
        cols["op_ints"] = _packed("q", works, [c.cid for c in ops])
        cols["op_floats"] = _packed("d", [c.jitter for c in costs], [c.start_ns for c in ops], [c.end_ns for c in ops])
        cols["segments"] = marshal.dumps([c.segments for c in ops], 2)
        # names and argument dicts: the same few objects again and again, each pickled once per frame
        cols["objects"] = _dump([d.call_objects, d.submission_names, [c.args for c in ops], [c.cause for c in ops]])
        cols["side"] = _dump({"costs": templates, "others": [(i, _COMMAND(c)) for i, c in others],
                              "named": [(c.stream, c.name) for c in ops] if named else None,
                              "memcpys": [(m.start_ns, m.end_ns, m.name, m.cid, m.args) for m in d.memcpys],
                              "ranges": [(r.start_ns, r.end_ns, r.name) for r in d.ranges]})
        # len(d), without asking every command how many records it left: an op leaves one
        events = d.n_calls + len(d.submission_names) + len(d.memcpys) + len(d.ranges) + len(ops) + sum(
            c.records for _, c in others)
        meta = {"waits": d.waits, "horizon_ns": d.horizon_ns, "host_now_ns": d.host_now_ns, "events": events}
        return meta, cols

    def _templates(self, works: list[int], costs: list[OpCost]) -> list[tuple[int, OpCost]]:
        """The costs the service has not seen, by number: a new shape's first op's cost. An op
        whose shape the runtime did not cache (-1) gets its own negative number in ``works``."""
        new = set(works).difference(self.sent)
        if not new:
            return []
        out = [(n, costs[works.index(n)]) for n in new if n >= 0]
        self.sent.update(new)
        if -1 in new:
            self.sent.discard(-1)
            i = works.index(-1)
            while True:
                self.uncached -= 1
                works[i] = self.uncached
                out.append((self.uncached, costs[i]))
                try:
                    i = works.index(-1, i + 1)
                except ValueError:
                    return out
        return out


def _packed(code: str, *lists: list[Any]) -> bytes:
    """Lists of numbers, one after the other, as little-endian ``struct`` items of ``code``
    ("q": int64, "d": float64), each list packed in C as it is."""
    return b"".join([struct.pack(f"<{len(v)}{code}", *v) for v in lists])


def _dump(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _load(data: Buffer) -> Any:
    return pickle.loads(data)


def _ints(data: Buffer) -> np.ndarray:
    return np.frombuffer(data, dtype="<i8")


class RecordUnpacker:
    """The service's side: ``unpack(meta, columns)`` → the drain's records (and call sites)."""

    def __init__(self) -> None:
        self.costs: dict[int, OpCost] = {}
        # each template's fields, to make an op's cost with its own jitter (dataclasses.replace,
        # which works through the fields in Python, cost ~8 us an op)
        self.fields: dict[int, list[Any]] = {}
        # the stream and name of each command submitted and not finished yet, by correlation id (a
        # chunked copy's chunks share one: it comes whole, and needs none)
        self.submitted: dict[int, tuple[int, str]] = {}

    def unpack(self, meta: dict[str, Any], cols: Mapping[str, Buffer]) -> tuple[Drained, np.ndarray]:
        """The records of one packed drain (columns as ``pack`` made them, or as the wire
        delivers them: ``uint8`` arrays) and each call's site id (-1: none; empty: no call sites
        recorded)."""
        side = _load(cols["side"])
        self.costs.update(side["costs"])
        self.fields.update((n, list(c.__reduce__()[1])) for n, c in side["costs"])  # quick_init's field tuple
        calls, submissions, *op_objects = _load(cols["objects"])
        subs = _ints(cols["submission_ints"]).reshape(-1, SUBMISSION_INTS)
        if len(subs) != len(submissions):  # a signal stopped the script between a submission's integers and its name
            subs = subs[:min(len(subs), len(submissions))]
            del submissions[len(subs):]
        whole = subs[:, _S_CHUNK] < 0
        self.submitted.update(zip(subs[whole, _S_CID].tolist(), zip(
            subs[whole, _S_STREAM].tolist(), compress(submissions, whole.tolist()), strict=True), strict=True))
        others = [(i, Command(*fields)) for i, fields in side["others"]]
        segments = marshal.loads(cols["segments"])
        works, cids = _ints(cols["op_ints"]).reshape(2, len(segments)).tolist()
        jitters, starts, ends = np.frombuffer(cols["op_floats"], dtype="<f8").reshape(3, len(segments)).tolist()
        cmds = self._commands([works, jitters, cids, starts, ends, segments], op_objects, others, side["named"])
        for n, _ in side["costs"]:
            if n < 0:  # the cost of an op with no shape: this frame's only
                del self.costs[n], self.fields[n]
        bounds = np.cumsum([0, *_ints(cols["k_count"]).tolist()])
        d = Drained(_ints(cols["call_ints"]).tolist(), calls, subs.ravel().tolist(), submissions,
                    waits=[tuple(w) for w in meta["waits"]],
                    memcpys=[ApiCall(s, e, n, c, a) for s, e, n, c, a in side["memcpys"]],
                    ranges=[ApiCall(s, e, n, -1, {}) for s, e, n in side["ranges"]],
                    commands=[cmds[a:z] for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)],
                    horizon_ns=list(meta["horizon_ns"]), host_now_ns=int(meta["host_now_ns"]))
        return d, _ints(cols["sites"]).astype(np.int32)

    def _commands(self, numbers: list[Any], objects: list[Any], others: list[tuple[int, Command]],
                  named: list[tuple[int, str]] | None) -> list[Command]:
        costs, fields, submitted = self.costs, self.fields, self.submitted
        nan, inf = math.nan, math.inf
        ops = []
        works, jitters, cids, starts, ends, segments_ = numbers
        args_, causes = objects
        for j, (work, jitter, cid, args, start, end, cause, segments) in enumerate(zip(
                works, jitters, cids, args_, starts, ends, causes, segments_, strict=True)):
            c = costs[work]
            if jitter != c.jitter:
                f = fields[work]
                f[_JITTER_AT] = jitter
                c = OpCost(*f)
            try:
                stream, name = submitted.pop(cid) if named is None else named[j]
            except KeyError:
                raise ValueError(f"op {cid} finished without a submission the service has seen") from None
            if named is not None:
                submitted.pop(cid, None)
            # every field by position (keywords cost twice as much: ~94k ops a 2.5 s run)
            ops.append(Command(cid, "op", stream, nan, nan, name, c, None, "", 0.0, None, None, args, start, end, -1,
                               cause, nan, nan, segments, "", inf, 0.0, True))
        for _, c in others:
            submitted.pop(c.cid, None)
        if not others:
            return ops
        out: list[Command | None] = [None] * (len(ops) + len(others))
        for i, c in others:
            out[i] = c
        it = iter(ops)
        return [c if c is not None else next(it) for c in out]
