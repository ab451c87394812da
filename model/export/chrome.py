"""Export a Trace as Chrome Trace Event JSON that Perfetto UI and chrome://tracing open.

Tracks become thread lanes of their parent's process lane; slices are ``X`` events, instants
``i``, counters ``C``, flows ``s``/``f`` whose bind points land on exactly their slices, with
exact decimal µs timestamps. A top-level ``"accelview"`` key, which other tools ignore, carries
what accelview's importer needs to rebuild the same tracks (docs/IMPORT.md, "Export").
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ..schema import OP_COUNTER_COLUMNS, ArgKind, TrackKind
from ..trace import Trace

# What a profiler without hardware counters records of an op: its name, shapes and FLOPs
# (PyTorch's record_shapes and with_flops), never the bytes or cycles the device measured.
MEASURED_ARGS = frozenset({*(c for c, _ in OP_COUNTER_COLUMNS if c != "flops"), "bytes_read", "bytes_written"})
EXPORT_MARKER = "accelviewExport"
EXPORT_VERSION = 1
_enc = msgspec.json.encode


def _us(ns: int) -> str:
    """Exact decimal µs of an integer ns value."""
    sign = "-" if ns < 0 else ""
    q, r = divmod(abs(ns), 1000)
    return f"{sign}{q}.{r:03d}" if r else f"{sign}{q}"


class _Strings:
    """JSON-encoded strings of the trace's string table, encoded once each."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.cache: dict[int, str] = {}

    def __call__(self, i: int) -> str:
        s = self.cache.get(i)
        if s is None:
            s = self.cache[i] = _enc(self.trace.strings[i]).decode()
        return s


def _child_at_start(trace: Trace) -> np.ndarray:
    """Per slice: whether a slice one level deeper on its track starts at the same time."""
    sl, runs = trace.slices, trace.runs
    out = np.zeros(len(sl), dtype=bool)
    where = {(int(t), int(d)): (int(b), int(e)) for t, d, b, e in zip(runs.track, runs.depth, runs.begin, runs.end,
                                                                       strict=True)}
    for (t, d), (b, e) in where.items():
        child = where.get((t, d + 1))
        if child is not None:
            out[b:e] = np.isin(sl.start_ns[b:e], sl.start_ns[child[0]:child[1]])
    return out


def _bind_points(trace: Trace, ids: np.ndarray, child_at_start: np.ndarray) -> np.ndarray:
    """A timestamp inside each slice at which it is the deepest slice of its track."""
    sl = trace.slices
    ts = sl.start_ns[ids].copy()
    for j in np.flatnonzero(child_at_start[ids]).tolist():
        sid = int(ids[j])
        track, depth, start = int(sl.track[sid]), int(sl.depth[sid]), int(sl.start_ns[sid])
        end = start + int(sl.dur_ns[sid])
        kids = [k for k in trace.window(track, start, max(end, start + 1)).tolist() if sl.depth[k] == depth + 1]
        t = start
        for k in sorted(kids, key=lambda k: int(sl.start_ns[k])):
            if int(sl.start_ns[k]) > t:
                break
            t = max(t, int(sl.start_ns[k] + sl.dur_ns[k]))
        ts[j] = t if t < end else start
    return ts


def _events(trace: Trace, counters: bool = True) -> Iterator[str]:
    s = _Strings(trace)
    tr, sl = trace.tracks, trace.slices
    parent = tr.parent
    pid = np.where(parent >= 0, parent, np.arange(len(tr)))
    has_events = np.zeros(len(tr), dtype=bool)
    for t in (sl.track, trace.instants.track):
        has_events[np.unique(t)] = True
    for p in np.unique(pid[has_events | (tr.kind == TrackKind.COUNTER)]).tolist():
        yield f'{{"ph":"M","name":"process_name","pid":{p},"tid":0,"args":{{"name":{_enc(_path(trace, p)).decode()}}}}}'
        yield f'{{"ph":"M","name":"process_sort_index","pid":{p},"tid":0,"args":{{"sort_index":{int(tr.sort[p])}}}}}'
    for t in np.flatnonzero(has_events).tolist():
        lane = f'"pid":{pid[t]},"tid":{t}'
        yield f'{{"ph":"M","name":"thread_name",{lane},"args":{{"name":{s(int(tr.name[t]))}}}}}'
        yield f'{{"ph":"M","name":"thread_sort_index",{lane},"args":{{"sort_index":{int(tr.sort[t])}}}}}'
    args_json = _args_json(trace, frozenset() if counters else MEASURED_ARGS)
    counted = _op_counters_json(trace, None if counters else ("flops",))
    if not counters:  # FLOPs where PyTorch records them: on the host call that launched the op
        counted = {_launcher(trace, i): v for i, v in counted.items()}
    for i, (t, st, du, nm, ca, co, ar) in enumerate(zip(
            sl.track.tolist(), sl.start_ns.tolist(), sl.dur_ns.tolist(), sl.name.tolist(), sl.category.tolist(),
            sl.correlation.tolist(), sl.args.tolist(), strict=True)):
        args = args_json[ar] if ar >= 0 else ""
        more = counted.get(i)
        if more is not None:  # the device's counters of an op, as arguments of its slice
            args = f"{args[:-1]},{more}}}" if len(args) > 2 else f"{{{more}}}"
        extra = (f',"correlation":{co}' if co >= 0 else "") + (f',"args":{args}' if args else "")
        yield (f'{{"ph":"X","pid":{pid[t]},"tid":{t},"ts":{_us(st)},"dur":{_us(du)},"name":{s(nm)},'
               f'"cat":{s(ca)}{extra}}}')
    ins = trace.instants
    for t, ts, nm, ca, ar in zip(ins.track.tolist(), ins.ts_ns.tolist(), ins.name.tolist(), ins.category.tolist(),
                                 ins.args.tolist(), strict=True):
        extra = f',"args":{args_json[ar]}' if ar >= 0 else ""
        yield f'{{"ph":"i","s":"t","pid":{pid[t]},"tid":{t},"ts":{_us(ts)},"name":{s(nm)},"cat":{s(ca)}{extra}}}'
    ct = trace.counters
    for t, ts, v in zip(*((ct.track.tolist(), ct.ts_ns.tolist(), ct.value.tolist()) if counters else ((), (), ())),
                        strict=True):
        yield (f'{{"ph":"C","pid":{pid[t]},"tid":{t},"ts":{_us(ts)},"name":{s(int(tr.name[t]))},'
               f'"args":{{"value":{_enc(v).decode()}}}}}')
    fl = trace.flows
    if len(fl):
        child = _child_at_start(trace)
        src_ts, dst_ts = _bind_points(trace, fl.src, child), _bind_points(trace, fl.dst, child)
        for i, (a, b, nm, ta, tb) in enumerate(zip(fl.src.tolist(), fl.dst.tolist(), fl.name.tolist(),
                                                   src_ts.tolist(), dst_ts.tolist(), strict=True)):
            ca, cb = int(sl.track[a]), int(sl.track[b])
            yield (f'{{"ph":"s","id":{i},"pid":{pid[ca]},"tid":{ca},"ts":{_us(ta)},"name":{s(nm)},"cat":{s(nm)},'
                   f'"xslice":{a}}}')
            yield (f'{{"ph":"f","bp":"e","id":{i},"pid":{pid[cb]},"tid":{cb},"ts":{_us(tb)},"name":{s(nm)},'
                   f'"cat":{s(nm)},"xslice":{b}}}')


def _launcher(trace: Trace, sid: int, hops: int = 4) -> int:
    """The runtime API call at the root of a slice's flow chain (the slice itself when none)."""
    fl, kinds = trace.flows, trace.tracks.kind
    cur = sid
    for _ in range(hops):
        src = fl.src[fl.dst == cur]
        if not len(src):
            break
        cur = int(src[0])
        if kinds[trace.slices.track[cur]] == TrackKind.RUNTIME_API:
            return cur
    return sid


def _path(trace: Trace, track: int) -> str:
    names = []
    while track >= 0:
        names.append(trace.track_name(track))
        track = int(trace.tracks.parent[track])
    return " / ".join(reversed(names))


def _args_json(trace: Trace, drop: frozenset[str] = frozenset()) -> dict[int, str]:
    """Each argument set as a JSON object, from one pass over the args table (sorted by set);
    keys in ``drop`` left out."""
    a = trace.tables["args"]
    sets: dict[int, dict[str, Any]] = {}
    name = trace.strings.__getitem__
    for st, key, kind, i, r, sv in zip(a.set.tolist(), a.key.tolist(), a.kind.tolist(), a.int.tolist(),
                                       a.real.tolist(), a.str.tolist(), strict=True):
        k = name(key)
        if k in drop:
            sets.setdefault(st, {})
            continue
        sets.setdefault(st, {})[k] = i if kind == ArgKind.INT else r if kind == ArgKind.REAL else name(sv)
    return {k: _enc(v).decode() for k, v in sets.items()}


def _op_counters_json(trace: Trace, only: tuple[str, ...] | None = None) -> dict[int, str]:
    """Each op slice's counters (``op_counters``; those in ``only`` when given) as the members
    of a JSON object, by slice id."""
    oc = trace.tables["op_counters"]
    if not len(oc):
        return {}
    kept = [c for c, _ in OP_COUNTER_COLUMNS if only is None or c in only]
    names = [_enc(c).decode() for c in kept]
    columns = [oc[c].tolist() for c in kept]
    return {s: ",".join(f"{n}:{_enc(v).decode()}" for n, v in zip(names, values, strict=True))
            for s, *values in zip(oc.slice.tolist(), *columns, strict=True)}


def _header(trace: Trace, counters: bool = True) -> dict[str, Any]:
    tr, ct = trace.tracks, trace.counter_tracks
    tracks = [[int(tr.parent[i]), int(tr.kind[i]), trace.name(int(tr.name[i])), trace.name(int(tr.host[i])),
               int(tr.device[i]), int(tr.sort[i])] for i in range(len(tr))]
    counters = [[int(ct.track[i]), trace.name(int(ct.unit[i])), trace.name(int(ct.block[i])),
                 trace.name(int(ct.description[i]))] for i in range(len(ct) if counters else 0)]
    return {"version": EXPORT_VERSION, "tracks": tracks, "counter_tracks": counters,
            "metadata": msgspec.json.decode(_enc(trace.metadata, enc_hook=str))}


def export_chrome(trace: Trace, path: str | Path, progress: Callable[[float], None] | None = None,
                  counters: bool = True) -> Path:
    """Write ``trace`` as Chrome trace JSON; gzipped when ``path`` ends in ``.gz``. Returns the path.
    Without ``counters``, as a profiler without hardware counters would have recorded it: no
    sampled counters and, of each op's measured figures, only its FLOPs (``MEASURED_ARGS``),
    on the host call that launched it."""
    path = Path(path)
    raw = gzip.open(path, "wb", compresslevel=6) if path.name.endswith(".gz") else open(path, "wb")  # noqa: SIM115
    total = max(len(trace.slices) + len(trace.counters) + len(trace.flows) * 2, 1)
    with raw, io.TextIOWrapper(raw, encoding="utf-8") as out:
        out.write(f'{{"{EXPORT_MARKER}":{EXPORT_VERSION},"displayTimeUnit":"ns",\n"accelview":')
        out.write(_enc(_header(trace, counters)).decode())
        out.write(',\n"traceEvents":[\n')
        for n, line in enumerate(_events(trace, counters)):
            out.write(line if n == 0 else ",\n" + line)
            if progress is not None and n % 100_000 == 0:
                progress(min(n / total, 1.0))
        out.write("\n]}\n")
    return path
