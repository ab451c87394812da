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
import pickle
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import numpy as np

from .sim.costs import OpCost
from .sim.drain import Drained
from .sim.engine import Command
from .sim.hostlog import ApiCall, Submission

KINDS = ("op", "graph", "copy", "record", "wait")
CAUSES = ("", "host", "pcie", "sync", "resource")
DIRECTIONS = ("", "h2d", "d2h", "d2d")
_KIND = {k: i for i, k in enumerate(KINDS)}
_CAUSE = {k: i for i, k in enumerate(CAUSES)}
_DIRECTION = {k: i for i, k in enumerate(DIRECTIONS)}


_NO_SEGMENT = (np.nan, np.nan, np.nan, np.nan)
_OP = _KIND["op"]
# (column, attribute, dtype); dtype None: handed back as a tuple of objects under "<column>_"
_CALL_FIELDS = (("start", "start_ns", np.int64), ("end", "end_ns", np.int64), ("name", "name", None),
                ("cid", "cid", np.int64), ("args", "args", None))
_SUBMISSION_FIELDS = (("device", "device", np.int16), ("stream", "stream", np.int32),
                      ("submit", "submit_ns", np.int64), ("visible", "visible_ns", np.int64),
                      ("name", "name", None), ("cid", "cid", np.int64), ("chunk", "chunk", np.int32))
_COMMAND_FIELDS = (("cid", "cid", np.int64), ("kind", "kind", None), ("stream", "stream", np.int32),
                   ("submit", "submit_ns", np.float64), ("visible", "visible_ns", np.float64), ("name", "name", None),
                   ("cost", "cost", None), ("direction", "direction", None), ("fixed", "fixed_ns", np.float64),
                   ("args", "args", None), ("start", "start_ns", np.float64), ("end", "end_ns", np.float64),
                   ("engine", "engine", np.int16), ("cause", "cause", None),
                   ("data_start", "data_start_ns", np.float64), ("data_end", "data_end_ns", np.float64),
                   ("job", "job", None), ("graph", "graph", None), ("segments", "segments", None))


def _columns(prefix: str, records: list, fields: tuple) -> dict[str, Any]:
    """The fields of ``records`` as columns, read in C (``attrgetter``) and transposed with ``zip``."""
    if not records:
        return {f"{prefix}_{c}" + ("_" if t is None else ""): (np.empty(0, t) if t is not None else ())
                for c, _, t in fields}
    columns = zip(*map(attrgetter(*(a for _, a, _ in fields)), records), strict=True)
    return {f"{prefix}_{c}" + ("_" if t is None else ""): (np.array(v, dtype=t) if t is not None else v)
            for (c, _, t), v in zip(fields, columns, strict=True)}


def _col(values: list, dtype: Any) -> np.ndarray:
    return np.array(values, dtype=dtype)


class _Numbering:
    """Numbers distinct values (new ones are collected for the next frame), by ``key(value)``;
    with ``by_identity``, first by the object's identity, the way shared objects (a stream's
    call arguments, an op's cached shapes) come back again and again."""

    def __init__(self, key: Callable[[Any], Any] | None = None, by_identity: bool = False) -> None:
        self.key = key
        self.by_key: dict[Any, int] = {}
        self.by_id: dict[int, tuple[int, Any]] | None = {} if by_identity else None  # id → (number, object)
        self.next = 0
        self.new: list[tuple[int, Any]] = []

    def numbers(self, values: list[Any]) -> list[int]:
        """The number of each value."""
        if self.by_id is None:
            get = self.by_key.get
            out = [get(v, -1) for v in values] if self.key is None else [get(self.key(v), -1) for v in values]
        else:
            get_id = self.by_id.get
            out = [h[0] if (h := get_id(id(v))) is not None else -1 for v in values]
        if -1 in out:
            for i, n in enumerate(out):
                if n < 0:
                    out[i] = self._add(values[i])
        return out

    def _add(self, v: Any) -> int:
        if self.by_id is not None and (h := self.by_id.get(id(v))) is not None:  # seen earlier in this batch
            return h[0]
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
            self.by_id[id(v)] = (n, v)  # the object is kept alive with its number: ids stay unique
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
        cols.update(_columns("k", cmds, _COMMAND_FIELDS))
        cols["k_name"] = np.array(self.names.numbers(list(cols.pop("k_name_"))), dtype=np.int32)
        cols["k_args"] = np.array(self.arg_sets.numbers(list(cols.pop("k_args_"))), dtype=np.int32)
        for key, codes in (("k_kind", _KIND), ("k_cause", _CAUSE), ("k_direction", _DIRECTION)):
            cols[key] = np.array(list(map(codes.__getitem__, cols.pop(key + "_"))), dtype=np.uint8)
        costs = list(cols.pop("k_cost_"))
        with_cost = [c for c in costs if c is not None]
        works = self.works.numbers([c.work for c in with_cost])
        cols["k_cost"] = np.full(len(cmds), -1, dtype=np.int32)
        cols["k_cost"][np.array([c is not None for c in costs], dtype=bool)] = works
        cols["k_jitter"] = np.ones(len(cmds))
        cols["k_jitter"][cols["k_cost"] >= 0] = [c.jitter for c in with_cost]
        new = {n for n, _ in self.works.take_new()}
        templates = [(n, dataclasses.replace(c, jitter=1.0)) for c, n in zip(with_cost, works, strict=True)
                     if n in new and not new.discard(n)]
        rare: dict[str, dict[int, Any]] = {"jobs": {}, "graphs": {}, "segments": {}}
        one = []
        for i, (job, graph, segments, kind) in enumerate(zip(
                cols.pop("k_job_"), cols.pop("k_graph_"), cols.pop("k_segments_"), cols["k_kind"].tolist(),
                strict=True)):  # the rare parts: copies, replays, progress that is not one span
            if job is not None:
                rare["jobs"][i] = job
            if graph is not None:
                rare["graphs"][i] = graph
            if kind == _OP and len(segments) == 1:
                one.append(segments[0])
            else:
                one.append(_NO_SEGMENT)
                if segments:
                    rare["segments"][i] = segments
        cols["k_segment"] = np.array(one, dtype=np.float64).ravel()  # an op's one (t0, t1, amount, sharers)
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
                    ranges=[ApiCall(s, e, n, -1) for s, e, n in side["ranges"]],
                    commands=[cmds[a:z] for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)],
                    horizon_ns=list(meta["horizon_ns"]), host_now_ns=int(meta["host_now_ns"]))
        return d, cols["c_site"]

    def _commands(self, cols: dict[str, np.ndarray], side: dict[str, Any]) -> list[Command]:
        names, sets, costs = self.names, self.arg_sets, self.costs
        jobs, graphs, segments = side["jobs"], side["graphs"], side["segments"]
        one = cols["k_segment"].reshape(-1, 4).tolist()
        out = []
        rows = zip(*(cols[k].tolist() for k in (
            "k_cid", "k_kind", "k_stream", "k_submit", "k_visible", "k_name", "k_cost", "k_jitter", "k_direction",
            "k_fixed", "k_args", "k_start", "k_end", "k_engine", "k_cause", "k_data_start", "k_data_end")), strict=True)
        for i, (cid, kind, stream, submit, visible, name, cost, jitter, direction, fixed, args, start, end, engine,
                cause, data_start, data_end) in enumerate(rows):
            c = costs[cost] if cost >= 0 else None
            if c is not None and jitter != 1.0:
                c = dataclasses.replace(c, jitter=jitter)
            seg = segments.get(i)
            if seg is None:
                seg = [] if one[i][0] != one[i][0] else [(one[i][0], one[i][1], one[i][2], int(one[i][3]))]  # NaN: none
            out.append(Command(cid, KINDS[kind], stream, submit, visible, names[name], cost=c, job=jobs.get(i),
                               direction=DIRECTIONS[direction], fixed_ns=fixed, graph=graphs.get(i), args=sets[args],
                               start_ns=start, end_ns=end, engine=engine, cause=CAUSES[cause],
                               data_start_ns=data_start, data_end_ns=data_end, segments=seg, done=True))
        return out
