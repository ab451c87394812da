"""Reading big Chrome JSON files: batches cut where events end, the forked helper that digests
batches too, runs of repeated metadata collapsed before decoding, and memory bounded by what is kept."""

from __future__ import annotations

import gzip
import json
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from accelview.model import CaptureError, forking
from accelview.model.importers import chrome_json, import_trace
from accelview.model.importers.pipeline import digest, reading, repeats
from accelview.model.importers.pipeline import digest_worker as helper
from accelview.model.importers.pipeline import stream as json_stream
from chrome_files import contents, write


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


@pytest.mark.parametrize(("text", "end"), [
    (b'{"a": "x}\\"},"}, {"b": [{"c": 1}, {"d": "\\\\"}]},\n{"e": {', 47),
    (b'{"a": 1}', 8),
    (b'{"a": {"b": 1}', 0),
    (b'{"a": 1}, {"b": 2}\n]', 18),
])
def test_scan_split_respects_strings_escapes_and_nesting(text: bytes, end: int) -> None:
    assert json_stream.scan_split(text) == end


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
