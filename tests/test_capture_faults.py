"""Faults during a capture (issue 23): names UTF-8 cannot hold, damaged spools, records left
in a script that stops calling the runtime, kills at any instant, full disks, hangs and
unbounded options. What was recorded survives each of them."""

from __future__ import annotations

import json
import os

import kill_points
import pytest
from accelview.app.cli.main import main
from accelview.capture.protocol import wire
from accelview.capture.protocol.config import CaptureConfig
from accelview.capture.service.runner import CaptureService
from accelview.capture.service.spool import spool_of, staging_of
from accelview.capture.tracer.recorder import traced_simulator
from accelview.model.store.reader import load_capture
from accelview.model.strings import StringTable, encode_strings, valid_text
from profile_scripts import api_slices, write_script


def test_text_utf8_cannot_hold_is_escaped_and_kept_distinct() -> None:
    raw = os.fsdecode(b"k\xff\xfe")
    assert valid_text(raw) == "k\\xff\\xfe" and valid_text("x\ud800y") == "x\\ud800y"
    assert valid_text("plain é") == "plain é"
    blob, offsets = encode_strings(["", raw, "k\\xff\\xfe", "ok"])  # the escaped form is taken already
    back = StringTable.from_arrays(blob, offsets).strings()
    assert back[2:] == ["k\\xff\\xfe", "ok"] and back[1].startswith("k\\xff\\xfe") and back[1] != back[2]


@pytest.mark.parametrize("live", [False, True], ids=["spooled", "live"])
def test_names_and_arguments_that_are_not_utf8_are_stored_escaped(tmp_path, live) -> None:
    """os.fsdecode of a non-UTF-8 file name gives lone surrogates: a name, a range, a graph,
    the script's own file name and its arguments made of them are escaped, never fatal."""
    script = write_script(tmp_path, """\
        name = os.fsdecode(b"k\\xff\\xfe")
        for _ in range(5):
            dev.launch("gemm", m=64, n=64, k=64, name=name)
        with sim.annotate(os.fsdecode(b"r\\xff")):
            dev.launch("gemm", m=64, n=64, k=64, name="x\\ud800y")
        dev.synchronize()
        """, name=os.fsdecode(b"w\xff.py"))
    out = tmp_path / "names.h5"
    result = CaptureService(CaptureConfig(output=str(out), live=live, flush_events=4),
                            [str(script), "1", os.fsdecode(b"\xff\xfe")]).run()
    assert result.complete, result.reason
    trace = load_capture(out)
    assert len(api_slices(trace, "launch k\\xff\\xfe")) == 5 and len(api_slices(trace, "launch x\\ud800y")) == 1
    assert "r\\xff" in trace.strings.strings()
    assert trace.metadata["profile"]["argv"][-1] == "\\xff\\xfe" and "w\\xff.py" in trace.metadata["profile"]["target"]
    assert trace.self_check() == []


def _session_frames(launches: int = 200) -> list[bytes]:
    """The frames of a traced session (SESS, a RECS per 20 calls, END), each as its bytes."""
    frames: list[bytes] = []
    rec = traced_simulator(CaptureConfig(flush_events=20, deterministic=True),
                           lambda k, m, c: frames.append(b"".join(map(bytes, wire.encode(k, m, c)))))
    dev = rec.sim.device(0)
    for _ in range(launches):
        dev.launch("gemm", m=8, n=256, k=256)
    rec.finish(0)
    return frames


def _lie(frame: bytes, change) -> bytes:
    """``frame`` with its JSON part changed by ``change(meta)`` (the payload as it was)."""
    kind, jlen, plen = wire.HEADER.unpack_from(frame)
    meta = json.loads(frame[wire.HEADER.size:wire.HEADER.size + jlen])
    change(meta)
    text = json.dumps(meta).encode()
    return wire.HEADER.pack(kind, len(text), plen) + text + frame[wire.HEADER.size + jlen:]


def _first_column_rows(meta: dict, delta: int) -> None:
    meta["columns"][0][2] += delta


DAMAGE = {
    "header": lambda f: b"XXXX" + f[4:],
    "json": lambda f: f[:wire.HEADER.size + 3] + b"\xff\x00}{" + f[wire.HEADER.size + 7:],
    "cut short": lambda f: f[:len(f) // 2],
    "sizes that lie (more)": lambda f: _lie(f, lambda m: _first_column_rows(m, 1000)),
    "sizes that lie (fewer)": lambda f: _lie(f, lambda m: _first_column_rows(m, -1)),
    "types that lie": lambda f: _lie(f, lambda m: m["columns"][0].__setitem__(1, "|O")),
    "columns not a list": lambda f: _lie(f, lambda m: m.__setitem__("columns", {"a": 1})),
    "a column of a string": lambda f: _lie(f, lambda m: m["columns"][0].__setitem__(1, "<U8")),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_spool_frame_is_skipped_and_counted_and_the_frames_after_it_converted(tmp_path, capsys,
                                                                                        damage) -> None:
    frames = _session_frames()
    records = [i for i, f in enumerate(frames) if f[:4] == wire.RECORDS]
    assert len(records) >= 8
    at = records[3]
    spool = tmp_path / ".hurt.h5.spool"
    spool.write_bytes(b"".join([*frames[:at], DAMAGE[damage](frames[at]), *frames[at + 1:]]))
    out = tmp_path / "hurt.h5"
    assert main(["convert", str(spool), str(out)]) == 0
    trace = load_capture(out)
    assert trace.metadata["capture"]["damaged_frames"] == 1
    assert "damaged" in trace.incomplete_reason or "could not convert" in trace.incomplete_reason
    launches = len(api_slices(trace, "launch gemm"))
    assert 200 - 20 <= launches < 200  # the frames after the damaged one are converted; one drain is lost
    assert spool.exists()  # not all of it made it into the capture: kept
    assert main(["info", str(out)]) == 0
    assert "DAMAGED:    1 frame(s) of records skipped" in capsys.readouterr().out


def test_a_stream_of_garbage_between_frames_is_one_damaged_stretch() -> None:
    frames = _session_frames(60)
    data = b"".join(frames[:2]) + b"RECS" + os.urandom(5000) + b"".join(frames[2:])
    reader = wire.FrameReader()
    kinds = [k for chunk in (data[i:i + 777] for i in range(0, len(data), 777)) for k, _, _ in reader.feed(chunk)]
    kinds += [k for k, _, _ in reader.feed(b"", final=True)]
    assert len(kinds) == len(frames) and reader.damaged == 1 and reader.skipped_bytes >= 5004


@pytest.mark.parametrize("idle", ["time.sleep(1.0)", "spin(1.0)"], ids=["sleeping", "computing"])
def test_records_are_drained_by_time_when_the_script_stops_calling_the_runtime(tmp_path, idle) -> None:
    """The drains used to run only inside API calls: a script that launched work, stopped calling
    the runtime and was then killed (the OOM killer, a grace kill) left nothing of it."""
    script = write_script(tmp_path, f"""\
        import time

        def spin(seconds):
            t = time.monotonic()
            while time.monotonic() - t < seconds:
                pass

        for _ in range(300):
            dev.launch("elementwise", elements=4096)
        {idle}
        os.kill(os.getpid(), 9)
        """)
    out = tmp_path / "idle.h5"
    result = CaptureService(CaptureConfig(output=str(out), flush_ms=20), [str(script), "0"]).run()
    assert "SIGKILL" in result.reason
    trace = load_capture(out)
    assert len(api_slices(trace, "launch elementwise")) == 300
    names = trace.strings.strings()
    ops = trace.slices.name == names.index("elementwise")
    assert int(ops.sum()) == 300  # the device went on executing them: their records too
    assert trace.self_check() == []


def _size(path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


# (mode, when to kill): while the script records; while the spool is converted (the staged file
# grows); while the final file is written (its .partial exists, the placeholder still in place)
KILL_POINTS = {
    "spooled, converting": (False, lambda out: _size(staging_of(out)) > 50_000),
    "live, recording": (True, lambda out: _size(staging_of(out)) > 50_000),
    "live, finalising": (True, lambda out: _size(spool_of(out)) > 0 and out.with_name(f".{out.name}.partial").exists()),
}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_a_sigkill_at_any_instant_leaves_a_readable_capture_with_every_event_flushed(tmp_path, point) -> None:
    """The bounded CI subset of benchmarks/kill_points.py (50 random points per mode)."""
    live, when = KILL_POINTS[point]
    proc, out = kill_points.start(tmp_path, 4000, live)
    assert kill_points.wait_for(proc, lambda: when(out)), "the kill point never came"
    kill_points.kill(proc)
    outcome = kill_points.judge(out, whole_run=-1)
    assert outcome.readable, outcome.problem
    assert outcome.state == "spool" and outcome.flushed > 0 and outcome.lost == 0
    assert kill_points.leftovers(tmp_path, out) == []


def test_a_sigkilled_service_leaves_a_spool_convert_turns_into_the_capture(tmp_path, capsys) -> None:
    proc, out = kill_points.start(tmp_path, 4000, live=False)
    assert kill_points.wait_for(proc, lambda: _size(spool_of(out)) > 100_000)
    kill_points.kill(proc, service_only=True)  # the child notices the service has gone and stops
    flushed = kill_points.spooled_events(spool_of(out))
    assert main(["info", str(out)]) == 0
    assert f"accelview convert {spool_of(out)} {out} --force" in capsys.readouterr().out
    assert main(["convert", str(spool_of(out)), str(out), "--force"]) == 0
    trace = load_capture(out)
    assert trace.metadata["capture"]["events"] == flushed > 0 and not spool_of(out).exists()
