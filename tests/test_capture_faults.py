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
    # Killed once a whole frame of records is on disk (bytes alone may be one frame half written).
    spool = spool_of(out)
    assert kill_points.wait_for(proc, lambda: _size(spool) > 0 and kill_points.spooled_events(spool) > 0)
    kill_points.kill(proc, service_only=True)  # the child notices the service has gone and stops
    flushed = kill_points.spooled_events(spool_of(out))
    assert main(["info", str(out)]) == 0
    assert f"accelview convert {spool_of(out)} {out} --force" in capsys.readouterr().out
    assert main(["convert", str(spool_of(out)), str(out), "--force"]) == 0
    trace = load_capture(out)
    assert trace.metadata["capture"]["events"] == flushed > 0 and not spool_of(out).exists()


def _never_runs(tmp_path):
    return write_script(tmp_path, """\
        open(os.path.join(os.path.dirname(__file__), "ran"), "w").close()
        """)


@pytest.mark.parametrize("where", ["a file as folder", "/dev/full", "a full disk"])
def test_an_output_that_cannot_be_written_fails_before_the_script_runs(tmp_path, capsys, monkeypatch, where) -> None:
    import accelview.capture.service.runner as runner

    script = _never_runs(tmp_path)
    out = {"a file as folder": str(script / "out.h5"), "/dev/full": "/dev/full"}.get(where, str(tmp_path / "o.h5"))
    if where == "a full disk":
        monkeypatch.setattr(runner.shutil, "disk_usage", lambda p: DiskUsage(1 << 30, 1 << 30, 1 << 20))
    assert main(["profile", str(script), "1", "-o", out, "--force"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and out in err and "Traceback" not in err, err
    assert not (tmp_path / "ran").exists() and os.path.exists("/dev/full") and not os.path.isfile("/dev/full")


def test_a_folder_without_write_permission_fails_before_the_script_runs(tmp_path, capsys) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    script = _never_runs(tmp_path)
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o555)
    assert main(["profile", str(script), "1", "-o", str(folder / "o.h5")]) == 2
    assert "permission denied" in capsys.readouterr().err and not (tmp_path / "ro" / "o.h5").exists()


class DiskUsage:
    def __init__(self, total: int, used: int, free: int) -> None:
        self.total, self.used, self.free = total, used, free


LOOP = """\
    for i in range(100_000):
        dev.launch("elementwise", elements=4096)
    """


def test_a_disk_filling_up_stops_the_capture_while_what_was_recorded_can_be_converted(tmp_path, monkeypatch) -> None:
    import accelview.capture.service.runner as runner

    out = tmp_path / "filling.h5"
    spool = spool_of(out)
    real = runner.shutil.disk_usage

    def usage(path):  # the disk fills once the spool holds a few drains
        free = 1 << 20 if spool.exists() and spool.stat().st_size > 300_000 else real(path).free
        return DiskUsage(1 << 40, 0, free)

    monkeypatch.setattr(runner.shutil, "disk_usage", usage)
    result = CaptureService(CaptureConfig(output=str(out)), [str(write_script(tmp_path, LOOP)), "0"]).run()
    assert result.reason.startswith("the disk is almost full (1.0 MB left in ")
    trace = load_capture(out)
    assert trace.incomplete_reason == result.reason and trace.self_check() == []
    assert len(api_slices(trace, "launch elementwise")) > 1000 and not spool.exists()


def test_a_spool_write_that_fails_for_a_full_disk_stops_the_capture_and_keeps_what_was_written(
        tmp_path, monkeypatch) -> None:

    _fill_the_disk_past(monkeypatch, 300_000)
    out = tmp_path / "full.h5"
    result = CaptureService(CaptureConfig(output=str(out)), [str(write_script(tmp_path, LOOP)), "0"]).run()
    assert result.reason.startswith("the disk is full (No space left on device; what arrived after that is lost)")
    trace = load_capture(out)
    assert trace.self_check() == [] and len(api_slices(trace, "launch elementwise")) > 1000


def test_a_capture_that_cannot_be_written_at_the_end_keeps_the_placeholder_and_the_spool(tmp_path, monkeypatch,
                                                                                       capsys) -> None:
    import accelview.model.store.writer as writer
    from accelview.model.errors import CaptureError

    def no_room(path, write, before_replace=lambda: None):
        raise CaptureError(path, "cannot write: No space left on device")

    out = tmp_path / "late.h5"
    script = write_script(tmp_path)
    with monkeypatch.context() as m:  # the disk fills while the script runs: closing meets it
        m.setattr(writer.CaptureWriter, "close", lambda self, *a: no_room(self.path, None))
        assert main(["profile", str(script), "20", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"accelview: {out}: could not be written (cannot write: No space left on device); what the script "
                   f"sent is in {spool_of(out)}: once there is room, accelview convert {spool_of(out)} {out} --force")
    assert not load_capture(out).complete and not staging_of(out).exists()
    assert main(["convert", str(spool_of(out)), str(out), "--force"]) == 0
    assert len(api_slices(load_capture(out), "launch gemm")) == 20


HANGS = {
    "computing": "while True:\n    pass\n",
    "sleeping": "import time\ntime.sleep(1000)\n",
    "ignoring SIGTERM": "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n"
                        "    time.sleep(0.1)\n",
}


@pytest.mark.parametrize("hang", list(HANGS))
def test_a_hanging_script_is_stopped_by_the_time_limit_and_keeps_its_records(tmp_path, hang) -> None:
    script = write_script(tmp_path, HANGS[hang])
    out = tmp_path / "hung.h5"
    result = CaptureService(CaptureConfig(output=str(out), max_seconds=1.0), [str(script), "10"], grace_s=0.5).run()
    assert result.reason == "time limit reached (1 s)"
    trace = load_capture(out)  # (on a busy machine the second may end before the script's first call)
    assert len(api_slices(trace, "launch gemm")) in (0, 10) and trace.self_check() == []


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_hanging_script_is_stopped_by_ctrl_c_and_sigterm_of_the_profile_command(tmp_path, sig) -> None:
    import signal
    import subprocess
    import sys

    script = write_script(tmp_path, HANGS["sleeping"])
    out = tmp_path / "stopped.h5"
    proc = subprocess.Popen([sys.executable, "-m", "accelview.app.cli", "profile", str(script), "10", "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    # the script hangs once its records are in the spool (the timer drained them: it made no call since)
    spool = spool_of(out)
    assert kill_points.wait_for(proc, lambda: spool.exists() and kill_points.spooled_events(spool) >= 30)
    os.killpg(proc.pid, getattr(signal, sig))  # as a terminal sends Ctrl-C: to the whole group
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err and "incomplete" in err
    trace = load_capture(out)
    assert len(api_slices(trace, "launch gemm")) == 10 and trace.self_check() == []


def test_a_script_printing_50_mb_blocks_neither_the_service_nor_the_dialog(tmp_path) -> None:
    script = write_script(tmp_path, """\
        line = "x" * 99 + "\\n"
        for _ in range(500_000):
            sys.stdout.write(line)
        print("the end")
        """)
    service = CaptureService(CaptureConfig(output=str(tmp_path / "loud.h5")), [str(script), "3"], output_tail=1 << 16)
    result = service.run()
    assert result.complete, result.reason
    assert service.output is not None
    service.output.thread.join(10)
    assert service.output.total >= 50_000_000 and service.output.text().endswith("the end\n")
    assert len(service.output.data) <= 2 << 16  # the rest was read and dropped


@pytest.mark.parametrize("option", [["--counter-period-ns", "1"], ["--devices", "100000"]])
def test_options_that_would_cost_gigabytes_are_refused_before_anything_runs(tmp_path, capsys, option) -> None:
    script = _never_runs(tmp_path)
    assert main(["profile", str(script), "1", "-o", str(tmp_path / "o.h5"), *option]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and ("at least 1,000" in err or "at most 256" in err)
    assert not (tmp_path / "ran").exists() and not (tmp_path / "o.h5").exists()


def test_a_script_asking_for_100000_devices_gets_an_error_not_gigabytes() -> None:
    from accelview.capture.sim.runtime.simulator import Simulator

    with pytest.raises(ValueError, match="devices is at most 256"):
        Simulator(devices=100_000)
    with pytest.raises(ValueError, match="counter_period_ns is at least"):
        Simulator(counter_period_ns=1)


def test_convert_never_reports_success_for_a_file_it_cannot_read_back(tmp_path, monkeypatch, capsys) -> None:
    import accelview.model.export.chrome as chrome
    from accelview.model.store.writer import write_capture
    from factories import tiny_trace

    src = tmp_path / "t.h5"
    write_capture(tiny_trace(), src)
    monkeypatch.setattr(chrome, "export_chrome", lambda trace, path, **_: path.write_text('{"traceEvents": [{"ph": '))
    out = tmp_path / "t.json"
    assert main(["convert", str(src), str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "was written but does not read back, so it was removed" in err
    assert not out.exists()


def test_a_full_disk_that_cuts_the_spool_inside_the_first_frame_still_converts_that_frame(
        tmp_path, monkeypatch) -> None:
    """The disk fills while a frame is arriving in pieces (a frame bigger than the pipe, or read
    while the child writes it): the spool ends inside it. The service keeps the rest of that one
    frame in memory, so what was written before the disk filled is converted, not lost with it."""
    import accelview.capture.service.runner as runner

    _fill_the_disk_past(monkeypatch, 300_000)
    monkeypatch.setattr(runner, "PIPE_BYTES", 1 << 16)  # each ~0.9 MB frame arrives in 64 KiB pieces
    out = tmp_path / "cut.h5"
    config = CaptureConfig(output=str(out), flush_events=4000, flush_ms=60_000)  # drains by calls only
    result = CaptureService(config, [str(write_script(tmp_path, LOOP)), "0"]).run()
    assert result.reason.startswith("the disk is full (No space left on device; what arrived after that is lost)")
    trace = load_capture(out)
    assert trace.self_check() == [] and len(api_slices(trace, "launch elementwise")) > 1000
    assert not spool_of(out).exists()


class _TightFile:
    """A spool's file on a disk with ``room`` bytes left: a raw write takes what fits (a short
    write), the next one fails with ENOSPC, as a file system filling up does."""

    def __init__(self, file, room: int) -> None:
        self.file, self.room = file, room

    def write(self, data) -> int:
        import errno

        if not self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = self.file.write(data[:self.room])
        self.room -= n
        return n

    def __getattr__(self, name: str):
        return getattr(self.file, name)


@pytest.mark.parametrize("room", [3, 1_850, 2_000, 2_200, 4_341, 30_000, -5, 0])
def test_the_frame_a_full_disk_cuts_is_completed_from_what_arrives_after(tmp_path, room) -> None:
    """Wherever the disk fills (inside a header, a JSON part, a payload, between two frames, at
    the stream's end), the spool plus the rest of the frame it ends inside converts every frame
    that began before the disk filled, whole, and none after it."""
    from accelview.capture.service.spool import CutFrame, Spool, replay

    frames = _session_frames()
    stream = b"".join(frames)
    room = room if room > 0 else len(stream) + room
    spool = Spool(tmp_path / "s.spool")
    spool.file = _TightFile(spool.file, room)
    reader, cut = wire.FrameReader(columns=False), None
    for i in range(0, len(stream), 7_000):  # the pipe's pieces, each fed as the service does
        data = stream[i:i + 7_000]
        if cut is None:
            before, begun = spool.size, reader.pending
            try:
                spool.write(data)
            except OSError:
                cut = CutFrame(spool, before - begun, 1 << 20)
                cut.add(data[spool.size - before:])
        else:
            cut.add(data)
        list(reader.feed(data))
    assert spool.size == min(room, len(stream)) == spool.path.stat().st_size
    got: list[bytes] = []
    sink = type("Sink", (), {"handle": lambda self, kind, meta, cols: got.append(kind)})()
    replay(spool, sink, tail=cut.tail if cut else b"")
    starts = [sum(map(len, frames[:i])) for i in range(len(frames))]
    assert got == [f[:4] for f, at in zip(frames, starts, strict=True) if at < spool.size]


def _fill_the_disk_past(monkeypatch, size: int) -> None:
    """Spool writes fail with ENOSPC once the spool holds more than ``size`` bytes."""
    import errno

    import accelview.capture.service.runner as runner

    write = runner.Spool.write

    def full(self, data: bytes) -> None:
        if self.size > size:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write(self, data)

    monkeypatch.setattr(runner.Spool, "write", full)
