"""A drain's raw records as plain data from the profiled child to the service: numbers as
``struct`` columns, names, arguments and rare records as msgpack (:mod:`.plain`); no pickle, so
converting a spool runs no code from it. Measurements: docs/CAPTURE.md, *Packing*."""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, compress
from typing import Any

import numpy as np

from ..sim.device.command import Command
from ..sim.device.costs import OpCost
from ..sim.device.ring import OP_FIELDS, OP_FLOATS, OP_INTS, RingBatch
from ..sim.runtime.drain import Drained
from ..sim.runtime.hostlog import SUBMISSION_INTS, ApiCall
from . import plain
from .simcodec import FrameTables, command_plain, commands_of, cost_of, cost_plain

# the stream's version, in its SESS frame: 2 is plain data; a stream without it is an older
# accelview's, whose records were pickled and are never unpickled
PROTOCOL = 2
Buffer = bytes | np.ndarray  # a column: its bytes, or a uint8 array of them

# where a submission's stream, cid and chunk are among its integers (HostLog.submission_ints)
_S_STREAM, _S_CID, _S_CHUNK = 1, 4, 5
_JITTER_AT = [f.name for f in dataclasses.fields(OpCost)].index("jitter")


def pack(d: Drained, sites: Sequence[int] | None = None, named: bool = False) -> tuple[
        dict[str, Any], dict[str, bytes]]:
    """The child's side: one drain, its devices' commands as their rings wrote them
    (:mod:`..sim.device.ring`), as frame metadata (JSON-able) and columns, each as its bytes (the wire
    sends them as ``uint8`` columns: no numpy in the child's path); ``sites``: a call-site id per call (-1: none;
    None: no call sites recorded, an empty column). ``named``: the ops carry their own
    names too (the last drain: a script stopped by a signal between a command's submission
    to the device and its entry in the host log left an op that no logged submission names)."""
    batches = d.commands
    if not all(isinstance(b, RingBatch) for b in batches):
        raise TypeError("pack: the devices' commands must come from their rings (the recorder installs them)")
    cols: dict[str, bytes] = {}
    # the host log's integers as they are (each record's back to back), and each call's site id:
    # struct.pack of the list (13 ns an integer, marshal 25, array('q') 38)
    cols["call_ints"] = _packed("q", d.call_ints)
    cols["submission_ints"] = _packed("q", d.submission_ints)
    cols["sites"] = b"" if sites is None else _packed("q", sites)
    cols["k_count"] = _packed("q", [b.commands for b in batches])
    ops = batches[0].ops if len(batches) == 1 else list(chain.from_iterable(b.ops for b in batches))
    n = len(OP_FIELDS)

    def column(name: str) -> list[Any]:
        return ops[OP_FIELDS.index(name)::n]

    cols["op_ints"] = _packed("q", *map(column, OP_INTS))
    cols["op_floats"] = _packed("d", *map(column, OP_FLOATS))
    # ops of several progress segments: their segments' numbers back to back (the count is in op_ints)
    cols["segments"] = _packed("d", [x for b in batches for segs in b.segments for s in segs for x in s])
    cols["call_names"] = plain.encode(d.call_objects[0::2])
    cols["call_args"] = plain.encode(d.call_objects[1::2])
    cols["submission_names"] = plain.encode(d.submission_names)
    cols["op_args"] = plain.encode(column("args"))
    cols["causes"] = plain.encode(column("cause"))
    cols["op_names"] = plain.encode(column("name") if named else None)
    others, first = [], 0
    tables = FrameTables()
    for b in batches:  # each device's place of a command among all the frame's commands
        others += [[first + i, command_plain(c, tables)] for i, c in b.others]
        first += b.commands
    cols["other_segments"] = _packed("d", tables.segments)
    cols["side"] = plain.encode({
        "costs": [[n, cost_plain(c)] for b in batches for n, c in b.costs], "others": others, **tables.plain(),
        "memcpys": [[m.start_ns, m.end_ns, m.name, m.cid, m.args] for m in d.memcpys],
        "ranges": [[r.start_ns, r.end_ns, r.name] for r in d.ranges]})
    meta = {"waits": d.waits, "horizon_ns": d.horizon_ns, "host_now_ns": d.host_now_ns, "events": len(d)}
    return meta, cols


def _packed(code: str, *lists: list[Any]) -> bytes:
    """Lists of numbers, one after the other, as little-endian ``struct`` items of ``code``
    ("q": int64, "d": float64), each list packed in C as it is."""
    return b"".join([struct.pack(f"<{len(v)}{code}", *v) for v in lists])


def _interleaved(names: list[str], args: list[Any]) -> list[Any]:
    """The host log's call objects, name and arguments of each call back to back."""
    if len(names) != len(args):
        raise plain.PlainDataError(f"{len(names)} call names for {len(args)} argument sets")
    out: list[Any] = [None] * (2 * len(names))
    out[0::2], out[1::2] = names, args
    return out


def _segments(flat: np.ndarray, counts: list[int]) -> Iterator[list[tuple[float, float, float, int]]]:
    """The progress segments of each op that has several, from their numbers back to back."""
    if len(flat) != 4 * sum(counts):
        raise plain.PlainDataError(f"{len(flat)} segment numbers for {sum(counts)} segments")
    quads = [(a, b, m, int(n)) for a, b, m, n in flat.reshape(-1, 4).tolist()]
    at = 0
    for k in counts:
        yield quads[at:at + k]
        at += k


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
        side = plain.decode(cols["side"])
        costs = [(int(n), cost_of(c)) for n, c in side["costs"]]
        self.costs.update(costs)
        self.fields.update((n, list(c.__reduce__()[1])) for n, c in costs)  # quick_init's field tuple
        calls = _interleaved(plain.decode_strings(cols["call_names"]), plain.decode_shared(cols["call_args"]))
        submissions = plain.decode_strings(cols["submission_names"])
        args = plain.decode_shared(cols["op_args"])
        causes = plain.decode_strings(cols["causes"])
        names = plain.decode(cols["op_names"])
        if names is not None and not all(type(x) is str for x in names):
            raise plain.PlainDataError("op names must be strings")
        subs = _ints(cols["submission_ints"]).reshape(-1, SUBMISSION_INTS)
        if len(subs) != len(submissions):  # a signal stopped the script between a submission's integers and its name
            subs = subs[:min(len(subs), len(submissions))]
            del submissions[len(subs):]
        whole = subs[:, _S_CHUNK] < 0
        self.submitted.update(zip(subs[whole, _S_CID].tolist(), zip(
            subs[whole, _S_STREAM].tolist(), compress(submissions, whole.tolist()), strict=True), strict=True))
        others = commands_of(side["others"], side, np.frombuffer(cols["other_segments"], dtype="<f8"))
        ints = dict(zip(OP_INTS, _ints(cols["op_ints"]).reshape(len(OP_INTS), -1).tolist(), strict=True))
        floats = np.frombuffer(cols["op_floats"], dtype="<f8").reshape(len(OP_FLOATS), -1)
        floats = dict(zip(OP_FLOATS, floats.tolist(), strict=True))
        several = _segments(np.frombuffer(cols["segments"], dtype="<f8"), [k for k in ints["segments"] if k > 1])
        segments = [[(a, b, moved, n)] if k == 1 else (next(several) if k else []) for k, a, b, moved, n in zip(
            ints["segments"], floats["t0"], floats["t1"], floats["moved"], ints["sharers"], strict=True)]
        numbers = [ints["shape"], floats["jitter"], ints["cid"], floats["start"], floats["end"]]
        named = None if names is None else list(zip(ints["stream"], names, strict=True))
        cmds = self._commands([*numbers, segments], [args, causes], others, named)
        for n, _ in costs:
            if n < 0:  # the cost of an op with no shape: this frame's only
                del self.costs[n], self.fields[n]
        bounds = np.cumsum([0, *_ints(cols["k_count"]).tolist()])
        d = Drained(_ints(cols["call_ints"]).tolist(), calls, subs.ravel().tolist(), submissions,
                    waits=[tuple(w) for w in meta["waits"]],
                    memcpys=[ApiCall(int(s), int(e), str(n), int(c), dict(a)) for s, e, n, c, a in side["memcpys"]],
                    ranges=[ApiCall(int(s), int(e), str(n), -1, {}) for s, e, n in side["ranges"]],
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
