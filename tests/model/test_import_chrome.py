"""Chrome Trace Event Format import: every phase, both file forms, and bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from accelview.model import CaptureError, Trace, TrackKind
from accelview.model.importers import chrome_json, find_importer, import_trace
from accelview.model.importers.pipeline import stream as json_stream
from chrome_files import contents, write


def slices_named(trace: Trace, name: str) -> list[int]:
    return [i for i in range(len(trace.slices)) if trace.name(trace.slices.name[i]) == name]


def one(trace: Trace, name: str) -> int:
    ids = slices_named(trace, name)
    assert len(ids) == 1, (name, ids)
    return ids[0]


EVENTS = [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "server"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "main"}},
    {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 7, "args": {"sort_index": 3}},
    {"ph": "X", "name": "outer", "cat": "op", "pid": 1, "tid": 7, "ts": 100, "dur": 50, "args": {"n": 1}},
    {"ph": "X", "name": "inner {with braces}, and \"quotes\"", "pid": 1, "tid": 7, "ts": 110, "dur": 10},
    {"ph": "B", "name": "be-outer", "pid": 1, "tid": 8, "ts": 200},
    {"ph": "B", "name": "be-inner", "pid": 1, "tid": 8, "ts": 210},
    {"ph": "E", "pid": 1, "tid": 8, "ts": 220},
    {"ph": "E", "pid": 1, "tid": 8, "ts": 260},
    {"ph": "i", "name": "mark", "pid": 1, "tid": 7, "ts": 120, "s": "t"},
    {"ph": "I", "name": "global-mark", "pid": 1, "tid": 7, "ts": 130, "s": "g"},
    {"ph": "C", "name": "queue", "pid": 1, "ts": 100, "args": {"depth": 3}},
    {"ph": "C", "name": "queue", "pid": 1, "ts": 150, "args": {"depth": 5}},
    {"ph": "C", "name": "mem", "pid": 1, "ts": 100, "args": {"used": 1.5, "free": 2.5}},
    {"ph": "b", "name": "request", "cat": "net", "id": 5, "pid": 1, "ts": 100},
    {"ph": "n", "name": "progress", "cat": "net", "id": 5, "pid": 1, "ts": 140},
    {"ph": "e", "name": "request", "cat": "net", "id": 5, "pid": 1, "ts": 180},
    {"ph": "s", "name": "hand-off", "cat": "flow", "id": 9, "pid": 1, "tid": 7, "ts": 112},
    {"ph": "f", "name": "hand-off", "cat": "flow", "id": 9, "pid": 1, "tid": 8, "ts": 205},
    {"ph": "s", "name": "bound", "cat": "flow", "id": 10, "pid": 1, "tid": 7, "ts": 101},
    {"ph": "f", "name": "bound", "cat": "flow", "id": 10, "pid": 1, "tid": 8, "ts": 215, "bp": "e"},
    {"ph": "P", "name": "sample", "pid": 1, "tid": 7, "ts": 150},
    {"ph": "O", "name": "snapshot", "pid": 1, "id": 1, "ts": 150},
]


@pytest.fixture(params=["object", "object-gz", "array", "array-unclosed"])
def trace_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param.startswith("object"):
        doc = {"displayTimeUnit": "ns", "traceEvents": EVENTS, "otherData": {"version": 1}}
        return write(tmp_path / "t.json.gz", doc, gz=True) if request.param == "object-gz" else write(
            tmp_path / "t.json", doc)
    text = json.dumps(EVENTS, indent=1)
    if request.param == "array-unclosed":
        text = text.rstrip().rstrip("]").rstrip() + ",\n"
    (tmp_path / "t.json").write_text(text)
    return tmp_path / "t.json"


def test_every_phase_imports(trace_file: Path) -> None:
    trace = import_trace(trace_file)
    assert find_importer(trace_file).name == "chrome-json"
    assert trace.self_check() == []
    outer, inner = one(trace, "outer"), one(trace, 'inner {with braces}, and "quotes"')
    sl = trace.slices
    assert (sl.start_ns[outer], sl.dur_ns[outer], sl.depth[outer]) == (100_000, 50_000, 0)
    assert sl.depth[inner] == 1 and sl.track[inner] == sl.track[outer]
    assert trace.args(int(sl.args[outer])) == {"n": 1}
    assert trace.track_name(int(sl.track[outer])) == "main"
    assert trace.tracks.kind[sl.track[outer]] == TrackKind.HOST_THREAD
    assert trace.track_name(int(trace.tracks.parent[sl.track[outer]])) == "server (1)"
    be_outer, be_inner = one(trace, "be-outer"), one(trace, "be-inner")
    assert (sl.dur_ns[be_outer], sl.dur_ns[be_inner], sl.depth[be_inner]) == (60_000, 10_000, 1)
    request = one(trace, "request")
    assert sl.dur_ns[request] == 80_000
    assert len(trace.instants) == 3  # mark, global-mark, the async "n"
    counters = {trace.track_name(int(t)): len(trace.counter_series(int(t))[0]) for t in trace.counter_tracks.track}
    assert counters == {"queue": 2, "mem used": 1, "mem free": 1}
    flows = {(int(s), int(d)) for s, d in zip(trace.flows.src, trace.flows.dst, strict=True)}
    # s binds to the enclosing slice (deepest): "inner"; f without bp binds to the next slice: "be-inner".
    assert (inner, be_inner) in flows
    # f with bp "e" binds to the enclosing slice at ts 215: "be-inner" (deepest) from "outer".
    assert (outer, be_inner) in flows
    stats = trace.metadata["import_stats"]
    assert stats["skipped_phase_P"] == 1 and stats["skipped_phase_O"] == 1 and stats["skipped_events"] == 2
    assert stats["events"] == len(EVENTS)


def test_small_batches_split_safely(trace_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches end at '}' bytes; those inside strings and nested args must not split an event."""
    reference = import_trace(trace_file)
    monkeypatch.setattr(json_stream, "BLOCK", 37)
    trace = import_trace(trace_file)
    assert len(trace.slices) == len(reference.slices) and len(trace.flows) == len(reference.flows)
    assert trace.metadata["import_stats"]["events"] == len(EVENTS)


def test_flow_v2_and_id2(tmp_path: Path) -> None:
    """Perfetto's newer flows name the slice itself (bind_id + flow_out/flow_in); ids may be id2."""
    doc = {"traceEvents": [
        {"ph": "X", "name": "producer", "pid": 1, "tid": 7, "ts": 300, "dur": 10, "bind_id": 77, "flow_out": True},
        {"ph": "X", "name": "inner", "pid": 1, "tid": 7, "ts": 300, "dur": 5},
        {"ph": "X", "name": "relay", "pid": 1, "tid": 8, "ts": 320, "dur": 5, "bind_id": 77, "flow_in": True,
         "flow_out": True},
        {"ph": "X", "name": "consumer", "pid": 1, "tid": 9, "ts": 340, "dur": 5, "bind_id": 77, "flow_in": True},
        {"ph": "b", "name": "req", "cat": "net", "id2": {"local": "0x1"}, "pid": 1, "ts": 300},
        {"ph": "b", "name": "req", "cat": "net", "id2": {"local": "0x2"}, "pid": 1, "ts": 305},
        {"ph": "e", "name": "req", "cat": "net", "id2": {"local": "0x1"}, "pid": 1, "ts": 330},
        {"ph": "e", "name": "req", "cat": "net", "id2": {"local": "0x2"}, "pid": 1, "ts": 310},
    ]}
    trace = import_trace(write(tmp_path / "v2.json", doc))
    name = {i: trace.name(n) for i, n in enumerate(trace.slices.name)}
    flows = {(name[int(s)], name[int(d)]) for s, d in zip(trace.flows.src, trace.flows.dst, strict=True)}
    assert flows == {("producer", "relay"), ("relay", "consumer")}
    reqs = sorted(int(d) for i, d in enumerate(trace.slices.dur_ns) if name[i] == "req")
    assert reqs == [5_000, 30_000]


def test_nanosecond_timestamps_are_exact(tmp_path: Path) -> None:
    text = ('{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1712195495519689.047, '
            '"dur": 63.813}, {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 4458676522690.655, "dur": 1.001}]}')
    (tmp_path / "ns.json").write_text(text)
    trace = import_trace(tmp_path / "ns.json")
    starts = {trace.name(n): int(s) for n, s in zip(trace.slices.name, trace.slices.start_ns, strict=True)}
    assert starts == {"a": 1712195495519689047, "b": 4458676522690655}
    assert sorted(trace.slices.dur_ns.tolist()) == [1001, 63813]


def test_malformed_events_are_counted_not_fatal(tmp_path: Path) -> None:
    doc = {"traceEvents": [{"ph": "X", "name": "ok", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
                           {"ph": "X", "name": "bad", "pid": 1, "tid": 1, "ts": "soon", "dur": 1},
                           {"ph": "E", "pid": 1, "tid": 2, "ts": 5}]}
    trace = import_trace(write(tmp_path / "m.json", doc))
    assert len(trace.slices) == 1
    stats = trace.metadata["import_stats"]
    assert stats["malformed_events"] == 1 and stats["end_events_without_begin"] == 1


@pytest.mark.parametrize(("content", "problem"), [
    (b"", "empty file"),
    (b"   \n", "empty file"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}, {"ph": "X", "na',
     "truncated"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}', "truncated"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1 "tid": 1}]}', "malformed JSON"),
    (b'{"schemaVersion": 1, "otherData": {}}', "no traceEvents"),
    (b"hello, world", "not Chrome trace JSON"),
    (b'{"displayTimeUnit": "ns", "traceEvents": [', "truncated"),
])
def test_bad_files_give_one_clear_error(tmp_path: Path, content: bytes, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(CaptureError) as err:
        chrome_json.load(path)
    assert problem in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_a_byte_order_mark_and_whitespace_before_the_json_are_skipped(tmp_path: Path) -> None:
    body = json.dumps({"displayTimeUnit": "ns", "traceEvents": EVENTS}).encode()
    plain, marked = tmp_path / "plain.json", tmp_path / "marked.json"
    plain.write_bytes(body)
    marked.write_bytes(b"\xef\xbb\xbf \n\t" + body)
    assert contents(chrome_json.load(marked)) == contents(chrome_json.load(plain))
    (tmp_path / "stray.json").write_bytes(b"\xbb" + body)
    with pytest.raises(CaptureError, match="not Chrome trace JSON"):
        chrome_json.load(tmp_path / "stray.json")


def test_truncated_gzip_is_a_clear_error(tmp_path: Path) -> None:
    data = gzip.compress(json.dumps({"traceEvents": EVENTS * 50}).encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CaptureError, match="truncated"):
        import_trace(path)


def test_a_failure_in_the_reading_thread_reaches_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(raw: object, block: int) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(json_stream, "read_blocks", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        import_trace(write(tmp_path / "t.json.gz", {"traceEvents": EVENTS}, gz=True))


def test_unknown_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a trace")
    assert find_importer(path) is None
    with pytest.raises(CaptureError, match="not a trace format"):
        import_trace(path)
    with pytest.raises(CaptureError, match="no such file"):
        import_trace(tmp_path / "missing.json")
