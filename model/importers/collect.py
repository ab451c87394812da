"""Collect decoded event batches into compact columns, phase by phase.

Complete events (X), the bulk of every trace, become numpy chunks; the rarer phases (B/E,
instants, counters, async, flows, metadata) are kept as small tuples until the assembler
turns everything into tracks. Strings are interned locally (categories apart from names, so
that categories get small ids when they reach the trace's string table). Phases the importer
does not know are counted, not thrown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from ..schema import ArgKind
from .events import Batch, dur_to_ns

_decode_any = msgspec.json.Decoder().decode
METADATA_NAMES = {"process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"}
ASYNC_PHASES = {"b": "b", "e": "e", "n": "n", "S": "b", "F": "e"}
FLOW_PHASES = {"s", "t", "f"}
INSTANT_PHASES = {"i", "I", "R"}
X_COLUMNS = ("thread", "ts", "dur", "name", "cat", "corr", "args")


class Interner(dict):
    """A local string → id table (ids in order of first use)."""

    def id(self, s: str) -> int:
        """The id of ``s``, adding it when new."""
        i = self.get(s)
        if i is None:
            i = self[s] = len(self)
        return i

    def ids(self, values: list) -> np.ndarray:
        """Ids of many values as int32 (one dict look-up each; new ones are added)."""
        get = self.get
        out = [get(v, -1) for v in values]
        if -1 in out:
            for v in dict.fromkeys(v for v, o in zip(values, out, strict=True) if o == -1):
                self.id(v)
            out = [get(v) for v in values]
        return np.asarray(out, dtype=np.int32)

    def pair_ids(self, first: list, second: list) -> np.ndarray:
        """Ids of (first[i], second[i]) pairs; integer pairs are grouped in numpy first."""
        try:
            a, b = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
        except (ValueError, TypeError, OverflowError):  # string pids or tids
            return self.ids(list(zip(first, second, strict=True)))
        if not len(a):
            return np.empty(0, dtype=np.int32)
        ua, ia = np.unique(a, return_inverse=True)
        ub, ib = np.unique(b, return_inverse=True)
        keys, inv = np.unique(ia.astype(np.int64) * len(ub) + ib, return_inverse=True)
        ua_l, ub_l = ua.tolist(), ub.tolist()
        ids = np.asarray([self.id((ua_l[k // len(ub_l)], ub_l[k % len(ub_l)])) for k in keys.tolist()], dtype=np.int32)
        return ids[inv.reshape(-1)]


def event_id(e: Any) -> Any:
    """An async or flow event's id: ``id``, else its ``id2`` (local or global)."""
    return e.id if e.id is not None or not e.id2 else tuple(sorted(e.id2.items()))


def phase_masks(evs: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(is X, is M) per event, from one joined string when every phase is one ASCII letter."""
    phs = [e.ph for e in evs]
    joined = "".join(phs)
    if len(joined) == len(phs) and joined.isascii():
        code = np.frombuffer(joined.encode(), dtype=np.uint8)
        return code == ord("X"), code == ord("M")
    arr = np.asarray(phs, dtype=object)
    return arr == "X", arr == "M"


class ArgColumns:
    """Argument sets: flat (set, key, value) lists for the current batch, typed into numpy
    columns by ``flush`` (so that memory holds one batch of Python values, not all of them)."""

    def __init__(self, strings: Interner) -> None:
        self.strings = strings
        self.sets: list[int] = []
        self.keys: list[str] = []
        self.values: list[Any] = []
        self.n_sets = 0
        self.n_rows = 0
        self.chunks: list[dict[str, np.ndarray]] = []

    def add(self, args: dict[str, Any]) -> int:
        """Store one argument set; returns its id, -1 for an empty one."""
        if not args:
            return -1
        set_id = self.n_sets
        self.n_sets += 1
        self.sets.extend([set_id] * len(args))
        self.keys.extend(args)
        self.values.extend(args.values())
        return set_id

    def flush(self) -> None:
        """Type the pending rows into a chunk of columns (string columns as local ids)."""
        vals = self.values
        if not vals:
            return
        kinds = {int: ArgKind.INT, bool: ArgKind.INT, float: ArgKind.REAL}
        kind = np.asarray([kinds.get(type(v), ArgKind.STR) for v in vals], dtype=np.uint8)
        ints = np.zeros(len(vals), dtype=np.int64)
        reals = np.zeros(len(vals), dtype=np.float64)
        strs = np.zeros(len(vals), dtype=np.int32)
        idx = np.flatnonzero(kind == ArgKind.INT).tolist()
        big = [i for i in idx if not -(2**63) <= vals[i] < 2**63]
        if big:  # integers beyond int64 are kept as text
            kind[big] = ArgKind.STR
            idx = np.flatnonzero(kind == ArgKind.INT).tolist()
        ints[idx] = [vals[i] for i in idx]
        idx = np.flatnonzero(kind == ArgKind.REAL).tolist()
        reals[idx] = [vals[i] for i in idx]
        idx = np.flatnonzero(kind == ArgKind.STR).tolist()
        enc = msgspec.json.encode
        strs[idx] = self.strings.ids([v if type(v) is str else enc(v).decode() for v in (vals[i] for i in idx)])
        self.chunks.append({"set": np.asarray(self.sets, dtype=np.int32),
                            "key": self.strings.ids([str(k) for k in self.keys]),
                            "kind": kind, "int": ints, "real": reals, "str": strs})
        self.n_rows += len(vals)
        self.sets, self.keys, self.values = [], [], []

    def columns(self) -> dict[str, np.ndarray]:
        """All rows as the args table's columns, string columns as local ids of ``strings``."""
        self.flush()
        return {k: np.concatenate([c[k] for c in self.chunks]) for k in self.chunks[0]} if self.chunks else {}


@dataclass
class Collected:
    """Everything gathered from one file, before tracks exist."""

    threads: Interner = field(default_factory=Interner)  # (pid, tid) -> thread index
    names: Interner = field(default_factory=Interner)
    cats: Interner = field(default_factory=Interner)
    x: dict[str, list[np.ndarray]] = field(default_factory=lambda: {k: [] for k in X_COLUMNS})
    begin_end: list[tuple] = field(default_factory=list)  # (thread, ts, order, is_begin, name, cat, args)
    instants: list[tuple] = field(default_factory=list)  # (scope, pid, thread, ts, name, cat, args)
    counters: list[tuple] = field(default_factory=list)  # (pid, series name, ts, value)
    asyncs: list[tuple] = field(default_factory=list)  # (pid, cat, id, name, ts, phase, order, args)
    flows: list[tuple] = field(default_factory=list)  # (thread, ts, phase, enclosing, cat, id, order, xslice)
    meta: dict[tuple, Any] = field(default_factory=dict)  # (what, pid, tid) -> value
    stats: Counter = field(default_factory=Counter)
    order: int = 0
    n_x: int = 0  # complete events so far (their order is the xslice of flow steps)


class Collector:
    """Feeds batches into a ``Collected``. ``skip_args`` lists categories whose args are not
    kept (decoding millions of op arguments costs more than the rest of the import);
    ``skip_flow_cats`` lists flow categories the importer rebuilds another way."""

    def __init__(self, args: ArgColumns, skip_args: Iterable[str] = (), skip_flow_cats: Iterable[str] = ()) -> None:
        self.c = Collected(names=args.strings)
        self.args = args
        self.skip_args = set(skip_args)
        self.skip_flow_cats = set(skip_flow_cats)
        self._seen_meta: set[tuple] = set()
        self._meta_names, self._meta_lanes, self._meta_keys = Interner(), Interner(), Interner()

    def add(self, batch: Batch) -> None:
        """Take one decoded batch."""
        c = self.c
        evs, ts = batch.events, batch.ts_ns
        c.stats["events"] += len(evs) + batch.malformed
        c.stats["malformed_events"] += batch.malformed
        is_x, is_m = phase_masks(evs)
        xi = np.flatnonzero(is_x)
        if len(xi):
            self._complete([evs[i] for i in xi.tolist()], ts[xi])
        mi = np.flatnonzero(is_m)
        if len(mi):
            self._metadata([evs[i] for i in mi.tolist()])
        for i in np.flatnonzero(~is_x & ~is_m).tolist():
            self._other(evs[i], int(ts[i]), c.order + i)
        c.order += len(evs)
        self.args.flush()

    def _complete(self, evs: list[Any], ts: np.ndarray) -> None:
        c = self.c
        n = len(evs)
        dur = dur_to_ns(np.fromiter((e.dur for e in evs), dtype=np.float64, count=n))
        neg = dur < 0
        if neg.any():
            c.stats["negative_durations_clamped"] += int(neg.sum())
            dur[neg] = 0
        corr = np.fromiter((e.correlation for e in evs), dtype=np.int64, count=n)
        arg_ids = np.full(n, -1, dtype=np.int32)
        skip = self.skip_args
        keep = [j for j, e in enumerate(evs) if e.args and e.cat not in skip]
        if keep:
            decoded = _decode_any(b"[" + b",".join(evs[j].args for j in keep) + b"]")
            add = self.args.add
            for j, a in zip(keep, decoded, strict=True):
                if isinstance(a, dict):
                    cv = a.get("correlation")
                    if type(cv) is int and corr[j] < 0:
                        corr[j] = cv
                    arg_ids[j] = add(a)
        x = c.x
        x["thread"].append(c.threads.pair_ids([e.pid for e in evs], [e.tid for e in evs]))
        x["ts"].append(ts)
        x["dur"].append(dur)
        x["name"].append(c.names.ids([e.name for e in evs]))
        x["cat"].append(c.cats.ids([e.cat for e in evs]))
        x["corr"].append(corr)
        x["args"].append(arg_ids)
        for j in [j for j, e in enumerate(evs) if e.bind_id is not None and (e.flow_in or e.flow_out)]:
            e = evs[j]  # flow v2: the step is this very slice
            phase = "t" if e.flow_in and e.flow_out else "f" if e.flow_in else "s"
            c.flows.append((-1, int(ts[j]), phase, True, "flow", ("bind_id", e.bind_id), c.order + j, c.n_x + j))
        c.n_x += n

    def _args(self, e: Any) -> dict[str, Any]:
        if not e.args:
            return {}
        a = _decode_any(e.args)
        return a if isinstance(a, dict) else {"value": a}

    def _other(self, e: Any, ts: int, order: int) -> None:
        c, ph = self.c, e.ph
        if ph in ("B", "E"):
            args = self.args.add(self._args(e)) if ph == "B" else -1
            c.begin_end.append((c.threads.id((e.pid, e.tid)), ts, order, ph == "B", c.names.id(e.name),
                                c.cats.id(e.cat), args))
        elif ph in INSTANT_PHASES:
            scope = e.s if e.s in ("g", "p") else "t"
            thread = c.threads.id((e.pid, e.tid)) if scope == "t" else -1
            c.instants.append((scope, e.pid, thread, ts, c.names.id(e.name), c.cats.id(e.cat),
                               self.args.add(self._args(e))))
        elif ph == "C":
            series = e.name if e.id is None else f"{e.name} {e.id}"
            values = {k: v for k, v in self._args(e).items() if isinstance(v, int | float) and not isinstance(v, bool)}
            for k, v in values.items():
                c.counters.append((e.pid, series if len(values) == 1 else f"{series} {k}", ts, float(v)))
        elif ph in ASYNC_PHASES:
            args = self.args.add(self._args(e)) if ph != "e" else -1
            c.asyncs.append((e.pid, e.cat, event_id(e), e.name, ts, ASYNC_PHASES[ph], order, args))
        elif ph in FLOW_PHASES:
            if e.cat in self.skip_flow_cats:
                c.stats[f"flow_events_replaced_{e.cat}"] += 1
                return
            c.flows.append((c.threads.id((e.pid, e.tid)), ts, ph, e.bp == "e" or ph == "s", e.cat, event_id(e),
                            order, e.xslice))
        else:
            c.stats[f"skipped_phase_{ph or 'missing'}"] += 1
            c.stats["skipped_events"] += 1

    def _metadata(self, evs: list[Any]) -> None:
        """Process and thread names, labels and sort order; repeats are counted once each."""
        c = self.c
        # The last of repeated names wins; group (name, pid, tid) in numpy first (MTIA: 310k repeats).
        rev = evs[::-1]
        lane = self._meta_lanes.pair_ids([e.pid for e in rev], [e.tid for e in rev])
        key = self._meta_keys.pair_ids(self._meta_names.ids([e.name for e in rev]).tolist(), lane.tolist())
        last = sorted((len(evs) - 1 - np.unique(key, return_index=True)[1]).tolist())
        fresh = {(evs[i].name, evs[i].pid, evs[i].tid): evs[i] for i in last}
        c.stats["duplicate_metadata_events"] += len(evs) - len(fresh.keys() - self._seen_meta)
        self._seen_meta.update(fresh)
        new = fresh.values()
        for e in new:
            if e.name not in METADATA_NAMES:
                c.stats["skipped_metadata_events"] += 1
                continue
            args = self._args(e)
            value = args.get("name", args.get("labels", args.get("sort_index")))
            if value is not None:
                c.meta[(e.name, e.pid, e.tid if e.name.startswith("thread") else None)] = value
