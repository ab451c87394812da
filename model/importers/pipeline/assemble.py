"""Turn one file's collected events into tracks, slices, flows, counters and instants.

The ``Lanes`` policy decides what each process and thread is (plain Chrome traces: processes
and threads; Kineto: host threads, GPU streams, DMA engines, under a rank). Timestamps get
the file's offset (Kineto's ``baseTimeNanoseconds``) here, so the collector never needs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...builder import TraceBuilder
from ...schema import ArgKind, TrackKind
from .collect import Collected
from .flows import SliceIndex, chain_flows, correlation_flows
from .interner import Interner

INT32_MAX = 2**31 - 1
CATEGORY_MAX = 2**15 - 1  # slices.category is int16


@dataclass
class Lane:
    """What one track is: its kind, name, device number and sibling order."""

    kind: TrackKind
    name: str
    device: int = -1
    sort: int | None = None


class Lanes:
    """Plain Chrome policy: a PROCESS track per pid, a HOST_THREAD track per thread."""

    def process(self, pid: Any, meta: dict[tuple, Any], cats: set[str]) -> Lane:
        """The lane of a process."""
        name = meta.get(("process_name", pid, None))
        return Lane(TrackKind.PROCESS, f"{name} ({pid})" if name else f"process {pid}",
                    sort=_sort(meta.get(("process_sort_index", pid, None))))

    def thread(self, pid: Any, tid: Any, meta: dict[tuple, Any], cats: set[str], proc: Lane) -> Lane:
        """The lane of a thread of a process."""
        name = meta.get(("thread_name", pid, tid))
        return Lane(TrackKind.HOST_THREAD, str(name) if name else f"thread {tid}",
                    sort=_sort(meta.get(("thread_sort_index", pid, tid))))

    def correlate(self) -> bool:
        """Whether slices sharing a correlation id are linked host → device."""
        return False


def _sort(v: Any) -> int | None:
    return max(-INT32_MAX, min(INT32_MAX, v)) if isinstance(v, int) and not isinstance(v, bool) else None


class Assembler:
    """Pushes ``Collected`` files into one ``TraceBuilder`` (one per file, one builder)."""

    def __init__(self, builder: TraceBuilder) -> None:
        self.b = builder
        self.arg_sets = 0  # argument sets of the files added so far
        self.names = Interner()
        self.name_map: list[int] = []

    def map_names(self) -> np.ndarray:
        """The current file's name id → trace string id, for every name interned so far."""
        intern = self.b.strings.intern
        keys = list(self.names)
        self.name_map.extend(intern(s) for s in keys[len(self.name_map):])
        return np.asarray(self.name_map, dtype=np.int32)

    def add_file(self, c: Collected, lanes: Lanes, offset_ns: int = 0, parent: int = -1,
                 explicit: dict[str, Any] | None = None) -> None:
        """Create the file's tracks under ``parent`` and add all its events. ``explicit`` is the
        track table of an accelview export: its tracks are rebuilt as they were."""
        b = self.b
        self.names, self.name_map = c.names, []
        x = {k: (np.concatenate(v) if v else np.empty(0, np.int64)) for k, v in c.x.items()}
        extra = _match_begin_end(c)
        for k in x:
            x[k] = np.concatenate([x[k], extra[k]]) if len(extra[k]) else x[k]
        cat_map = np.asarray([b.strings.intern(s) for s in c.cats] or [0], dtype=np.int64)
        if (cat_map > CATEGORY_MAX).any():
            c.stats["categories_dropped_id_overflow"] += int((cat_map > CATEGORY_MAX).sum())
            cat_map[cat_map > CATEGORY_MAX] = 0
        names = self.map_names()
        thread_keys = list(c.threads)
        cats_of = _categories_per_thread(x["thread"], x["cat"], list(c.cats), len(thread_keys))
        if explicit is not None:
            proc_track, thread_track, counter_of = self._explicit_tracks(c, explicit, parent)
        else:
            proc_track, thread_track = self._tracks(c, lanes, parent, cats_of)
            counter_of = None
        track = thread_track[x["thread"]] if len(thread_keys) else np.empty(0, np.int32)
        ids = b.add_slices(track, x["ts"] + offset_ns, x["dur"], names[x["name"]], cat_map[x["cat"]],
                           x["corr"], self._arg_ids(x["args"])) if len(track) else np.empty(0, np.int64)
        stats = self._stats = c.stats
        stats["slices"] += len(ids)
        if c.flows:
            asked = np.unique(np.fromiter((f[0] for f in c.flows), dtype=np.int64, count=len(c.flows)))
            chained = chain_flows(c.flows, SliceIndex(x["thread"], x["ts"], x["dur"], ids, asked), stats)
            if chained:
                src, dst, cat = zip(*chained, strict=True)
                self._add_flows(np.asarray(src), np.asarray(dst), [b.strings.intern(n) for n in cat])
        if explicit is None and lanes.correlate() and len(ids):
            on_device = np.isin(self._thread_kinds, [int(k) for k in DEVICE_KINDS])
            src, dst = correlation_flows(x["corr"], on_device[x["thread"]], ids)
            self._add_flows(src, dst, b.strings.intern("ac2g"))
            stats["correlation_flows"] += len(src)
        self._instants(c, proc_track, thread_track, names, cat_map, offset_ns, parent)
        self._counters(c, proc_track, offset_ns, counter_of)
        self._asyncs(c, proc_track, offset_ns)
        self._args(c)

    def _arg_ids(self, ids: np.ndarray) -> np.ndarray:
        """A file's argument set ids as the trace's (-1 stays -1)."""
        return np.where(ids >= 0, ids + self.arg_sets, -1)

    def _args(self, c: Collected) -> None:
        cols = c.args.columns()
        if cols:
            names = self.map_names()
            cols["set"] = cols["set"] + self.arg_sets
            cols["key"] = names[cols["key"]]
            cols["str"] = np.where(cols["kind"] == ArgKind.STR, names[cols["str"]], 0)  # 0: the empty string
            self.b.add_rows("args", cols)
        self.arg_sets += c.args.n_sets

    def _add_flows(self, src: np.ndarray, dst: np.ndarray, name: Any) -> None:
        if len(src):
            self.b.add_rows("flows", {"src": src, "dst": dst, "name": np.broadcast_to(np.asarray(name), src.shape)})
            self._stats["flows"] += len(src)

    def _instants(self, c: Collected, proc_track: dict, thread_track: np.ndarray, names: np.ndarray,
                  cat_map: np.ndarray, offset_ns: int, parent: int) -> None:
        """Instants on their thread ("t"), process ("p") or a global track ("g"), in numpy."""
        c.stats["instants"] += 0  # reported even when there are none
        if not c.instants:
            return
        scope, pid, thread, ts, name, cat, args = zip(*c.instants, strict=True)
        scope_a = np.asarray(scope)
        track = np.full(len(scope), -1, dtype=np.int64)
        on_thread = scope_a == "t"
        track[on_thread] = thread_track[np.asarray(thread)[on_thread]]
        for i in np.flatnonzero(scope_a == "p").tolist():
            track[i] = proc_track.get(pid[i], -1)
        if (scope_a == "g").any():
            track[scope_a == "g"] = self.b.add_track("global instants", TrackKind.OTHER, parent)
        kept = track >= 0
        if not kept.all():
            c.stats["instants_without_track"] += int((~kept).sum())
        args_a = np.asarray(args, dtype=np.int64)
        rows = {"track": track, "ts_ns": np.asarray(ts, dtype=np.int64) + offset_ns,
                "name": names[np.asarray(name)], "category": cat_map[np.asarray(cat)],
                "args": np.where(args_a >= 0, args_a + self.arg_sets, -1)}
        self.b.add_rows("instants", {k: v[kept] for k, v in rows.items()})
        c.stats["instants"] += int(kept.sum())

    def _add_instants(self, rows: list[tuple]) -> None:
        if rows:
            cols = list(zip(*rows, strict=True))
            self.b.add_rows("instants", {k: np.asarray(v) for k, v in
                                         zip(("track", "ts_ns", "name", "category", "args"), cols, strict=True)})

    def _counters(self, c: Collected, proc_track: dict, offset_ns: int, counter_of: dict | None) -> None:
        series: dict[tuple, list[tuple[int, float]]] = {}
        for pid, name, ts, value in c.counters:
            series.setdefault((pid, name), []).append((ts, value))
        for (pid, name), samples in series.items():
            if counter_of is not None:
                track = counter_of.get((pid, name), -1)
            elif pid in proc_track:
                track = self.b.add_counter_track(name, "", parent=proc_track[pid])
            else:
                track = -1
            if track < 0:
                c.stats["counter_samples_without_track"] += len(samples)
                continue
            ts, values = zip(*samples, strict=True)
            self.b.add_counters(track, np.asarray(ts, dtype=np.int64) + offset_ns, np.asarray(values, dtype=np.float64))
            c.stats["counter_samples"] += len(samples)

    def _tracks(self, c: Collected, lanes: Lanes, parent: int, cats_of: list[set[str]]) -> tuple:
        """Process and thread tracks by the ``lanes`` policy."""
        b = self.b
        thread_keys = list(c.threads)
        proc_track: dict[Any, int] = {}
        proc_lane: dict[Any, Lane] = {}
        pids = list(dict.fromkeys([k[0] for k in thread_keys] + [a[0] for a in c.asyncs] + [k[0] for k in c.counters]
                                  + [i[1] for i in c.instants if i[0] == "p"]))
        cats_of_pid: dict[Any, set[str]] = {}
        for i, k in enumerate(thread_keys):  # one pass: a scan of every thread per process is quadratic
            cats_of_pid.setdefault(k[0], set()).update(cats_of[i])
        for pid in pids:
            pcats = cats_of_pid.get(pid, set())
            lane = proc_lane[pid] = lanes.process(pid, c.meta, pcats)
            proc_track[pid] = b.add_track(lane.name, lane.kind, parent, device=lane.device, sort=lane.sort)
        thread_track = np.empty(len(thread_keys), dtype=np.int32)
        self._thread_kinds = np.empty(len(thread_keys), dtype=np.int64)
        for i, (pid, tid) in enumerate(thread_keys):
            lane = lanes.thread(pid, tid, c.meta, cats_of[i], proc_lane[pid])
            thread_track[i] = b.add_track(lane.name, lane.kind, proc_track[pid], device=lane.device, sort=lane.sort)
            self._thread_kinds[i] = int(lane.kind)
        return proc_track, thread_track

    def _explicit_tracks(self, c: Collected, header: dict[str, Any], parent: int) -> tuple:
        """Rebuild an export's tracks; its lanes are (pid, tid) = (parent or self, track id)."""
        b = self.b
        counters = {int(row[0]): row[1:] for row in header.get("counter_tracks", [])}
        base = -1
        ids = []
        for i, (par, kind, name, host, device, sort) in enumerate(header["tracks"]):
            p = parent if par < 0 else base + par
            if i in counters:
                unit, block, desc = counters[i]
                t = b.add_counter_track(name, unit, block, desc, parent=p, host=host, device=device)
            else:
                t = b.add_track(name, TrackKind(kind), p, host=host, device=device, sort=sort)
            if i == 0:
                base = t
            ids.append(t)
        n = len(ids)
        proc_track = {i: base + i for i in range(n)}
        thread_track = np.empty(len(c.threads), dtype=np.int32)
        for j, (_pid, tid) in enumerate(c.threads):
            if not isinstance(tid, int) or not 0 <= tid < n:
                raise ValueError(f"lane tid {tid!r} is not a track of the export")
            thread_track[j] = base + tid
        counter_of = {}
        for i, (par, *_rest) in enumerate(header["tracks"]):
            if i in counters:
                counter_of[(par if par >= 0 else i, header["tracks"][i][2])] = base + i
        return proc_track, thread_track, counter_of

    def _asyncs(self, c: Collected, proc_track: dict, offset_ns: int) -> None:
        tracks: dict[tuple, int] = {}
        open_: dict[tuple, list[tuple]] = {}
        slices: list[tuple] = []
        instants: list[tuple] = []
        name_id = self.names.id

        def cat_id(cat: str) -> int:
            i = self.b.strings.intern(cat)
            return i if i <= CATEGORY_MAX else 0

        for pid, cat, aid, name, ts, phase, _order, args in sorted(c.asyncs, key=lambda a: (a[4], a[6])):
            key = (pid, cat, aid)
            if phase == "b":
                open_.setdefault(key, []).append((name, ts, args))
            elif phase == "n":
                track = self._async_track(tracks, pid, name, proc_track)
                instants.append((track, ts + offset_ns, name_id(name), cat_id(cat), args))
            elif open_.get(key):
                bname, bts, bargs = open_[key].pop()
                track = self._async_track(tracks, pid, bname, proc_track)
                slices.append((track, bts + offset_ns, max(ts - bts, 0), name_id(bname), cat_id(cat), bargs))
            else:
                c.stats["async_ends_without_begin"] += 1
        c.stats["async_begins_without_end"] += sum(len(v) for v in open_.values())
        names = self.map_names()
        if slices:
            t, st, du, nm, ca, ar = (np.asarray(v) for v in zip(*slices, strict=True))
            self.b.add_slices(t, st, du, names[nm], ca, -1, self._arg_ids(ar))
            c.stats["async_slices"] += len(slices)
        self._add_instants([(t, ts, names[n], ca, a + self.arg_sets if a >= 0 else -1) for t, ts, n, ca, a in instants])

    def _async_track(self, tracks: dict, pid: Any, name: str, proc_track: dict) -> int:
        key = (pid, name)
        if key not in tracks:
            tracks[key] = self.b.add_track(name, TrackKind.OTHER, proc_track.get(pid, -1))
        return tracks[key]


DEVICE_KINDS = {TrackKind.GPU_STREAM, TrackKind.EXEC_UNIT, TrackKind.DMA_ENGINE, TrackKind.DEVICE}


def _categories_per_thread(thread: np.ndarray, cat: np.ndarray, cats: list[str], n: int) -> list[set[str]]:
    out: list[set[str]] = [set() for _ in range(n)]
    if len(thread):
        key = thread.astype(np.int64) * (len(cats) + 1) + cat
        span = n * (len(cats) + 1)  # counting every possible pair beats sorting, unless pairs far outnumber events
        pairs = np.flatnonzero(np.bincount(key, minlength=span)) if span <= 4 * len(key) + 1024 else np.unique(key)
        for p in pairs.tolist():
            out[p // (len(cats) + 1)].add(cats[p % (len(cats) + 1)])
    return out


def _match_begin_end(c: Collected) -> dict[str, np.ndarray]:
    """Slices from B/E pairs: per thread, in time order, E closes the latest open B."""
    rows: list[tuple] = []
    stacks: dict[int, list[tuple]] = {}
    last_ts = 0
    for thread, ts, _order, is_begin, name, cat, args in sorted(c.begin_end, key=lambda e: (e[0], e[1], e[2])):
        last_ts = max(last_ts, ts)
        if is_begin:
            stacks.setdefault(thread, []).append((ts, name, cat, args))
        elif stacks.get(thread):
            bts, name_b, cat_b, args_b = stacks[thread].pop()
            rows.append((thread, bts, ts - bts, name_b, cat_b, -1, args_b))
        else:
            c.stats["end_events_without_begin"] += 1
    for thread, stack in stacks.items():  # unclosed: they last to the end of the trace
        for bts, name_b, cat_b, args_b in stack:
            rows.append((thread, bts, max(last_ts - bts, 0), name_b, cat_b, -1, args_b))
            c.stats["begin_events_without_end"] += 1
    cols = ("thread", "ts", "dur", "name", "cat", "corr", "args")
    dtypes = (np.int32, np.int64, np.int64, np.int32, np.int32, np.int64, np.int32)
    return {k: np.asarray([r[i] for r in rows], dtype=dt) for i, (k, dt) in enumerate(zip(cols, dtypes, strict=True))}

