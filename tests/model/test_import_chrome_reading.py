"""Chrome Trace Event Format import: every phase, both file forms, batching, and bad input."""

from __future__ import annotations

import gzip
import json
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from accelview.model import CaptureError, Trace, TrackKind, forking, nesting
from accelview.model.importers import chrome_json, find_importer, import_trace
from accelview.model.importers.pipeline import digest, reading, repeats
from accelview.model.importers.pipeline import digest_worker as helper
from accelview.model.importers.pipeline import stream as json_stream


def write(path: Path, doc: object, gz: bool = False) -> Path:
    data = json.dumps(doc, indent=1).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


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


def test_chunks_are_cut_where_an_event_starts() -> None:
    """The reading thread cuts after the last '},' that a '{' follows (a guess: strings may hold
    one, then the stream still finds the events), so that no part-event is copied ahead of the
    next chunk; nothing to cut gives 0."""
    block = b'[{"a": 1},\n {"b": "x}, {y"}, {"c": [{}, {}]}, {"d'
    cut = json_stream.event_cut(block)
    assert block[cut:] == b'{"d' and block[:cut].rstrip().endswith(b"},")
    assert json_stream.event_cut(b'{"a": 1}, "b"') == 0 and json_stream.event_cut(b"") == 0


def test_events_full_of_inner_object_lists_still_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every '}' near a block's end lies inside an event: the stream falls back to scanning."""
    events = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5,
               "args": {"list": [{"k": j, "s": "},{"} for j in range(40)]}} for i in range(60)]
    path = write(tmp_path / "nested.json", {"traceEvents": events})
    monkeypatch.setattr(json_stream, "BLOCK", 300)
    trace = import_trace(path)
    assert len(trace.slices) == 60 and trace.metadata["import_stats"]["malformed_events"] == 0
    assert trace.args(int(trace.slices.args[0]))["list"].startswith('[{"k":0,"s":"},{"}')


def contents(trace: Trace) -> dict[str, list]:
    """Every table row by row, string ids resolved, plus metadata: equal for equal imports."""
    out: dict[str, list] = {"metadata": [trace.metadata]}
    for name, table in trace.tables.items():
        cols = [[trace.name(int(v)) for v in table[c]] if c in {"name", "category", "host", "key", "str"}
                else table[c].tolist() for c in table.schema.names]
        out[name] = list(zip(*cols, strict=True))
    return out


def many_events(n: int = 150, tricky: bool = True) -> list[dict]:
    """Ops (whose names hold '}, {' when ``tricky``: a batch end the helper must not trust),
    B/E pairs, flows, repeated metadata and arguments, spread over several threads."""
    events: list[dict] = []
    for i in range(n):
        tid = i % 3
        name = f"op {i}" + ('"}, {"' if tricky else "")
        events.append({"name": name, "ph": "X", "cat": "c", "pid": 1, "tid": tid, "ts": i * 10, "dur": 5 + i % 4,
                       "args": {"i": i, "pad": "z" * 60}})
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": f"t{tid}"}})
        if i % 7 == 0:
            events += [{"ph": "B", "name": "be", "pid": 1, "tid": 9, "ts": i * 10},
                       {"ph": "E", "pid": 1, "tid": 9, "ts": i * 10 + 3},
                       {"ph": "s", "name": "f", "cat": "flow", "id": i, "pid": 1, "tid": tid, "ts": i * 10 + 1},
                       {"ph": "f", "name": "f", "cat": "flow", "id": i, "pid": 1, "tid": 9, "ts": i * 10 + 2,
                        "bp": "e"}]
    return events


@pytest.fixture
def with_helper(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Small batches, and a helper process even for small files; counts the batches it was sent."""
    sent: list[int] = []
    submit = helper.Helper.submit

    def counting(self: helper.Helper, events: memoryview) -> helper.Job | None:
        sent.append(len(events))
        return submit(self, events)

    monkeypatch.setattr(json_stream, "BLOCK", 2048)
    monkeypatch.setattr(helper, "MIN_BYTES", 0)
    monkeypatch.setattr(helper.Helper, "submit", counting)
    # Threads other tests left behind (Qt's, for one) would rule the helper out; these tests
    # start none of their own while it runs.
    monkeypatch.setattr(forking.threading, "active_count", lambda: 1)
    return sent


def test_a_helper_process_gives_the_same_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               with_helper: list[int]) -> None:
    """Batches digested in a helper process (some cut inside a string: the file is read again
    alone) give exactly the trace one process reads, whatever the batch size."""
    path = write(tmp_path / "many.json.gz", {"traceEvents": many_events()}, gz=True)
    for block in (700, 3000):
        monkeypatch.setattr(json_stream, "BLOCK", block)
        monkeypatch.setattr(helper, "MIN_BYTES", 1 << 60)
        alone = contents(import_trace(path))
        monkeypatch.setattr(helper, "MIN_BYTES", 0)
        with_helper.clear()
        assert contents(import_trace(path)) == alone
        assert with_helper


def test_a_failing_helper_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          with_helper: list[int]) -> None:
    """A helper that raises, or dies, sends the importer back to reading the file alone."""
    path = write(tmp_path / "many.json", {"traceEvents": many_events()})
    reference = contents(import_trace(path))
    assert with_helper
    parent = os.getpid()
    for failure in ("raise", "exit"):
        def flaky(text: bytes, failure: str = failure, **options: frozenset[str]) -> digest.Digest:
            if os.getpid() != parent:
                if failure == "exit":
                    os._exit(3)
                raise RuntimeError("helper trouble")
            return digest.digest_batch(text, **options)

        monkeypatch.setattr(reading, "digest_batch", flaky)
        assert contents(import_trace(path)) == reference


def test_batches_a_slow_helper_has_not_started_are_taken_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               with_helper: list[int]) -> None:
    path = write(tmp_path / "many.json", {"traceEvents": many_events(tricky=False)})
    reference = contents(import_trace(path))
    parent, taken = os.getpid(), []
    take_back = helper.Helper.take_back

    def slow(text: bytes, **options: frozenset[str]) -> digest.Digest:
        if os.getpid() != parent:
            time.sleep(0.05)
        return digest.digest_batch(text, **options)

    def counting(self: helper.Helper) -> helper.Job | None:
        job = take_back(self)
        taken.append(job is not None)
        return job

    monkeypatch.setattr(reading, "digest_batch", slow)
    monkeypatch.setattr(helper.Helper, "take_back", counting)
    assert contents(import_trace(path)) == reference
    assert any(taken)


def test_stopped_helpers_are_reaped_not_waited_for(tmp_path: Path, with_helper: list[int]) -> None:
    """The import does not wait for its helper to exit; the next helper (or the interpreter's
    exit) reaps it, so that no zombie process is left behind."""
    path = write(tmp_path / "many.json", {"traceEvents": many_events(tricky=False)})
    forked: list[int] = []
    init = helper.Helper.__init__

    def remembering(self: helper.Helper, work: Any) -> None:
        init(self, work)
        forked.append(self.pid)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(helper.Helper, "__init__", remembering)
        import_trace(path)
        import_trace(path)
    assert len(forked) == 2 and with_helper
    forking.reap(block=True)
    assert not forking._unreaped
    for pid in forked:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_a_helper_gives_the_same_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       with_helper: list[int]) -> None:
    plain = many_events(tricky=False)
    for events, damage, problem in (
            (plain, lambda t: t[: len(t) * 2 // 3], "truncated: the file ends inside an event"),
            (plain, lambda t: t.replace('"ph": "X"', '"ph" "X"', 5), "malformed JSON"),
            (many_events(), lambda t: t[: len(t) * 2 // 3], "")):
        path = tmp_path / "bad.json"
        path.write_text(damage(json.dumps({"traceEvents": events})))
        messages = []
        for min_bytes in (1 << 60, 0):
            monkeypatch.setattr(helper, "MIN_BYTES", min_bytes)
            with pytest.raises(CaptureError) as err:
                import_trace(path)
            messages.append(str(err.value))
        assert messages[0] == messages[1] and problem in messages[0] and str(path) in messages[0]


def test_runs_of_repeated_metadata_import_as_if_read_one_by_one(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of identical metadata events (collapsed before decoding) count and name exactly as
    when every event is decoded; repeated complete events are never collapsed."""
    proc = [{"name": "process_name", "ph": "M", "pid": 9, "tid": 0, "args": {"name": "dev"}},
            {"name": "process_sort_index", "ph": "M", "pid": 9, "tid": 0, "args": {"sort_index": 5}}]
    thread = [{"name": "thread_name", "ph": "M", "pid": 9, "tid": 4, "args": {"name": 'a "}, {" name'}}]
    other = [{"name": "thread_name", "ph": "M", "pid": 9, "tid": 8, "args": {"name": "dma"}}]
    renamed = [{"name": "thread_name", "ph": "M", "pid": 9, "tid": 4, "args": {"name": "renamed"}}]
    ops = [{"name": "op", "ph": "X", "pid": 9, "tid": t, "ts": 5, "dur": 1} for t in (4, 8)]
    events = (proc * 300 + thread * 7 + other + thread * 50 + other * 2 + ops * 5 + proc * 3 + renamed * 9
              + thread * 40 + [{"ph": "i", "name": "mark", "pid": 9, "tid": 4, "ts": 6, "s": "t"}] + renamed * 6)
    path = write(tmp_path / "repeats.json", {"traceEvents": events})
    for block in (256, 4096, 1 << 20):
        monkeypatch.setattr(json_stream, "BLOCK", block)
        monkeypatch.setattr(repeats, "MIN_REPEATS", 1 << 30)
        one_by_one = contents(import_trace(path))
        monkeypatch.setattr(repeats, "MIN_REPEATS", 4)
        assert contents(import_trace(path)) == one_by_one
    _, collapsed, copies = repeats.collapse_repeats(json.dumps(events, indent=1).encode())
    assert copies is not None and copies.sum() > 600 and len(collapsed) < 10_000
    trace = import_trace(path)
    assert trace.metadata["import_stats"]["duplicate_metadata_events"] == len(events) - 11 - 4  # 4 (name, pid, tid)
    assert len(trace.slices) == 10 and {trace.track_name(int(t)) for t in trace.slices.track} == {"dma", "renamed"}


def test_metadata_written_after_the_slices_is_collapsed_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyTorch writes its (repeated) metadata after the slices: a batch that ends with such a
    run is split before it, and imports exactly as when every event is decoded."""
    thread = [{"name": "thread_name", "ph": "M", "pid": 9, "tid": t, "args": {"name": f"t{t}"}} for t in (4, 8)]
    ops = [{"name": f"op{i}", "ph": "X", "pid": 9, "tid": 4 + 4 * (i % 2), "ts": i, "dur": 1, "args": {"i": i}}
           for i in range(60)]
    events = ops + thread * 200 + [{"name": "process_name", "ph": "M", "pid": 9, "tid": 0, "args": {"name": "p"}}]
    head, collapsed, copies = repeats.collapse_repeats(json.dumps(events, indent=1).encode())
    assert head is not None and len(json.loads(head)) == 60
    assert copies is not None and copies.sum() == 400 and len(json.loads(collapsed)) < 20  # the last one as it was
    path = write(tmp_path / "late.json", {"traceEvents": events})
    for block in (512, 1 << 20):
        monkeypatch.setattr(json_stream, "BLOCK", block)
        monkeypatch.setattr(repeats, "MIN_REPEATS", 1 << 30)
        one_by_one = contents(import_trace(path))
        monkeypatch.setattr(repeats, "MIN_REPEATS", 4)
        assert contents(import_trace(path)) == one_by_one
    trace = import_trace(path)
    assert trace.metadata["import_stats"]["duplicate_metadata_events"] == 401 - 3
    assert {trace.track_name(int(t)) for t in trace.slices.track} == {"t4", "t8"}


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


@pytest.mark.parametrize("separator", ["}, , {", "},, {", "},\n,\n{"])
def test_a_doubled_comma_is_malformed_wherever_the_batches_are_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   separator: str) -> None:
    """The separator between two events was skipped again after reading more, so a doubled
    comma that fell where a batch ends passed as one."""
    events = [{"name": f"op{i}", "ph": "X", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(12)]
    path = tmp_path / "doubled.json"
    path.write_text(json.dumps({"traceEvents": events}).replace("}, {", separator, 1))
    for block in range(8, 200, 5):
        monkeypatch.setattr(json_stream, "BLOCK", block)
        with pytest.raises(CaptureError, match="malformed JSON"):
            chrome_json.load(path)


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


def test_memory_follows_the_events_kept_not_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 16 MB trace of which little is kept (repeated metadata, ops with bulky args that the
    Kineto profile drops) imports with a small fraction of its size in Python memory."""
    meta = '{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}}'
    args = json.dumps({"Input Dims": [[64, 3, 224, 224]] * 80, "Concrete Inputs": ["x" * 40] * 80})
    ops = [f'{{"ph": "X", "cat": "cpu_op", "name": "op{i % 50}", "pid": 1, "tid": 1, "ts": {i * 10}, "dur": 5, '
           f'"args": {args}}}' for i in range(3_000)]
    text = '{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join([meta] * 20_000 + ops) + "\n]}"
    path = tmp_path / "big.json.gz"
    path.write_bytes(gzip.compress(text.encode(), compresslevel=1))
    monkeypatch.setattr(json_stream, "BLOCK", 1 << 16)  # peak is ~10 blocks: buffer, its copy, one batch
    seen: list[float] = []
    tracemalloc.start()
    try:
        trace = import_trace(path, progress=seen.append)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(trace.slices) == 3_000 and len(text) > 15e6
    assert peak < len(text) / 4, f"peak {peak / 1e6:.1f} MB for {len(text) / 1e6:.1f} MB of JSON"
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(set(seen)) > 3 and seen[0] < 0.5  # moves as it inflates


@pytest.mark.parametrize(("text", "end"), [
    (b'{"a": "x}\\"},"}, {"b": [{"c": 1}, {"d": "\\\\"}]},\n{"e": {', 47),
    (b'{"a": 1}', 8),
    (b'{"a": {"b": 1}', 0),
    (b'{"a": 1}, {"b": 2}\n]', 18),
])
def test_scan_split_respects_strings_escapes_and_nesting(text: bytes, end: int) -> None:
    assert json_stream.scan_split(text) == end


def test_fast_slice_orders_equal_lexsort() -> None:
    """The packed-key sorts used for the flow index, depths and the slices table give exactly
    numpy's lexsort orders: ties, negative and extreme values included."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(0, 500))
        group = rng.integers(0, int(rng.integers(1, 6)), n).astype(np.int32)
        start = (rng.integers(-25, 25, n) * int(rng.choice([1, 10**9, 2**40, 2**61]))).astype(np.int64)
        dur = rng.integers(0, 4, n).astype(np.int64)
        depth = rng.integers(0, 5, n).astype(np.uint16)
        assert (nesting.start_order(group, start, dur) == np.lexsort((-dur, start, group))).all()
        assert (nesting.run_order(group, depth, start) == np.lexsort((start, depth, group))).all()
