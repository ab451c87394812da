"""Merge one file's batch digests, in order, into a ``Collected``: its string and thread
tables, complete-event columns, argument sets, and the rarer phases as small tuples.

Digests carry local ids; here they become the file's ids (vectorised). B/E, instants,
counters, async events and flows are few and handled one by one; phases the importer does
not know are counted, not thrown.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...schema import ArgKind
from .args import ArgColumns
from .digest import FLOW_PHASES, Digest
from .interner import Interner

METADATA_NAMES = {"process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"}
ASYNC_PHASES = {"b": "b", "e": "e", "n": "n", "S": "b", "F": "e"}
INSTANT_PHASES = {"i", "I", "R"}
X_COLUMNS = ("thread", "ts", "dur", "name", "cat", "corr", "args")


def event_id(e: Any) -> Any:
    """An async or flow event's id: ``id``, else its ``id2`` (local or global)."""
    return e.id if e.id is not None or not e.id2 else tuple(sorted(e.id2.items()))


@dataclass
class Collected:
    """Everything gathered from one file, before tracks exist. String columns are ids of
    ``names`` (categories of ``cats``); argument sets are numbered within the file."""

    threads: Interner = field(default_factory=Interner)  # (pid, tid) -> thread index
    names: Interner = field(default_factory=Interner)  # names, argument keys and string values
    cats: Interner = field(default_factory=Interner)
    args: ArgColumns = field(init=False)
    x: dict[str, list[np.ndarray]] = field(default_factory=lambda: {k: [] for k in X_COLUMNS})
    begin_end: list[tuple] = field(default_factory=list)  # (thread, ts, order, is_begin, name, cat, args)
    instants: list[tuple] = field(default_factory=list)  # (scope, pid, thread, ts, name, cat, args)
    counters: list[tuple] = field(default_factory=list)  # (pid, series name, ts, value)
    asyncs: list[tuple] = field(default_factory=list)  # (pid, cat, id, name, ts, phase, order, args)
    flows: list[tuple] = field(default_factory=list)  # (thread, ts, phase, enclosing, cat, id, order, xslice)
    meta: dict[tuple, Any] = field(default_factory=dict)  # (what, pid, tid) -> value
    stats: Counter = field(default_factory=Counter)
    order: int = 0  # events so far (an event's order breaks ties between equal timestamps)
    n_x: int = 0  # complete events so far (their order is the xslice of flow steps)

    def __post_init__(self) -> None:
        self.args = ArgColumns(self.names.ids)


class Collector:
    """Merges digests, in file order, into a ``Collected``."""

    def __init__(self) -> None:
        self.c = Collected()
        self._seen_meta: set[tuple] = set()

    def add(self, d: Digest) -> None:
        """Take the next batch's digest."""
        c = self.c
        c.stats["events"] += d.events + d.malformed
        c.stats["malformed_events"] += d.malformed
        c.stats.update(d.stats)
        if d.x:
            self._complete(d)
        if d.meta_events:
            self._metadata(d)
        for j, ts, e, args in d.others:
            self._other(e, ts, c.order + j, args)
        c.order += d.events

    def _complete(self, d: Digest) -> None:
        c, x = self.c, d.x
        names = c.names.ids(d.strings)
        base = c.args.add_rows(_remap_strings(d.args, names), d.arg_sets) if d.arg_sets else 0
        c.x["thread"].append(c.threads.ids(d.threads)[x["thread"]])
        c.x["ts"].append(x["ts"])
        c.x["dur"].append(x["dur"])
        c.x["name"].append(names[x["name"]])
        c.x["cat"].append(c.cats.ids(d.cats)[x["cat"]])
        c.x["corr"].append(x["corr"])
        c.x["args"].append(np.where(x["args"] >= 0, x["args"] + np.int32(base), np.int32(-1)))
        for j, ts, phase, bind_id in d.flows_v2:
            c.flows.append((-1, ts, phase, True, "flow", ("bind_id", bind_id), c.order + j, c.n_x + j))
        c.n_x += len(x["ts"])

    def _metadata(self, d: Digest) -> None:
        """Process and thread names, labels and sort order; repeats are counted once each."""
        c = self.c
        keys = [m[:3] for m in d.meta]
        c.stats["duplicate_metadata_events"] += d.meta_events - len(set(keys) - self._seen_meta)
        self._seen_meta.update(keys)
        for name, pid, tid, value in d.meta:
            if name not in METADATA_NAMES:
                c.stats["skipped_metadata_events"] += 1
            elif value is not None:
                c.meta[(name, pid, tid if name.startswith("thread") else None)] = value

    def _other(self, e: Any, ts: int, order: int, args: dict[str, Any]) -> None:
        c, ph = self.c, e.ph
        if ph in ("B", "E"):
            c.begin_end.append((c.threads.id((e.pid, e.tid)), ts, order, ph == "B", c.names.id(e.name),
                                c.cats.id(e.cat), c.args.add(args) if ph == "B" else -1))
        elif ph in INSTANT_PHASES:
            scope = e.s if e.s in ("g", "p") else "t"
            thread = c.threads.id((e.pid, e.tid)) if scope == "t" else -1
            c.instants.append((scope, e.pid, thread, ts, c.names.id(e.name), c.cats.id(e.cat), c.args.add(args)))
        elif ph == "C":
            series = e.name if e.id is None else f"{e.name} {e.id}"
            values = {k: v for k, v in args.items() if isinstance(v, int | float) and not isinstance(v, bool)}
            for k, v in values.items():
                c.counters.append((e.pid, series if len(values) == 1 else f"{series} {k}", ts, float(v)))
        elif ph in ASYNC_PHASES:
            c.asyncs.append((e.pid, e.cat, event_id(e), e.name, ts, ASYNC_PHASES[ph], order,
                             c.args.add(args) if ph != "e" else -1))
        elif ph in FLOW_PHASES:
            xslice = e.xslice if 0 <= e.xslice < 2**62 else -1  # beyond any file's events: none named
            c.flows.append((c.threads.id((e.pid, e.tid)), ts, ph, e.bp == "e" or ph == "s", e.cat, event_id(e),
                            order, xslice))
        else:
            c.stats[f"skipped_phase_{ph or 'missing'}"] += 1
            c.stats["skipped_events"] += 1


def _remap_strings(rows: dict[str, np.ndarray], names: np.ndarray) -> dict[str, np.ndarray]:
    """Argument rows with their string columns turned from a digest's ids into the file's."""
    return {**rows, "key": names[rows["key"]], "str": np.where(rows["kind"] == ArgKind.STR, names[rows["str"]], 0)}
