"""A drain's raw records as plain data from the profiled child to the service: numbers as
``struct`` columns, names, arguments and rare records as msgpack (:mod:`.plain`); no pickle, so
converting a spool runs no code from it. Measurements: docs/CAPTURE.md, *Packing*."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, compress
from typing import Any

import numpy as np

from ..convert.records import DeviceRecords, Ops, OpShape
from ..sim.device.ring import OP_FIELDS, OP_FLOATS, OP_INTS, RingBatch
from ..sim.runtime.drain import Drained
from ..sim.runtime.hostlog import SUBMISSION_INTS, ApiCall
from . import plain
from .simcodec import FrameTables, command_plain, cost_plain, rares_of, shape_of

# the stream's version, in its SESS frame: 2 is plain data; a stream without it is an older
# accelview's, whose records were pickled and are never unpickled
PROTOCOL = 2
Buffer = bytes | np.ndarray  # a column: its bytes, or a uint8 array of them

# where a submission's stream, cid and chunk are among its integers (HostLog.submission_ints)
_S_STREAM, _S_CID, _S_CHUNK = 1, 4, 5


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
        self.shapes: dict[int, OpShape] = {}  # every op shape sent (an uncached one, negative, for its frame only)
        # the name of each command submitted and not finished yet, by correlation id (a chunked
        # copy's chunks share one: it comes whole, and needs none)
        self.submitted: dict[int, str] = {}

    def unpack(self, meta: dict[str, Any], cols: Mapping[str, Buffer]) -> tuple[Drained, np.ndarray]:
        """The records of one packed drain (columns as ``pack`` made them, or as the wire
        delivers them: ``uint8`` arrays), a :class:`DeviceRecords` per device, and each call's
        site id (-1: none; empty: no call sites recorded)."""
        side = plain.decode(cols["side"])
        shapes = [(int(n), shape_of(c)) for n, c in side["costs"]]
        self.shapes.update((n, x) for n, x in shapes if n >= 0)
        table = {**self.shapes, **dict(shapes)} if any(n < 0 for n, _ in shapes) else self.shapes
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
        self.submitted.update(zip(subs[whole, _S_CID].tolist(), compress(submissions, whole.tolist()), strict=True))
        others = rares_of(side["others"], side, np.frombuffer(cols["other_segments"], dtype="<f8"))
        ints = _ints(cols["op_ints"]).reshape(len(OP_INTS), -1)
        i = dict(zip(OP_INTS, ints, strict=True))
        floats = dict(zip(OP_FLOATS, np.frombuffer(cols["op_floats"], dtype="<f8").reshape(len(OP_FLOATS), -1),
                          strict=True))
        counts = i["segments"].tolist()
        several = _segments(np.frombuffer(cols["segments"], dtype="<f8"), [k for k in counts if k > 1])
        segments = [[(a, b, moved, n)] if k == 1 else (next(several) if k else []) for k, a, b, moved, n in zip(
            counts, floats["t0"].tolist(), floats["t1"].tolist(), floats["moved"].tolist(), i["sharers"].tolist(),
            strict=True)]
        cids = i["cid"].tolist()
        op_names = self._names(cids, names)
        for _, c in others:
            self.submitted.pop(c.cid, None)
        bounds = np.cumsum([0, *_ints(cols["k_count"]).tolist()])
        is_op = np.ones(int(bounds[-1]), dtype=bool)
        is_op[[place for place, _ in others]] = False
        op_place = np.flatnonzero(is_op)
        if len(op_place) != len(cids):
            raise ValueError(f"{len(cids)} ops for {len(op_place)} places")
        devices = []
        for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            lo, hi = np.searchsorted(op_place, [a, z]).tolist()
            sl = slice(lo, hi)
            ops = Ops(op_place[sl] - a, i["cid"][sl], i["stream"][sl], i["shape"][sl], floats["start"][sl],
                      floats["end"][sl], floats["jitter"][sl], op_names[sl], args[sl], causes[sl], segments[sl])
            rare = [r for place, r in others if a <= place < z]
            for (place, _), r in zip([o for o in others if a <= o[0] < z], rare, strict=True):
                r.seq = place - a
            devices.append(DeviceRecords(ops, rare, table, len(ops) + sum(r.records for r in rare)))
        d = Drained(_ints(cols["call_ints"]).tolist(), calls, subs.ravel().tolist(), submissions,
                    waits=[tuple(w) for w in meta["waits"]],
                    memcpys=[ApiCall(int(s), int(e), str(n), int(c), dict(a)) for s, e, n, c, a in side["memcpys"]],
                    ranges=[ApiCall(int(s), int(e), str(n), -1, {}) for s, e, n in side["ranges"]],
                    commands=devices, horizon_ns=list(meta["horizon_ns"]),  # type: ignore[arg-type]
                    host_now_ns=int(meta["host_now_ns"]))
        return d, _ints(cols["sites"]).astype(np.int32)

    def _names(self, cids: list[int], names: list[str] | None) -> list[str]:
        """The ops' names: their submissions' (forgotten once used), or their own where sent."""
        pop = self.submitted.pop
        if names is not None:
            for cid in cids:
                pop(cid, None)
            return names
        try:
            return list(map(pop, cids))
        except KeyError as e:
            raise ValueError(f"op {e.args[0]} finished without a submission the service has seen") from None
