"""Two traces compared table by table with string and argument-set ids resolved: equal when
an export and import, or a save and load, kept everything."""

from __future__ import annotations

from collections import Counter

from accelview.model import Trace


def track_rows(t: Trace) -> list[tuple]:
    tr = t.tracks
    return [(int(tr.parent[i]), int(tr.kind[i]), t.name(tr.name[i]), t.name(tr.host[i]), int(tr.device[i]),
             int(tr.sort[i])) for i in range(len(tr))]


def arg_sets(t: Trace) -> dict[int, str]:
    a = t.tables["args"]
    out: dict[int, list] = {}
    for row in zip(a.set.tolist(), a.key.tolist(), a.kind.tolist(), a.int.tolist(), a.real.tolist(), a.str.tolist(),
                   strict=True):
        out.setdefault(row[0], []).append((t.name(row[1]), row[2], row[3], row[4], t.name(row[5])))
    return {k: repr(sorted(v)) for k, v in out.items()}


def slice_rows(t: Trace) -> list[tuple]:
    sl, args, name = t.slices, arg_sets(t), t.strings.strings()
    return list(zip(sl.track.tolist(), sl.start_ns.tolist(), sl.dur_ns.tolist(), sl.depth.tolist(),
                    [name[i] for i in sl.name.tolist()], [name[i] for i in sl.category.tolist()],
                    sl.correlation.tolist(), [args.get(a, "") for a in sl.args.tolist()], strict=True))


def flow_rows(t: Trace) -> Counter:
    rows = slice_rows(t)
    return Counter((rows[s], rows[d], t.name(n)) for s, d, n in zip(t.flows.src.tolist(), t.flows.dst.tolist(),
                                                                     t.flows.name.tolist(), strict=True))


def other_rows(t: Trace) -> tuple[list, list, list]:
    ins, ct, cd = t.instants, t.counters, t.counter_tracks
    return ([(int(ins.track[i]), int(ins.ts_ns[i]), t.name(ins.name[i]), t.name(ins.category[i]),
              t.args(int(ins.args[i]))) for i in range(len(ins))],
            list(zip(ct.track.tolist(), ct.ts_ns.tolist(), ct.value.tolist(), strict=True)),
            [(int(cd.track[i]), t.name(cd.unit[i]), t.name(cd.block[i]), t.name(cd.description[i]))
             for i in range(len(cd))])


def assert_same(a: Trace, b: Trace) -> None:
    assert b.self_check() == []
    assert track_rows(a) == track_rows(b)
    assert slice_rows(a) == slice_rows(b)
    assert flow_rows(a) == flow_rows(b)
    assert other_rows(a) == other_rows(b)
