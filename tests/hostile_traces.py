"""A corpus of hostile traces for every JSON reader (Chrome trace JSON, Kineto, accelview's own
export), generated rather than stored: each case writes its file(s) into a folder and says what
must happen, either the one line the reader answers (a part of it) or a load, perhaps with
import statistics that must count what was dropped (tests/test_hostile_traces.py).

The classes are the issue's: depth, numbers out of range, wrong types, encoding, files that are
not files, lies in accelview's own export header, and HDF5 captures whose tracks loop or whose
slices nest deeper than a capture stores."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

DEEP = 200_000  # nesting far past any recursion limit
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Case:
    """One hostile input: ``make(folder)`` writes it and returns the path to open. ``error``: a
    part of the one-line message (None: it must load); ``stats``: import statistics a load must
    show (key -> count, 0: at least one)."""

    reader: str
    make: Callable[[Path], Path]
    error: str | None = None
    stats: dict[str, int] = field(default_factory=dict)


def _x(ts: object = 1.0, dur: object = 2.0, **kw: object) -> dict:
    return {"ph": "X", "pid": 1, "tid": 1, "ts": ts, "dur": dur, "name": "op", "cat": "c", **kw}


GOOD_EVENTS = [
    {"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": "proc"}},
    {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "main"}},
    _x(1.0, 10.0, name="outer"), _x(2.0, 3.0, name="inner", args={"k": 1, "s": "v"}),
    {"ph": "B", "pid": 1, "tid": 2, "ts": 5.0, "name": "b"}, {"ph": "E", "pid": 1, "tid": 2, "ts": 7.0},
    {"ph": "i", "s": "t", "pid": 1, "tid": 1, "ts": 4.0, "name": "mark"},
    {"ph": "C", "pid": 1, "ts": 1.0, "name": "mem", "args": {"value": 3}},
    {"ph": "C", "pid": 1, "ts": 2.0, "name": "mem", "args": {"value": 4.5}},
]


def _write(name: str, data: bytes | str, gz: bool = False) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        raw = data.encode() if isinstance(data, str) else data
        path = folder / name
        path.write_bytes(gzip.compress(raw, compresslevel=1) if gz else raw)
        return path
    return make


def _doc(events: list, name: str = "t.json", gz: bool = False, **top: object) -> Callable[[Path], Path]:
    return _write(name, json.dumps({"traceEvents": events, **top}), gz)


def _events_with(*extra: object, name: str = "t.json") -> Callable[[Path], Path]:
    """The good events plus raw JSON texts (or objects) spliced in."""
    parts = [json.dumps(e) for e in GOOD_EVENTS] + [x if isinstance(x, str) else json.dumps(x) for x in extra]
    return _write(name, '{"traceEvents":[' + ",".join(parts) + "]}")


def _deep(opener: str = "[", n: int = DEEP) -> str:
    closer = {"[": "]", "{": "}"}[opener]
    if opener == "{":
        return '{"a":' * n + "1" + closer * n
    return opener * n + closer * n


def _kineto(events: list, name: str = "k.json", **top: object) -> Callable[[Path], Path]:
    doc = {"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "deviceProperties": [],
           "traceEvents": [
               {"ph": "X", "pid": 7, "tid": 7, "ts": 10.0, "dur": 5.0, "name": "cudaLaunchKernel",
                "cat": "cuda_runtime", "args": {"correlation": 1}},
               {"ph": "X", "pid": 0, "tid": 7, "ts": 12.0, "dur": 3.0, "name": "gemm", "cat": "kernel",
                "args": {"correlation": 1, "device": 0, "stream": 7}},
               *events]}
    doc.update(top)
    return _write(name, json.dumps(doc))


def _export_doc(tracks: object = None, counter_tracks: object = None, metadata: object = None,
                events: list | None = None, header: object = None, raw_header: str | None = None) -> Callable:
    """accelview's own export (a Chrome JSON whose ``accelview`` key holds the track table)."""
    if header is None:
        header = {"version": 1,
                  "tracks": [[-1, 1, "host", "h", -1, 0], [0, 2, "thread", "h", -1, 1]] if tracks is None else tracks,
                  "counter_tracks": [] if counter_tracks is None else counter_tracks,
                  "metadata": {} if metadata is None else metadata}
    evs = [{"ph": "X", "pid": 0, "tid": 1, "ts": 1, "dur": 2, "name": "op", "cat": "c"}] if events is None else events
    text = raw_header if raw_header is not None else json.dumps(header)
    return _write("e.json", '{"accelviewExport":1,"accelview":' + text + ',"traceEvents":' + json.dumps(evs) + "}")


def _gzip_cut(cut: int, flip: int | None = None) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        body = json.dumps({"traceEvents": GOOD_EVENTS * 4000}).encode()
        data = bytearray(gzip.compress(body, compresslevel=6))
        if flip is not None:
            at = len(data) * flip // 100
            data[at : at + 16] = bytes(b ^ 0x5A for b in data[at : at + 16])
        else:
            data = data[: len(data) * cut // 100]
        path = folder / "t.json.gz"
        path.write_bytes(bytes(data))
        return path
    return make


def _gzip_bomb(head: bytes, n: int = 72 << 20, name: str = "bomb.json.gz") -> Callable[[Path], Path]:
    """``head`` followed by ``n`` bytes of one long string, compressed ~1000:1, written in pieces."""
    def make(folder: Path) -> Path:
        path = folder / name
        z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        piece = b"a" * (1 << 20)
        with open(path, "wb") as f:
            f.write(z.compress(head))
            for _ in range(n >> 20):
                f.write(z.compress(piece))
            f.write(z.compress(b'"}]}') + z.flush())
        return path
    return make


def _fifo(folder: Path) -> Path:
    path = folder / "pipe.json"
    os.mkfifo(path)
    return path


def _dir_of(files: dict[str, bytes]) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        d = folder / "ranks"
        d.mkdir()
        for name, data in files.items():
            (d / name).write_bytes(data)
        return d
    return make


def _many_pids(n: int) -> Callable[[Path], Path]:
    return _doc([_x(float(i), 1.0, pid=i, tid=i) for i in range(n)])


def _nested_x(n: int) -> Callable[[Path], Path]:
    """``n`` complete events on one thread, each inside the one before: slices nested ``n`` deep."""
    return _write("deep_calls.json", '{"traceEvents":[' + ",".join(
        f'{{"ph":"X","pid":1,"tid":1,"ts":{i},"dur":{2 * (n - i)},"name":"f"}}' for i in range(n)) + "]}")


BAD_UTF8 = b'{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"op","args":{"k":"\xff\xfe"}}]}'

CASES: dict[str, Case] = {
    # -- depth: nesting anywhere, as deep as a file likes ---------------------------------
    "depth: top-level array": Case("chrome", _write("t.json", _deep("[")), "nested deeper than"),
    "depth: top-level object": Case("chrome", _write("t.json", _deep("{")), "nested deeper than"),
    "depth: an event of the array": Case("chrome", _write("t.json", '{"traceEvents":[' + _deep("[") + "]}"),
                                         "nested deeper than"),
    "depth: header key": Case("chrome", _write("t.json", '{"other":' + _deep("[") + ',"traceEvents":[]}'),
                              "nested deeper than"),
    "depth: X args": Case("chrome", _write("t.json", '{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,'
                                                    '"name":"op","args":{"d":' + _deep("[") + "}}]}"),
                          "nested deeper than"),
    "depth: B args": Case("chrome", _write("t.json", '{"traceEvents":[{"ph":"B","pid":1,"tid":1,"ts":1,"name":"b",'
                                                     '"args":' + _deep("{") + "}]}"), "nested deeper than"),
    "depth: counter args": Case("chrome", _write("t.json", '{"traceEvents":[{"ph":"C","pid":1,"ts":1,"name":"c",'
                                                           '"args":{"v":' + _deep("[") + "}}]}"),
                                "nested deeper than"),
    "depth: metadata args": Case("chrome", _write("t.json", '{"traceEvents":[{"ph":"M","pid":1,"tid":1,'
                                                            '"name":"thread_name","args":{"name":' + _deep("[")
                                                  + "}}]}"), "nested deeper than"),
    "depth: tail after traceEvents": Case("chrome", _write("t.json", '{"traceEvents":[],"tail":' + _deep("[") + "}"),
                                          "nested deeper than"),
    "depth: truncated inside deep args": Case("chrome", _write(
        "t.json", '{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"op","args":' + "[" * DEEP),
        "nested deeper than"),
    "depth: malformed after deep args": Case("chrome", _write(
        "t.json", '{"traceEvents":[{"ph":"X","args":' + "[" * DEEP + "}" * 10 + "]}"), "nested deeper than"),
    "depth: deep array form": Case("chrome", _write("t.json", "[" + _deep("{") + "]"), "nested deeper than"),
    "depth: gzipped": Case("chrome", _write("t.json.gz", '{"traceEvents":[],"tail":' + _deep("[") + "}", gz=True),
                           "nested deeper than"),
    "depth: kineto distributedInfo": Case("kineto", _write(
        "k.json", '{"schemaVersion":1,"distributedInfo":' + _deep("{") + ',"traceEvents":[]}'), "nested deeper than"),
    "depth: kineto deviceProperties tail": Case("kineto", _write(
        "k.json", '{"schemaVersion":1,"traceEvents":[],"deviceProperties":' + _deep("[") + "}"), "nested deeper than"),
    "depth: export metadata": Case("export", _export_doc(raw_header='{"version":1,"tracks":[],"metadata":'
                                                         + _deep("{") + "}"), "nested deeper than"),
    "depth: shallow nesting loads": Case("chrome", _events_with(_x(args={"d": json.loads("[" * 60 + "]" * 60)}))),
    # -- numbers out of range: refused or clamped and counted, never wrapped ----------------
    "numbers: ts near int64 ns": Case("chrome", _events_with(_x(9.3e15)), stats={"timestamps_out_of_range": 1}),
    "numbers: ts 1e308": Case("chrome", _events_with(_x(1e308)), stats={"timestamps_out_of_range": 1}),
    "numbers: ts -1e308": Case("chrome", _events_with(_x(-1e308)), stats={"timestamps_out_of_range": 1}),
    "numbers: ts 1e400 (infinite)": Case("chrome", _events_with('{"ph":"X","pid":1,"tid":1,"ts":1e400,"dur":1,'
                                                                '"name":"op"}'),
                                         stats={"malformed_events": 1}),
    "numbers: ts int64 max": Case("chrome", _events_with(_x(INT64_MAX)), stats={"timestamps_out_of_range": 1}),
    "numbers: ts 2^70": Case("chrome", _events_with(_x(2**70)), stats={"timestamps_out_of_range": 1}),
    "numbers: ts exact decimal beyond 2^43": Case("chrome", _events_with(
        '{"ph":"X","pid":1,"tid":1,"ts":9300000000000000.5,"dur":1,"name":"op"}'),
        stats={"timestamps_out_of_range": 1}),
    "numbers: dur 1e308": Case("chrome", _events_with(_x(1.0, 1e308)), stats={"durations_clamped": 1}),
    "numbers: dur near int64 ns": Case("chrome", _events_with(_x(1.0, 9.3e15)), stats={"durations_clamped": 1}),
    "numbers: ts + dur past int64": Case("chrome", _events_with(_x(2.0e15, 9.0e15)),
                                         stats={"durations_clamped": 1}),
    "numbers: B ts 1e308": Case("chrome", _events_with({"ph": "B", "pid": 1, "tid": 3, "ts": 1e308, "name": "b"}),
                                stats={"timestamps_out_of_range": 1}),
    "numbers: instant ts 1e308": Case("chrome", _events_with({"ph": "i", "pid": 1, "tid": 1, "ts": 1e308,
                                                              "name": "i"}), stats={"timestamps_out_of_range": 1}),
    "numbers: counter ts 1e308": Case("chrome", _events_with({"ph": "C", "pid": 1, "ts": 1e308, "name": "c",
                                                              "args": {"v": 1}}),
                                      stats={"timestamps_out_of_range": 1}),
    "numbers: counter value 1e308 loads": Case("chrome", _events_with({"ph": "C", "pid": 1, "ts": 3, "name": "c",
                                                                       "args": {"v": 1e308}})),
    "numbers: counter value infinite": Case("chrome", _events_with('{"ph":"C","pid":1,"ts":3,"name":"c",'
                                                                   '"args":{"v":1e400}}'),
                                            stats={"unreadable_args": 1}),
    "numbers: counter value 2^70": Case("chrome", _events_with({"ph": "C", "pid": 1, "ts": 3, "name": "c",
                                                                "args": {"v": 2**70}})),
    "numbers: async ts 1e308": Case("chrome", _events_with(
        {"ph": "b", "pid": 1, "tid": 1, "ts": 1, "name": "a", "cat": "c", "id": 1},
        {"ph": "e", "pid": 1, "tid": 1, "ts": 1e308, "name": "a", "cat": "c", "id": 1}),
        stats={"timestamps_out_of_range": 1}),
    "numbers: flow ts 1e308": Case("chrome", _events_with(
        {"ph": "s", "pid": 1, "tid": 1, "ts": 1e308, "name": "f", "cat": "c", "id": 1},
        {"ph": "f", "bp": "e", "pid": 1, "tid": 1, "ts": 3, "name": "f", "cat": "c", "id": 1}),
        stats={"timestamps_out_of_range": 1}),
    "numbers: pid 2^70": Case("chrome", _events_with(_x(pid=2**70))),
    "numbers: kineto device pid 2^40": Case("kineto", _kineto([_x(pid=2**40, cat="kernel")])),
    "numbers: kineto device pid 2^16": Case("kineto", _kineto([_x(pid=2**16, cat="kernel")])),
    "numbers: correlation 2^64": Case("export", _export_doc(events=[
        {"ph": "X", "pid": 0, "tid": 1, "ts": 1, "dur": 2, "name": "op", "correlation": 2**64}]),
        stats={"correlations_out_of_range": 1}),
    "numbers: sort index 2^70": Case("chrome", _events_with({"ph": "M", "pid": 1, "name": "process_sort_index",
                                                             "args": {"sort_index": 2**70}})),
    "numbers: arg 2^70 kept as text": Case("chrome", _events_with(_x(args={"big": 2**70}))),
    "numbers: kineto base time int64 max": Case("kineto", _kineto([], baseTimeNanoseconds=INT64_MAX),
                                                "baseTimeNanoseconds"),
    "numbers: kineto base time 10^30": Case("kineto", _kineto([], baseTimeNanoseconds=10**30), "baseTimeNanoseconds"),
    "numbers: kineto base time negative": Case("kineto", _kineto([], baseTimeNanoseconds=-(2**62)),
                                               "baseTimeNanoseconds"),
    "numbers: kineto base time as text": Case("kineto", _kineto([], baseTimeNanoseconds="12")),
    "numbers: kineto base time plausible": Case("kineto", _kineto([], baseTimeNanoseconds=1_700_000_000_000_000_000)),
    "numbers: kineto rank 2^70": Case("kineto", _kineto([], distributedInfo={"rank": 2**70, "world_size": 1})),
    "numbers: kineto world size 2^70": Case("kineto", _kineto([], distributedInfo={"rank": 0, "world_size": 2**70})),
    # -- wrong types where fields are read --------------------------------------------------
    "types: traceEvents a string": Case("chrome", _write("t.json", '{"traceEvents":"x"}'), "traceEvents"),
    "types: traceEvents an object": Case("chrome", _write("t.json", '{"traceEvents":{"a":1}}'), "traceEvents"),
    "types: traceEvents a number": Case("chrome", _write("t.json", '{"traceEvents":7}'), "traceEvents"),
    "types: event a string": Case("chrome", _events_with('"event"'), stats={"malformed_events": 1}),
    "types: event a list": Case("chrome", _events_with("[1,2]"), stats={"malformed_events": 1}),
    "types: event a number": Case("chrome", _events_with("3"), stats={"malformed_events": 1}),
    "types: event null": Case("chrome", _events_with("null"), stats={"malformed_events": 1}),
    "types: name a list": Case("chrome", _events_with(_x(name=["a"])), stats={"malformed_events": 1}),
    "types: name an object": Case("chrome", _events_with(_x(name={"a": 1})), stats={"malformed_events": 1}),
    "types: pid a list": Case("chrome", _events_with(_x(pid=[1])), stats={"malformed_events": 1}),
    "types: tid an object": Case("chrome", _events_with(_x(tid={"a": 1})), stats={"malformed_events": 1}),
    "types: ts a string": Case("chrome", _events_with(_x(ts="12")), stats={"malformed_events": 1}),
    "types: ph a number": Case("chrome", _events_with(_x(ph=1)), stats={"malformed_events": 1}),
    "types: id a list": Case("chrome", _events_with({"ph": "b", "pid": 1, "ts": 1, "name": "a", "id": [1]}),
                             stats={"malformed_events": 1}),
    "types: id2 a string": Case("chrome", _events_with({"ph": "b", "pid": 1, "ts": 1, "name": "a", "id2": "x"}),
                                stats={"malformed_events": 1}),
    "types: args a string": Case("chrome", _events_with(_x(args="text"))),
    "types: args a list": Case("chrome", _events_with(_x(args=[1, 2]))),
    "types: B args a list": Case("chrome", _events_with({"ph": "B", "pid": 1, "tid": 3, "ts": 1, "name": "b",
                                                         "args": [1]})),
    "types: counter args a list": Case("chrome", _events_with({"ph": "C", "pid": 1, "ts": 1, "name": "c",
                                                               "args": [1]})),
    "types: counter args null": Case("chrome", _events_with({"ph": "C", "pid": 1, "ts": 1, "name": "c",
                                                             "args": None})),
    "types: metadata name a list": Case("chrome", _events_with({"ph": "M", "pid": 1, "tid": 1, "name": "thread_name",
                                                                "args": {"name": ["a", "b"]}})),
    "types: metadata name an object": Case("chrome", _events_with({"ph": "M", "pid": 1, "name": "process_name",
                                                                   "args": {"name": {"a": 1}}})),
    "types: process labels an object": Case("kineto", _kineto([{"ph": "M", "pid": 0, "name": "process_labels",
                                                                "args": {"labels": {"GPU": 0}}}])),
    "types: sort index a string": Case("chrome", _events_with({"ph": "M", "pid": 1, "name": "process_sort_index",
                                                               "args": {"sort_index": "1"}})),
    "types: header a list (array form)": Case("chrome", _write("t.json", json.dumps(GOOD_EVENTS))),
    "types: kineto distributedInfo a list": Case("kineto", _kineto([], distributedInfo=[0, 1])),
    "types: kineto world size a list": Case("kineto", _kineto([], distributedInfo={"rank": 0, "world_size": [2]})),
    "types: kineto world size an object": Case("kineto", _kineto([], distributedInfo={"rank": 0,
                                                                                      "world_size": {"n": 2}})),
    "types: kineto rank a string": Case("kineto", _kineto([], distributedInfo={"rank": "0", "world_size": 1})),
    "types: kineto deviceProperties an object": Case("kineto", _kineto([], deviceProperties={"a": 1})),
    "types: kineto host name a list": Case("kineto", _kineto([], host_name=["h"])),
    "types: kineto pid a string on a device": Case("kineto", _kineto([_x(pid="GPU", cat="kernel")])),
    "types: kineto correlation a string": Case("kineto", _kineto([_x(cat="cuda_runtime",
                                                                     args={"correlation": "1"})])),
    "types: kineto directory world sizes mixed": Case("kineto", _dir_of({
        "rank0.json": json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": [2]},
                                  "traceEvents": []}).encode(),
        "rank1.json": json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 1, "world_size": 2},
                                  "traceEvents": []}).encode()})),
    # -- accelview's own export: its track table is trusted only as far as it checks out ----
    "export: round trip loads": Case("export", _export_doc()),
    "export: track row of 3": Case("export", _export_doc(tracks=[[-1, 1, "host"]]), "track table"),
    "export: track row of 9": Case("export", _export_doc(tracks=[[-1, 1, "h", "h", -1, 0, 1, 2, 3]]), "track table"),
    "export: tracks an object": Case("export", _export_doc(tracks={"a": 1}), "track table"),
    "export: track row a string": Case("export", _export_doc(tracks=["abc"]), "track table"),
    "export: track kind 99": Case("export", _export_doc(tracks=[[-1, 99, "h", "h", -1, 0], [0, 2, "t", "h", -1, 1]]),
                                  "track table"),
    "export: track kind a string": Case("export", _export_doc(tracks=[[-1, "host", "h", "h", -1, 0],
                                                                      [0, 2, "t", "h", -1, 1]]), "track table"),
    "export: track name a list": Case("export", _export_doc(tracks=[[-1, 1, ["h"], "h", -1, 0],
                                                                    [0, 2, "t", "h", -1, 1]]), "track table"),
    "export: parent past the table": Case("export", _export_doc(tracks=[[-1, 1, "h", "h", -1, 0],
                                                                        [7, 2, "t", "h", -1, 1]]), "track table"),
    "export: parent below -1": Case("export", _export_doc(tracks=[[-1, 1, "h", "h", -1, 0], [-5, 2, "t", "h", -1, 1]]),
                                    "track table"),
    "export: track its own parent": Case("export", _export_doc(tracks=[[-1, 1, "h", "h", -1, 0],
                                                                       [1, 2, "t", "h", -1, 1]]), "track table"),
    "export: parents in a loop": Case("export", _export_doc(tracks=[[1, 1, "h", "h", -1, 0], [0, 2, "t", "h", -1, 1]]),
                                      "track table"),
    "export: device 2^70": Case("export", _export_doc(tracks=[[-1, 1, "h", "h", 2**70, 0], [0, 2, "t", "h", -1, 1]]),
                                "track table"),
    "export: sort 2^40": Case("export", _export_doc(tracks=[[-1, 1, "h", "h", -1, 2**40], [0, 2, "t", "h", -1, 1]]),
                              "track table"),
    "export: counter track row of 2": Case("export", _export_doc(counter_tracks=[[0, "B"]]), "track table"),
    "export: counter track past the table": Case("export", _export_doc(counter_tracks=[[9, "B", "", ""]]),
                                                 "track table"),
    "export: counter track index a string": Case("export", _export_doc(counter_tracks=[["0", "B", "", ""]]),
                                                 "track table"),
    "export: lane tid past the table": Case("export", _export_doc(events=[
        {"ph": "X", "pid": 0, "tid": 5, "ts": 1, "dur": 2, "name": "op"}]), "track table"),
    "export: lane tid a string": Case("export", _export_doc(events=[
        {"ph": "X", "pid": 0, "tid": "main", "ts": 1, "dur": 2, "name": "op"}]), "track table"),
    "export: metadata a list": Case("export", _export_doc(metadata=[1, 2])),
    "export: header a list": Case("export", _export_doc(header=[1, 2])),
    "export: header a string": Case("export", _export_doc(header="x")),
    "export: 30,000 tracks in a chain": Case("export", _export_doc(
        tracks=[[i - 1, 1, f"t{i}", "h", -1, 0] for i in range(30_000)], events=[])),
    # -- encoding ---------------------------------------------------------------------------
    "encoding: invalid UTF-8 in args": Case("chrome", _write("t.json", BAD_UTF8), stats={"unreadable_args": 1}),
    "encoding: invalid UTF-8 in a name": Case("chrome", _write("t.json", BAD_UTF8.replace(b'"op"', b'"o\xc3"')),
                                              "UTF-8"),
    "encoding: invalid UTF-8 in the header": Case("chrome", _write("t.json", b'{"x":"\xff","traceEvents":[]}'),
                                                  "UTF-8"),
    "encoding: invalid UTF-8 in the tail": Case("chrome", _write("t.json", b'{"traceEvents":[],"x":"\xff"}'),
                                                "UTF-8"),
    "encoding: invalid UTF-8 gzipped": Case("chrome", _write("t.json.gz", BAD_UTF8, gz=True),
                                             stats={"unreadable_args": 1}),
    "encoding: UTF-16": Case("chrome", _write("t.json", json.dumps({"traceEvents": GOOD_EVENTS}).encode("utf-16")),
                             "not Chrome trace JSON"),
    "encoding: byte order mark loads": Case("chrome", _write("t.json", b"\xef\xbb\xbf" + json.dumps(
        {"traceEvents": GOOD_EVENTS}).encode())),
    "encoding: lone surrogate escape": Case("chrome", _events_with(
        '{"ph":"X","pid":1,"tid":1,"ts":1,"dur":1,"name":"\\ud800"}'), "malformed JSON"),
    "encoding: NUL bytes": Case("chrome", _write("t.json", b"\0" * 1000), "not Chrome trace JSON"),
    "gzip: cut at 50%": Case("chrome", _gzip_cut(50), "gzip stream ends early"),
    "gzip: cut at 5%": Case("chrome", _gzip_cut(5), "gzip stream ends early"),
    "gzip: damaged at 50%": Case("chrome", _gzip_cut(100, flip=50), "not a readable gzip file"),
    "gzip: damaged at 10%": Case("chrome", _gzip_cut(100, flip=10), "not a readable gzip file"),
    "gzip: damaged header": Case("chrome", _write("t.json.gz", b"\x1f\x8b\x08\xff" + b"\0" * 100),
                                 "not a readable gzip file"),
    "gzip: magic only": Case("chrome", _write("t.json.gz", b"\x1f\x8b"), "gzip"),
    "gzip: kineto damaged at 50%": Case("kineto", _gzip_cut(100, flip=50), "not a readable gzip file"),
    "gzip: bomb of one long string": Case("chrome", _gzip_bomb(b'{"traceEvents":[{"ph":"X","name":"'),
                                          "longer than"),
    "gzip: bomb of one long header": Case("chrome", _gzip_bomb(b'{"x":"'), "longer than"),
    "gzip: bomb in the tail": Case("chrome", _gzip_bomb(b'{"traceEvents":[{"ph":"i","ts":1,"name":"i"}],"x":"'),
                                    stats={"metadata_after_events_skipped": 0}),
    "gzip: bomb of one long array-form event": Case("chrome", _gzip_bomb(b'[{"ph":"X","name":"'), "longer than"),
    # -- not a file -------------------------------------------------------------------------
    "not a file: FIFO": Case("chrome", _fifo, "not a regular file"),
    "not a file: /dev/zero": Case("chrome", lambda folder: Path("/dev/zero"), "not a regular file"),
    "not a file: empty directory": Case("kineto", lambda folder: (folder / "d").mkdir() or folder / "d",
                                        "holds no trace"),
    "not a file: empty": Case("chrome", _write("t.json", b""), "empty file"),
    "not a file: whitespace": Case("chrome", _write("t.json", b" \n\t "), "empty file"),
    # -- structure -------------------------------------------------------------------------------
    "structure: truncated mid-event": Case("chrome", _write("t.json", json.dumps({"traceEvents": GOOD_EVENTS})[:-30]),
                                           "truncated"),
    "structure: no traceEvents": Case("chrome", _write("t.json", '{"a":1}'), "no traceEvents"),
    "structure: garbage between events": Case("chrome", _write("t.json", '{"traceEvents":[{"ph":"X"} xx {"ph":"X"}]}'),
                                              "malformed JSON"),
    "structure: 5,000 processes": Case("chrome", _many_pids(5_000)),
    "structure: 66,000 nested calls": Case("chrome", _nested_x(66_000), "deeper than"),
    "structure: unknown phases counted": Case("chrome", _events_with({"ph": "Q", "pid": 1, "ts": 1}),
                                              stats={"skipped_events": 1}),
}
